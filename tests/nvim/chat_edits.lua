-- Drives claude-context's chat through Neovim's own LSP client (headless, default config), as
-- a user of the README's setup would: opens a file, starts the server with vim.lsp.start,
-- allows every permission prompt, sends the messages of $CC_MESSAGES (one per line) in one
-- session, each after the previous turn's `done`, and writes what happened to $CC_OUT as JSON:
-- the buffer's text, every chat/event, the errors seen.
-- Run by tests/e2e/editor_sync.rs: nvim --headless -c 'luafile tests/nvim/chat_edits.lua'.
local server = assert(os.getenv('CC_SERVER'))
local root = assert(os.getenv('CC_ROOT'))
local file = assert(os.getenv('CC_FILE'))
local out = assert(os.getenv('CC_OUT'))
local messages = vim.split(assert(os.getenv('CC_MESSAGES')), '\n', { trimempty = true })

local result = { events = {}, errors = {}, turns = 0 }

local function finish()
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  result.buffer = table.concat(lines, '\n') .. '\n'
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qa!')
end

local function fail(msg)
  table.insert(result.errors, msg)
  finish()
end

vim.cmd.edit(vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local done = 0
local client_id = vim.lsp.start({
  name = 'claude_context',
  cmd = { server, 'lsp' },
  root_dir = root,
  handlers = {
    ['chat/permission'] = function()
      return { decision = 'allow' }
    end,
    ['chat/event'] = function(_, params)
      table.insert(result.events, params)
      if params.kind == 'done' then
        done = done + 1
      end
    end,
  },
})
if not client_id then
  return fail('vim.lsp.start failed')
end
local ok = vim.wait(20000, function()
  local c = vim.lsp.get_client_by_id(client_id)
  return c ~= nil and c.initialized and vim.lsp.buf_is_attached(buf, client_id)
end, 20)
if not ok then
  return fail('the server did not initialise')
end
local client = assert(vim.lsp.get_client_by_id(client_id))

local session
client:request('chat/new', vim.empty_dict(), function(err, res)
  if err then
    return fail('chat/new: ' .. vim.inspect(err))
  end
  session = res.sessionId
end, buf)
if not vim.wait(20000, function() return session ~= nil end, 20) then
  return fail('no answer to chat/new')
end

for i, text in ipairs(messages) do
  client:request('chat/send', { sessionId = session, text = text }, function(err)
    if err then
      fail('chat/send: ' .. vim.inspect(err))
    end
  end, buf)
  if not vim.wait(30000, function() return done >= i end, 20) then
    return fail('turn ' .. i .. ' did not end')
  end
  result.turns = i
  -- Neovim reports buffer changes 150 ms after them (debounce_text_changes): let them go out
  -- before the next message.
  vim.wait(400)
end
finish()
