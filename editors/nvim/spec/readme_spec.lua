-- A new user with a clean config follows the README's Neovim section: exactly its init.lua
-- snippet, the repository in ~/src/claude-context, the server on PATH. A second Neovim (the
-- user's) opens a file and gets the float, the statusline and a chat turn.
local H = require("helpers")

--- The README's by-hand snippet, verbatim.
local function snippet()
  local readme = H.read(H.repo .. "/README.md")
  local section = readme:match("\n### Neovim\n(.-)\n##? ")
  assert(section, "no Neovim section in the README")
  for block in section:gmatch("```lua\n(.-)```") do
    if block:find("runtimepath:append", 1, true) then
      return block
    end
  end
  error("no init.lua snippet in the README's Neovim section")
end

describe("the README's Neovim section", function()
  it("gives a clean config the float, the statusline and a chat turn", function()
    local code = snippet()
    assert.matches('require("claude_context").setup()', code, 1, true)
    local home = H.tmpdir()
    -- The repository where the README says, the server where `cargo install` puts it.
    vim.fn.mkdir(home .. "/src", "p")
    assert(vim.uv.fs_symlink(H.repo, home .. "/src/claude-context"))
    vim.fn.mkdir(home .. "/.cargo/bin", "p")
    assert(vim.uv.fs_symlink(H.bin, home .. "/.cargo/bin/claude-context"))
    H.write(home .. "/.config/nvim/init.lua", code)
    local root = H.project({
      ["CLAUDE.md"] = "# Shop\n",
      [".claude/rules/ts.md"] = "---\npaths: src/**/*.ts\n---\nStrict mode.\n",
      ["src/cart.ts"] = "export const cart = 1;\n",
    })
    local fake = H.fake({ { text = "Hello from the README test." } })
    local out = home .. "/result.json"
    -- What the user does, written as a script their Neovim runs after its startup.
    H.write(
      home .. "/driver.lua",
      ([=[
local out = %q
local result = {}
local function wait(ms, cond) return vim.wait(ms, function() local ok, v = pcall(cond) return ok and v end, 20) end
local ok, err = pcall(function()
  result.attached = wait(20000, function()
    local c = vim.lsp.get_clients({ name = "claude_context", bufnr = 0 })[1]
    return c and c.initialized
  end)
  vim.cmd("ClaudeContext")
  result.float = wait(20000, function()
    local st = require("claude_context.preview").state()
    return st and st.result
  end) and table.concat(vim.api.nvim_buf_get_lines(require("claude_context.preview").state().buf, 0, -1, false), "\n")
  require("claude_context.preview").close()
  wait(10000, function() return require("claude_context").status() ~= "" and not require("claude_context").status():find("…") end)
  result.statusline = vim.api.nvim_eval_statusline(vim.o.statusline, {}).str
  vim.cmd("ClaudeChat Say hello")
  local chat
  result.chat_done = wait(30000, function()
    chat = require("claude_context.chat").get()
    return chat and chat.session and not chat.turn and not chat.sending
      and table.concat(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false), "\n"):find("Hello from the README test.", 1, true)
  end) and true or false
  chat = require("claude_context.chat").get()
  result.transcript = chat and table.concat(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false), "\n")
end)
result.error = not ok and tostring(err) or nil
local f = io.open(out, "w") f:write(vim.json.encode(result)) f:close()
vim.cmd("qa!")
]=]):format(out)
    )
    local env = {
      HOME = home,
      PATH = home .. "/.cargo/bin:/usr/local/bin:/usr/bin:/bin",
      TMPDIR = os.getenv("TMPDIR") or "/tmp",
      ANTHROPIC_API_KEY = "sk-ant-readme-fake",
      ANTHROPIC_BASE_URL = fake.url,
      CLAUDE_CONTEXT_AUTO_MEMORY = "0",
    }
    local r = vim
      .system({
        vim.v.progpath,
        "--headless",
        root .. "/src/cart.ts",
        "-c",
        "luafile " .. home .. "/driver.lua",
      }, { env = env, clear_env = true, text = true, cwd = root })
      :wait(90000)
    fake:stop()
    local f = io.open(out)
    assert(
      f,
      "the user's Neovim wrote no result (exit " .. tostring(r.code) .. "): " .. (r.stderr or "") .. (r.stdout or "")
    )
    local result = vim.json.decode(f:read("*a"))
    f:close()
    assert.is_nil(result.error)
    assert.is_true(result.attached)
    assert.matches("attached%s+%d+%s+%.claude/rules/ts%.md", result.float)
    assert.matches("%f %m %= ", code, 1, true)
    assert.matches("✻ ≈[%d.]+k?/1M [%d.]+%%", result.statusline)
    assert.is_true(result.chat_done, result.transcript)
    assert.matches("## You\n\nSay hello", result.transcript, 1, true)
  end)
end)
