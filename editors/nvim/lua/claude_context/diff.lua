--- Diff review of an `Edit` or `Write` before it is allowed: a tab with the file as it is (left,
--- the buffer's text when it is loaded, unsaved changes included, else the disk) and as the edit
--- would leave it (right), with Neovim's `diff` highlighting and keys to answer. Small edits keep
--- the compact question (`chat.diff_min_lines`). What the right side shows is computed here from
--- the tool's input exactly as the server applies it (the first occurrence, or all of them with
--- `replace_all`); when it cannot be (the text to replace is not there), the compact question asks
--- instead and the server reports the failure as it always does.

local util = require("claude_context.util")

local M = {}

---@class claude_context.Proposal
---@field path string
---@field current string[]
---@field proposed string[]
---@field new_file boolean

--- The text of `path` as the edit will see it: its loaded buffer, else the file on disk.
---@param path string
---@return string[]? lines nil when the file does not exist
local function current_lines(path)
  local buf = vim.fn.bufnr(path)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  -- Bounded: a review of a file over 4 MiB is left to the compact question.
  local text = f:read(4 * 1024 * 1024 + 1)
  f:close()
  if text == nil then
    return {}
  end
  if #text > 4 * 1024 * 1024 then
    return nil
  end
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  return lines
end

--- Plain (not pattern) replacement of the first or every occurrence.
---@param text string
---@param old string
---@param new string
---@param all boolean
---@return string? nil when `old` is not in `text`
local function replace(text, old, new, all)
  local out, from, found = {}, 1, false
  while true do
    local s, e = text:find(old, from, true)
    if not s then
      break
    end
    found = true
    out[#out + 1] = text:sub(from, s - 1)
    out[#out + 1] = new
    from = e + 1
    if not all then
      break
    end
  end
  if not found then
    return nil
  end
  out[#out + 1] = text:sub(from)
  return table.concat(out)
end

--- What the edit of a `chat/permission` would change, or nil when it is not an edit, is small, or
--- cannot be shown faithfully.
---@param params table
---@param min_lines integer edits touching fewer lines keep the compact question
---@return claude_context.Proposal?
function M.proposal(params, min_lines)
  local input = type(params.input) == "table" and params.input or nil
  if not input or type(input.file_path) ~= "string" or input.file_path == "" then
    return nil
  end
  local path = input.file_path
  local cur = current_lines(path)
  local proposed, touched
  if params.tool == "Edit" and type(input.old_string) == "string" and type(input.new_string) == "string" then
    if not cur or input.old_string == "" then
      return nil
    end
    local text = replace(table.concat(cur, "\n"), input.old_string, input.new_string, input.replace_all == true)
    if not text then
      return nil
    end
    proposed = vim.split(text, "\n", { plain = true })
    touched = math.max(#util.lines(input.old_string), #util.lines(input.new_string))
  elseif params.tool == "Write" and type(input.content) == "string" then
    proposed = vim.split(input.content, "\n", { plain = true })
    if proposed[#proposed] == "" then
      proposed[#proposed] = nil
    end
    touched = math.max(#proposed, cur and #cur or 0)
  else
    return nil
  end
  if touched < min_lines then
    return nil
  end
  return { path = path, current = cur or {}, proposed = proposed, new_file = cur == nil }
end

--- A scratch buffer holding `lines`, named `name`, with the file type of `path`.
---@param lines string[]
---@param name string
---@param path string
---@return integer buf
local function scratch(lines, name, path)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  local ft = vim.filetype.match({ filename = path, buf = buf })
  if ft then
    vim.bo[buf].filetype = ft
  end
  return buf
end

---@class claude_context.DiffChoice
---@field decision string
---@field label string
---@field key string

--- Opens the review in a new tab and returns its windows (the right one has the focus). `pick`
--- is called with the decision of the key pressed; closing the tab otherwise denies (the caller
--- watches the windows).
---@param proposal claude_context.Proposal
---@param choices { decision: string, label: string }[]
---@param title string
---@param pick fun(decision: string)
---@return integer[] wins
function M.open(proposal, choices, title, pick)
  local rel = util.display_path(proposal.path, vim.fn.getcwd())
  local keyed = {} ---@type claude_context.DiffChoice[]
  local keys = { allow = "a", allowSession = "s", deny = "r" }
  for _, c in ipairs(choices) do
    keyed[#keyed + 1] = { decision = c.decision, label = c.label, key = keys[c.decision] or "r" }
  end
  vim.cmd("tabnew")
  local left_win = vim.api.nvim_get_current_win()
  local empty = vim.api.nvim_get_current_buf()
  local left = scratch(proposal.current, "claude-context://current/" .. rel, proposal.path)
  vim.api.nvim_win_set_buf(left_win, left)
  if empty ~= left and vim.api.nvim_buf_is_valid(empty) then
    pcall(vim.api.nvim_buf_delete, empty, { force = true })
  end
  vim.cmd("rightbelow vsplit")
  local right_win = vim.api.nvim_get_current_win()
  local right = scratch(proposal.proposed, "claude-context://proposed/" .. rel, proposal.path)
  vim.api.nvim_win_set_buf(right_win, right)
  for _, win in ipairs({ left_win, right_win }) do
    vim.api.nvim_win_call(win, function()
      vim.cmd("diffthis")
    end)
    vim.wo[win].foldlevel = 99
  end
  local help = {}
  for _, c in ipairs(keyed) do
    help[#help + 1] = ("%s %s"):format(c.decision == "deny" and "r/q" or c.key, c.label)
  end
  local bar = function(s)
    return (s:gsub("%%", "%%%%"))
  end
  vim.wo[left_win].winbar = bar(("%s · as it is%s"):format(rel, proposal.new_file and " (a new file)" or ""))
  vim.wo[right_win].winbar =
    bar(("%s · %s · %s"):format(util.one_line(title), "as the edit leaves it", table.concat(help, " · ")))
  for _, buf in ipairs({ left, right }) do
    for _, c in ipairs(keyed) do
      vim.keymap.set("n", c.key, function()
        pick(c.decision)
      end, { buffer = buf, nowait = true, desc = "claude-context: " .. c.label })
    end
    vim.keymap.set("n", "q", function()
      pick("deny")
    end, { buffer = buf, nowait = true, desc = "claude-context: deny" })
  end
  return { left_win, right_win }
end

return M
