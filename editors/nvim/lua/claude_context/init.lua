--- claude-context for Neovim: the exact context of the next request, and the chat.
---
--- `setup()` only records the options and one autocommand: `vim.lsp` (about 7 ms to load) and
--- the rest of the plugin load when the first file buffer opens, or at once when `vim.lsp` is
--- already loaded. The server's configuration is `lsp/claude_context.lua` (built from these
--- options), so `vim.lsp.config("claude_context", {...})` calls of your own take precedence.

local M = {}

local NAME = "claude_context"
local enabled = false
local group ---@type integer?

--- Enables the configuration and attaches the file buffers already open. Runs once.
local function enable()
  if enabled then
    return
  end
  enabled = true
  if group then
    pcall(vim.api.nvim_del_augroup_by_id, group)
    group = nil
  end
  require("claude_context.lsp").enable()
end

--- Configures and enables the language server for every file buffer of a project.
---@param opts? claude_context.Options
function M.setup(opts)
  local config = require("claude_context.config")
  local options, problems = config.resolve(opts)
  local first = config.options == config.defaults and not enabled
  config.options = options
  if #problems > 0 then
    vim.schedule(function()
      vim.notify("claude-context: " .. table.concat(problems, "; "), vim.log.levels.WARN)
    end)
  end
  if enabled then
    -- Called again: new clients get the new configuration, running ones the new settings.
    require("claude_context.lsp").reconfigure()
    return
  end
  if package.loaded["vim.lsp"] then
    enable()
    return
  end
  if first or not group then
    group = vim.api.nvim_create_augroup("claude_context.setup", { clear = true })
    vim.api.nvim_create_autocmd({ "FileType", "BufReadPost", "BufNewFile" }, {
      group = group,
      callback = function(args)
        if vim.bo[args.buf].buftype == "" and vim.api.nvim_buf_get_name(args.buf) ~= "" then
          enable()
        end
      end,
    })
  end
end

--- The statusline component: tokens of the next request against the window for the current
--- buffer (`≈` while it is an estimate), the chat session's real figures once the model
--- answered, and `N pending` when instruction edits are waiting. Reads a cache: no request.
---@return string
function M.status()
  local status = package.loaded["claude_context.status"]
  return status and status.text() or ""
end

--- The figures behind `status()`, for a statusline of your own (nil when the current buffer has
--- no server).
---@return claude_context.StatusInfo?
function M.status_info()
  local status = package.loaded["claude_context.status"]
  return status and status.info() or nil
end

--- Opens the context float for the current buffer (`:ClaudeContext`).
function M.preview()
  enable()
  require("claude_context.preview").open()
end

--- Opens or focuses the chat (`:ClaudeChat`); with `text`, sends it.
---@param text? string
function M.chat(text)
  enable()
  require("claude_context.chat").open({ text = text })
end

M.name = NAME

--- For `:ClaudeContext` and the tests: makes sure the configuration is enabled.
M._enable = enable

return M
