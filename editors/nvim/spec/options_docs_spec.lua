-- The options are written down in two places besides the code: `:h claude-context-options` and
-- the setup() block of the manual's Neovim page (docs/manual/neovim.md). The plugin's defaults
-- (lua/claude_context/config.lua) are the one source; these specs fail when either page names an
-- option the plugin does not have, leaves one out, or gives a default that is not the plugin's.
local H = require("helpers")
local config = require("claude_context.config")

--- The manual's `require("claude_context").setup({...})` block, run with a `require` that only
--- records what `setup()` was given.
---@return table
local function manual_options()
  local page = H.read(H.repo .. "/docs/manual/neovim.md")
  for block in page:gmatch("```lua\n(.-)```") do
    if block:find('^require%("claude_context"%)%.setup%(%{') then
      local given
      local plugin = {
        setup = function(options)
          given = options
        end,
      }
      local chunk = assert(load(block, "docs/manual/neovim.md", "t", {
        require = function(name)
          assert(name == "claude_context", "the block requires " .. name)
          return plugin
        end,
      }))
      chunk()
      return given
    end
  end
  error('no require("claude_context").setup({ block in docs/manual/neovim.md')
end

--- The help file's text for each option of `*claude-context-options*`: an option starts a line
--- indented four spaces (`    chat          ...`); its description runs until the next one.
---@return table<string, string>
local function help_entries()
  local help = H.read(H.plugin .. "/doc/claude-context.txt")
  local section = help:match("%*claude%-context%-options%*\n(.-)\n=====")
  assert(section, "no *claude-context-options* section in the help file")
  local entries, current = {}, nil
  for line in (section .. "\n"):gmatch("(.-)\n") do
    local name, rest = line:match("^    ([%w_]+)%s+(.*)$")
    if name then
      current = name
      entries[current] = rest
    elseif current then
      entries[current] = entries[current] .. " " .. vim.trim(line)
    end
  end
  return entries
end

--- How the help file writes a default: strings quoted, numbers and booleans as Lua prints them.
local function written(value)
  return type(value) == "string" and ('"' .. value .. '"') or tostring(value)
end

describe("the options' documentation", function()
  it("the manual's setup() block is exactly the plugin's defaults", function()
    assert.are.same(config.defaults, manual_options())
  end)

  it("the help file describes every option with the plugin's default", function()
    local entries = help_entries()
    local documented = vim.tbl_keys(entries)
    table.sort(documented)
    local options = vim.tbl_keys(config.defaults)
    table.sort(options)
    assert.are.same(options, documented)
    for name, value in pairs(config.defaults) do
      local text = entries[name]
      if type(value) ~= "table" then
        assert.truthy(
          text:find(written(value), 1, true),
          name .. ": the help does not say its default " .. written(value)
        )
      elseif vim.islist(value) then
        for _, item in ipairs(value) do
          assert.truthy(text:find(written(item), 1, true), name .. ": the help does not list " .. written(item))
        end
      else
        for key, default in pairs(value) do
          if key == "keymaps" then
            assert.truthy(text:find("`keymaps`", 1, true), name .. ".keymaps is not in the help")
          else
            assert.truthy(text:find("`" .. key .. "`", 1, true), name .. "." .. key .. " is not in the help")
            assert.truthy(
              text:find(tostring(default), 1, true),
              name .. "." .. key .. ": the help does not say its default " .. tostring(default)
            )
          end
        end
      end
    end
  end)

  it("the help file names every chat key with its default", function()
    local help = H.read(H.plugin .. "/doc/claude-context.txt")
    local keys = help:match("%*claude%-context%-chat%-keys%*\n(.-)\n%s*%*")
    assert(keys, "no *claude-context-chat-keys* section in the help file")
    for action, key in pairs(config.defaults.chat.keymaps) do
      assert.truthy(keys:find("`" .. action .. "`", 1, true), "chat.keymaps." .. action .. " is not in the help")
      assert.truthy(keys:find("`" .. key .. "`", 1, true), "the help does not give " .. key .. " as a chat key")
    end
  end)
end)
