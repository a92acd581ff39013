--- The user commands' bodies (`plugin/claude_context.lua` only defines them).

local M = {}

local function enable()
  require("claude_context")._enable()
end

---@param args table
function M.context(args)
  enable()
  local sub = vim.trim(args.args or "")
  if sub == "restart" then
    require("claude_context.lsp").restart()
  elseif sub == "new" then
    require("claude_context.preview").open({ session = false })
  elseif sub == "" then
    require("claude_context.preview").open()
  else
    require("claude_context.util").notify(("unknown argument %q (restart, new)"):format(sub), vim.log.levels.WARN)
  end
end

---@param args table
function M.chat(args)
  enable()
  local opts = { text = args.args }
  if args.range and args.range > 0 then
    local buf = vim.api.nvim_get_current_buf()
    local path = require("claude_context.lsp").buf_path(buf)
    if path then
      opts.selection = {
        path = path,
        first = args.line1,
        last = args.line2,
        lines = vim.api.nvim_buf_get_lines(buf, args.line1 - 1, args.line2, false),
        filetype = vim.bo[buf].filetype,
      }
    end
  end
  require("claude_context.chat").open(opts)
end

function M.cancel()
  enable()
  require("claude_context.chat").cancel()
end

function M.new()
  enable()
  require("claude_context.chat").new()
end

function M.sessions()
  enable()
  require("claude_context.chat").sessions()
end

---@param args table
function M.mode(args)
  enable()
  require("claude_context.chat").mode_command(args.args)
end

---@param args table
function M.style(args)
  enable()
  require("claude_context.chat").style_command(args.args)
end

---@param args table
function M.compact(args)
  enable()
  require("claude_context.compact").command(args)
end

return M
