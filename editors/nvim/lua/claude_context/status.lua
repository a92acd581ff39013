--- The statusline component. `text()` reads a per-buffer cache and never sends a request; the
--- cache is filled when a buffer attaches or is entered, after `context/changed` (current buffer
--- first, the others when entered), and from the chat's `usage` events (the API's own figures).

local util = require("claude_context.util")

local M = {}

---@class claude_context.StatusInfo
---@field state "starting"|"ready"|"stopped"
---@field tokens integer? tokens of the next request
---@field window integer? the model's window
---@field percent number? tokens / window, in percent
---@field threshold integer? where automatic compaction starts
---@field estimated boolean the figures are an estimate (no answer from the model yet)
---@field pending integer instruction files edited and not yet seen by the session (or unsaved)
---@field session string? the chat session the figures are for
---@field mode string? the chat's permission mode

---@class claude_context.StatusEntry
---@field client_id integer
---@field tokens integer?
---@field window integer?
---@field percent number?
---@field threshold integer?
---@field estimated boolean
---@field pending integer
---@field session string?
---@field stale boolean

local by_buf = {} ---@type table<integer, claude_context.StatusEntry>
local in_flight = {} ---@type table<integer, boolean>
local stopped_roots = {} ---@type table<string, boolean>
local group ---@type integer?

local function redraw()
  vim.schedule(function()
    pcall(vim.cmd, "redrawstatus")
  end)
end

---@param client_id integer
---@return string?
local function session_of(client_id)
  local chat = package.loaded["claude_context.chat"]
  return chat and chat.session_of_client(client_id) or nil
end

--- Asks the server for the preview of `buf` (no-op while one is on its way).
---@param buf integer
function M.refresh(buf)
  if in_flight[buf] or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local client = vim.lsp.get_clients({ bufnr = buf, name = require("claude_context.lsp").NAME })[1]
  if not client or client:is_stopped() then
    return
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  local session = session_of(client.id)
  if session then
    params.sessionId = session
  end
  in_flight[buf] = true
  local ok = client:request("context/preview", params, function(err, result)
    in_flight[buf] = nil
    if err or type(result) ~= "table" then
      return
    end
    M.store(buf, client.id, result)
  end, buf)
  if not ok then
    in_flight[buf] = nil
  end
end

--- Keeps the figures of a preview result for `buf`.
---@param buf integer
---@param client_id integer
---@param result table a `context/preview` result
function M.store(buf, client_id, result)
  local t = result.totals or {}
  local s = type(result.session) == "table" and result.session or nil
  local entry = {
    client_id = client_id,
    tokens = t.tokens,
    window = t.window,
    percent = t.percent,
    threshold = t.autoCompactThreshold,
    estimated = s == nil or s.estimated == true,
    pending = type(result.pending) == "table" and #result.pending or 0,
    session = s and s.sessionId or nil,
    stale = false,
  }
  local old = by_buf[buf]
  by_buf[buf] = entry
  if
    not old
    or old.tokens ~= entry.tokens
    or old.pending ~= entry.pending
    or old.estimated ~= entry.estimated
    or old.window ~= entry.window
  then
    redraw()
  end
end

--- The API's figures for a session, from a `usage` event: every buffer of that server shows them.
---@param client_id integer
---@param session string
---@param usage table the `usage` event
function M.usage(client_id, session, usage)
  for _, e in pairs(by_buf) do
    if e.client_id == client_id then
      e.tokens = usage.contextTokens
      e.window = usage.window
      e.percent = usage.percent
      e.estimated = false
      e.session = session
    end
  end
  redraw()
end

--- Marks buffers stale (nil: all); they are asked again when shown.
---@param uris table<string, boolean>?
function M.invalidate(uris)
  for buf, e in pairs(by_buf) do
    if not uris or (vim.api.nvim_buf_is_valid(buf) and uris[vim.uri_from_bufnr(buf)]) then
      e.stale = true
    end
  end
end

function M.refresh_current()
  local buf = vim.api.nvim_get_current_buf()
  local e = by_buf[buf]
  if not e or e.stale then
    M.refresh(buf)
  end
  -- A chat buffer shows its project's figures: refresh the buffers of that server too.
end

---@param client vim.lsp.Client
---@param buf integer
function M.on_attach(client, buf)
  stopped_roots[client.root_dir or ""] = nil
  if not group then
    group = vim.api.nvim_create_augroup("claude_context.status", { clear = true })
    vim.api.nvim_create_autocmd("BufEnter", {
      group = group,
      callback = function(args)
        local e = by_buf[args.buf]
        if not e or e.stale then
          M.refresh(args.buf)
        end
      end,
    })
    vim.api.nvim_create_autocmd({ "BufWipeout", "LspDetach" }, {
      group = group,
      callback = function(args)
        by_buf[args.buf] = nil
        in_flight[args.buf] = nil
      end,
    })
  end
  M.refresh(buf)
end

---@param root string?
function M.on_server_exit(root)
  stopped_roots[root or ""] = true
  redraw()
end

--- The figures for the current buffer.
---@return claude_context.StatusInfo?
function M.info()
  local buf = vim.api.nvim_get_current_buf()
  local e = by_buf[buf]
  if not e then
    local chat = package.loaded["claude_context.chat"]
    local id = chat and chat.client_id_of_buffer(buf)
    if id then
      for _, other in pairs(by_buf) do
        if other.client_id == id then
          e = other
          break
        end
      end
    end
  end
  if not e then
    local path = require("claude_context.lsp").buf_path(buf)
    if path then
      for root in pairs(stopped_roots) do
        if root ~= "" and util.under(path, root) then
          return { state = "stopped", estimated = true, pending = 0 }
        end
      end
    end
    return nil
  end
  local client = vim.lsp.get_client_by_id(e.client_id)
  local state = (not client or client:is_stopped()) and "stopped" or "ready"
  local chat = package.loaded["claude_context.chat"]
  return {
    state = state,
    tokens = e.tokens,
    window = e.window,
    percent = e.percent,
    threshold = e.threshold,
    estimated = e.estimated,
    pending = e.pending,
    session = e.session,
    mode = chat and chat.mode_of_client(e.client_id) or nil,
  }
end

--- `✻ ≈1.1k/1M 0.1%`, `✻ 12k/200k 6.1% · 2 pending`, `✻ 12k/200k 6.1% · plan`, `✻ stopped`
--- (the chat's permission mode when it is not `default`).
---@return string
function M.text()
  local i = M.info()
  if not i then
    return ""
  end
  local prefix = require("claude_context.config").options.status.prefix or ""
  if i.state == "stopped" then
    return prefix .. "stopped"
  end
  if not i.tokens then
    return prefix .. "…"
  end
  local s = ("%s%s%s/%s %s%%"):format(
    prefix,
    i.estimated and "≈" or "",
    util.short(i.tokens),
    util.short(i.window),
    i.percent and (("%.1f"):format(i.percent)) or "?"
  )
  if i.pending > 0 then
    s = s .. (" · %d pending"):format(i.pending)
  end
  if i.mode and i.mode ~= "default" then
    s = s .. " · " .. i.mode
  end
  return s
end

return M
