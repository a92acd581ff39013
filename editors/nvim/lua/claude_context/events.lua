--- What follows the server's news: a buffer attached (statusline figures, code lens), and
--- `context/changed` (the open float, the statusline, the code lenses refreshed).

local M = {}

local uv = vim.uv or vim.loop

---@param client vim.lsp.Client
---@param buf integer
local function codelens(client, buf)
  if not require("claude_context.config").options.codelens then
    return
  end
  if not client.server_capabilities or not client.server_capabilities.codeLensProvider then
    return
  end
  if not M.is_markdown(buf) then
    return
  end
  pcall(vim.lsp.codelens.refresh, { bufnr = buf })
end

--- Instruction files are Markdown (the server's lenses are only for them).
---@param buf integer
---@return boolean
function M.is_markdown(buf)
  return vim.bo[buf].filetype == "markdown" or vim.api.nvim_buf_get_name(buf):match("%.md$") ~= nil
end

local lens_group ---@type integer?

---@param client vim.lsp.Client
---@param buf integer
function M.on_attach(client, buf)
  require("claude_context.status").on_attach(client, buf)
  if M.is_markdown(buf) and require("claude_context.config").options.codelens then
    lens_group = lens_group or vim.api.nvim_create_augroup("claude_context.codelens", { clear = true })
    vim.api.nvim_clear_autocmds({ group = lens_group, buffer = buf })
    vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave" }, {
      group = lens_group,
      buffer = buf,
      callback = function()
        local c = vim.lsp.get_client_by_id(client.id)
        if c then
          codelens(c, buf)
        end
      end,
    })
    codelens(client, buf)
  end
end

local pending_timer ---@type uv.uv_timer_t?
local pending = { all = false, uris = {} } ---@type { all: boolean, uris: table<string, boolean> }
local pending_clients = {} ---@type table<integer, boolean>

--- The refresh after a burst of `context/changed`: one per 60 ms at most.
local function refresh()
  local all, uris, clients = pending.all, pending.uris, pending_clients
  pending = { all = false, uris = {} }
  pending_clients = {}
  require("claude_context.status").invalidate(all and nil or uris)
  require("claude_context.status").refresh_current()
  local preview = package.loaded["claude_context.preview"]
  if preview then
    preview.on_changed()
  end
  for id in pairs(clients) do
    local c = vim.lsp.get_client_by_id(id)
    if c then
      for buf in pairs(c.attached_buffers or {}) do
        if vim.api.nvim_buf_is_loaded(buf) and vim.fn.bufwinid(buf) ~= -1 then
          codelens(c, buf)
        end
      end
    end
  end
end

---@param params { uris?: string[] }?
---@param ctx lsp.HandlerContext
function M.context_changed(params, ctx)
  if params and type(params.uris) == "table" then
    for _, u in ipairs(params.uris) do
      pending.uris[u] = true
    end
  else
    pending.all = true
  end
  pending_clients[ctx.client_id] = true
  if pending_timer then
    return
  end
  pending_timer = assert(uv.new_timer())
  pending_timer:start(
    60,
    0,
    vim.schedule_wrap(function()
      if pending_timer then
        pending_timer:close()
        pending_timer = nil
      end
      require("claude_context.util").safe("refresh after context/changed", refresh)
    end)
  )
end

return M
