-- A plain Neovim 0.11 setup without the plugin ($CC_SNIPPET: vim.lsp.config and vim.lsp.enable,
-- no filetypes): the server must attach to a file of any type and follow an instruction file
-- another program edits, although Neovim 0.11 on Linux registers no file watchers. Writes to
-- $CC_OUT: the file type, whether the client attached, the instructions block before and after.
-- Run by tests/e2e/editor_sync.rs: nvim --headless -c 'luafile tests/nvim/plain_setup.lua'.
local snippet = assert(os.getenv('CC_SNIPPET'))
local file = assert(os.getenv('CC_FILE'))
local claude_md = assert(os.getenv('CC_CLAUDE_MD'))
local out = assert(os.getenv('CC_OUT'))
local result = { errors = {} }

local function finish()
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qa!')
end

local function fail(msg)
  table.insert(result.errors, msg)
  finish()
end

-- The server logs when its watches are in place: a write before that could be missed.
local watching = false
local log = vim.lsp.handlers['window/logMessage']
vim.lsp.handlers['window/logMessage'] = function(err, res, ctx)
  if res and res.message and res.message:find('watching', 1, true) then
    watching = true
  end
  return log(err, res, ctx)
end

assert(load(snippet))()
vim.cmd.edit(vim.fn.fnameescape(file))
result.filetype = vim.bo.filetype
local client
local attached = vim.wait(20000, function()
  client = vim.lsp.get_clients({ bufnr = 0, name = 'claude_context' })[1]
  return client ~= nil and client.initialized
end, 20)
result.attached = attached
if not attached then
  return fail('the client did not attach to a ' .. result.filetype .. ' file')
end

local function instructions()
  local r = client:request_sync('context/preview', vim.empty_dict(), 5000, 0)
  if not r or r.err then
    return nil
  end
  for _, b in ipairs(r.result.blocks or {}) do
    if b.kind == 'instructions' then
      return b.text
    end
  end
  return ''
end

result.before = instructions()
result.watching = vim.wait(10000, function() return watching end, 20)
local f = assert(io.open(claude_md, 'a'))
f:write('Edited by another program.\n')
f:close()
local t0 = vim.uv.hrtime()
local followed = vim.wait(10000, function()
  local t = instructions()
  result.after = t
  return t ~= nil and t:find('Edited by another program.', 1, true) ~= nil
end, 50)
result.followed = followed
result.followed_ms = (vim.uv.hrtime() - t0) / 1e6
finish()
