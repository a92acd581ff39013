-- Shared by the specs: temp projects (real git repositories), the real release server, the fake
-- Anthropic API program (`fake-anthropic`, see docs/fake-anthropic.md) and waiting helpers.
local H = {}

local uv = vim.uv or vim.loop

H.plugin =
  vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p"))))
H.repo = vim.fs.dirname(vim.fs.dirname(H.plugin))
H.bin = os.getenv("CLAUDE_CONTEXT_BIN") or (H.repo .. "/target/release/claude-context")
H.fake_bin = os.getenv("FAKE_ANTHROPIC_BIN") or (H.repo .. "/target/release/fake-anthropic")

--- Waits for `cond` (processing events meanwhile); fails the test with `what` on timeout.
---@param ms integer
---@param cond fun(): any
---@param what string|fun(): string
function H.wait(ms, cond, what)
  local ok = vim.wait(ms, function()
    local good, v = pcall(cond)
    return good and v
  end, 10)
  if not ok then
    error("timed out after " .. ms .. " ms waiting for " .. (type(what) == "function" and what() or what), 2)
  end
end

--- A fresh folder (real path).
---@return string
function H.tmpdir()
  local d = vim.fn.tempname()
  vim.fn.mkdir(d, "p")
  return uv.fs_realpath(d)
end

---@param path string
---@param text string
function H.write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

---@param path string
---@return string
function H.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

---@param dir string
---@param ... string
---@return string stdout
function H.git(dir, ...)
  local r = vim
    .system({ "git", "-C", dir, ... }, {
      text = true,
      env = {
        GIT_AUTHOR_NAME = "Spec",
        GIT_AUTHOR_EMAIL = "spec@example.com",
        GIT_COMMITTER_NAME = "Spec",
        GIT_COMMITTER_EMAIL = "spec@example.com",
      },
    })
    :wait()
  assert(r.code == 0, "git " .. table.concat({ ... }, " ") .. ": " .. (r.stderr or ""))
  return r.stdout
end

--- A git repository holding `files` (path → text), committed.
---@param files table<string, string>
---@return string root
function H.project(files)
  local root = H.tmpdir()
  H.git(root, "init", "-q", "-b", "main")
  for path, text in pairs(files) do
    H.write(root .. "/" .. path, text)
  end
  H.git(root, "add", "-A")
  H.git(root, "commit", "-q", "-m", "init")
  return root
end

-- HTTP to the fake's control routes (uv TCP; no curl needed). -------------------------------------

---@param port integer
---@param method string
---@param path string
---@param body? string
---@return integer status
---@return string body
function H.http(port, method, path, body)
  body = body or ""
  local tcp = assert(uv.new_tcp())
  local chunks, done, err = {}, false, nil
  local function finish(e)
    err = err or e
    done = true
    if not tcp:is_closing() then
      tcp:close()
    end
  end
  tcp:connect("127.0.0.1", port, function(e)
    if e then
      return finish(e)
    end
    tcp:write(
      ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"):format(
        method,
        path,
        #body,
        body
      )
    )
    tcp:read_start(function(e2, data)
      if e2 then
        return finish(e2)
      end
      if not data then
        return finish()
      end
      chunks[#chunks + 1] = data
      local raw = table.concat(chunks)
      local head, rest = raw:match("^(.-)\r\n\r\n(.*)$")
      local len = head and tonumber(head:lower():match("content%-length:%s*(%d+)"))
      if len and #rest >= len then
        finish()
      end
    end)
  end)
  assert(
    vim.wait(15000, function()
      return done
    end, 5),
    "HTTP " .. method .. " " .. path .. " timed out"
  )
  assert(not err, tostring(err))
  local raw = table.concat(chunks)
  local head, rest = raw:match("^(.-)\r\n\r\n(.*)$")
  assert(head, "no HTTP answer: " .. raw)
  local status = tonumber(head:match("^HTTP/%d%.%d (%d+)"))
  if head:lower():find("transfer%-encoding:%s*chunked") then
    local out, i = {}, 1
    while true do
      local size_hex, after = rest:match("^(%x+)\r\n()", i)
      if not size_hex then
        break
      end
      local size = tonumber(size_hex, 16)
      if size == 0 then
        break
      end
      out[#out + 1] = rest:sub(after, after + size - 1)
      i = after + size + 2
    end
    rest = table.concat(out)
  end
  return status, rest
end

---@class spec.Fake
---@field port integer
---@field url string
---@field proc vim.SystemObj

--- Starts `fake-anthropic` (it dies with us: --watch-stdin).
---@param replies? table[]
---@return spec.Fake
function H.fake(replies)
  local line
  local buffered = ""
  local proc = vim.system({ H.fake_bin, "--watch-stdin" }, {
    stdin = true,
    stdout = function(_, data)
      if data and not line then
        buffered = buffered .. data
        local l = buffered:match("^([^\n]*)\n")
        if l then
          line = l
        end
      end
    end,
  })
  H.wait(10000, function()
    return line
  end, "fake-anthropic's port")
  local info = vim.json.decode(line)
  local fake = { port = info.port, url = info.baseUrl, proc = proc }
  function fake:push(r)
    local status, body = H.http(self.port, "POST", "/_fake/replies", vim.json.encode(r))
    assert(status == 200, "queueing a reply: " .. body)
  end
  function fake:requests()
    local _, body = H.http(self.port, "GET", "/_fake/requests")
    return vim.json.decode(body)
  end
  function fake:state()
    local _, body = H.http(self.port, "GET", "/_fake/state")
    return vim.json.decode(body)
  end
  function fake:stop()
    pcall(function()
      self.proc:kill(15)
    end)
  end
  if replies then
    fake:push(replies)
  end
  return fake
end

--- `require("claude_context").setup()` against the real server and `fake`.
---@param fake spec.Fake?
---@param extra? table
function H.setup(fake, extra)
  vim.env.ANTHROPIC_API_KEY = vim.env.ANTHROPIC_API_KEY or "sk-ant-spec-fake-key"
  vim.env.CLAUDE_CONTEXT_AUTO_MEMORY = "0"
  local opts = vim.tbl_deep_extend("force", {
    cmd = { H.bin, "lsp" },
    cmd_env = fake and { ANTHROPIC_BASE_URL = fake.url } or {},
  }, extra or {})
  require("claude_context").setup(opts)
end

--- The claude_context client attached to `buf`, once initialised.
---@param buf? integer
---@return vim.lsp.Client
function H.client(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local c
  H.wait(20000, function()
    c = vim.lsp.get_clients({ bufnr = buf, name = "claude_context" })[1]
    return c and c.initialized
  end, "the server to attach to " .. vim.api.nvim_buf_get_name(buf))
  return c
end

--- Sends a request and waits for its answer.
---@param client vim.lsp.Client
---@param method string
---@param params table
---@return table? result
---@return table? err
function H.request(client, method, params, ms)
  local done, res, er = false, nil, nil
  client:request(method, params, function(e, r)
    done, res, er = true, r, e
  end)
  H.wait(ms or 20000, function()
    return done
  end, method)
  return res, er
end

--- The lines of `buf`.
---@param buf integer
---@return string[]
function H.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

---@param buf integer
---@return string
function H.text(buf)
  return table.concat(H.lines(buf), "\n")
end

--- Runs `claude-context` with `args` in `cwd` (the same environment as the server).
---@param cwd string
---@param args string[]
---@return string stdout
function H.cli(cwd, args)
  local cmd = { H.bin }
  vim.list_extend(cmd, args)
  local r = vim.system(cmd, { cwd = cwd, text = true }):wait(30000)
  assert(r.code == 0, "claude-context " .. table.concat(args, " ") .. ": " .. (r.stderr or ""))
  return r.stdout
end

--- An async `vim.ui.select` (as telescope, snacks or fzf-lua are): it answers later, from the
--- event loop, with what `choose(items, opts)` picks. Records every call.
---@param choose fun(items: table[], opts: table): integer?
---@return table calls
function H.async_select(choose, delay)
  local calls = {}
  vim.ui.select = function(items, opts, on_choice)
    local call = { items = items, opts = opts, answered = false }
    calls[#calls + 1] = call
    -- A window like a picker's, to be closed when the server withdraws the question.
    local buf = vim.api.nvim_create_buf(false, true)
    call.win = vim.api.nvim_open_win(buf, false, { relative = "editor", width = 20, height = 3, row = 1, col = 1 })
    call.labels = vim.tbl_map(function(i)
      return opts.format_item and opts.format_item(i) or tostring(i)
    end, items)
    local pick = choose(items, opts)
    if pick ~= false then
      vim.defer_fn(function()
        if vim.api.nvim_win_is_valid(call.win) then
          vim.api.nvim_win_close(call.win, true)
          call.answered = true
          on_choice(pick and items[pick] or nil, pick)
        end
      end, delay or 50)
    end
  end
  return calls
end

--- Every `chat/event` the plugin handles, in order, and waits on them. `start()` wraps
--- `claude_context.chat.on_event` (call it once the plugin is set up); `root()` names the project
--- whose chat a failed wait shows.
---@param root fun(): string
---@return { list: table[], start: fun(), done_count: fun(): integer, wait_done: fun(n: integer, ms?: integer): table, transcript: fun(): string }
function H.chat_events(root)
  local E = { list = {} }
  function E.start()
    local chat_mod = require("claude_context.chat")
    local orig = chat_mod.on_event
    chat_mod.on_event = function(params, ctx)
      E.list[#E.list + 1] = params
      return orig(params, ctx)
    end
  end
  function E.done_count()
    local n = 0
    for _, e in ipairs(E.list) do
      if e.kind == "done" then
        n = n + 1
      end
    end
    return n
  end
  function E.wait_done(n, ms)
    H.wait(ms or 30000, function()
      return E.done_count() >= n
    end, function()
      local chat = require("claude_context.chat").get(root())
      return ("%d done events; transcript:\n%s"):format(E.done_count(), chat and H.text(chat.buf) or "(no chat)")
    end)
    return E.list[#E.list]
  end
  function E.transcript()
    local chat = require("claude_context.chat").get(root())
    chat.w:flush()
    return H.text(chat.buf)
  end
  return E
end

return H
