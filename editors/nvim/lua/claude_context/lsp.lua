--- The language server: its `vim.lsp` configuration (what `lsp/claude_context.lua` returns),
--- the project root, the command (with a clear message when it is missing and one message when
--- it stops), the handlers of the custom methods, `workspace/applyEdit` that flushes the
--- pending `didChange` before it answers, attaching every file buffer, settings applied live,
--- and restart.

local util = require("claude_context.util")

local M = {}

local NAME = "claude_context"
M.NAME = NAME

---@return claude_context.Options
local function options()
  return require("claude_context.config").options
end

local uv = vim.uv or vim.loop

-- Project root ------------------------------------------------------------------------------

---@param p string
---@return boolean
local function exists(p)
  return uv.fs_stat(p) ~= nil
end

--- The project of `path`: the nearest folder holding the first marker found upward (`.git`);
--- for any other marker (`CLAUDE.md`), the outermost folder below `$HOME` holding it, so that a
--- nested `CLAUDE.md` never makes a subfolder a second project.
---@param path string an absolute file path
---@param markers? string[]
---@return string?
function M.find_root(path, markers)
  markers = markers or options().root_markers
  local dir = vim.fs.dirname(path)
  local home = util.home()
  for _, marker in ipairs(markers) do
    local found ---@type string?
    local d = dir
    while d and d ~= "" do
      if exists(d .. "/" .. marker) then
        if marker == ".git" then
          return d
        end
        if d == "/" or d == home then
          break
        end
        found = d
      end
      local parent = vim.fs.dirname(d)
      if parent == d or (home and d == home) then
        break
      end
      d = parent
    end
    if found then
      return found
    end
  end
  return nil
end

--- The file of buffer `buf`, absolute and normalised; nil for a buffer that is not a file.
---@param buf integer
---@return string?
local function buf_path(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return nil
  end
  return vim.fs.normalize(vim.fn.fnamemodify(name, ":p"))
end
M.buf_path = buf_path

---@return vim.lsp.Client[]
function M.clients()
  return vim.lsp.get_clients({ name = NAME })
end

local missing_said = false

--- The server program is there; otherwise one message that says how to fix it.
---@return boolean
function M.binary_ok()
  local cmd = options().cmd
  local prog = cmd[1]
  if vim.fn.executable(prog) == 1 then
    missing_said = false
    return true
  end
  if not missing_said then
    missing_said = true
    util.notify(
      ('the server `%s` was not found%s. Install it (`cargo install --locked --path server` in a clone of claude-context) or give its path: require("claude_context").setup({ cmd = { "/path/to/claude-context", "lsp" } }). Then :ClaudeContext restart'):format(
        prog,
        prog:find("/") and "" or " on PATH"
      ),
      vim.log.levels.ERROR
    )
  end
  return false
end

--- `root_dir` of the configuration: one server per project. A file below a running server's
--- folder joins it; a file of no project joins the running server, if any (the server judges it
--- in its own folder).
---@param buf integer
---@param on_dir fun(root: string)
function M.root_dir(buf, on_dir)
  local path = buf_path(buf)
  if not path then
    return
  end
  local running = {} ---@type vim.lsp.Client[]
  for _, c in ipairs(M.clients()) do
    if not c:is_stopped() and c.root_dir then
      running[#running + 1] = c
    end
  end
  for _, c in ipairs(running) do
    if util.under(path, c.root_dir) then
      return on_dir(c.root_dir)
    end
  end
  local root = M.find_root(path)
  if not root then
    if running[1] then
      on_dir(running[1].root_dir)
    end
    return
  end
  if M.binary_ok() then
    on_dir(root)
  end
end

-- The process ---------------------------------------------------------------------------------

---@class claude_context.Exit
---@field code integer
---@field signal integer
---@field root string?
---@field reason string?

---@type claude_context.Exit?
M.last_exit = nil

--- The last line the server wrote on stderr, from the LSP log (Neovim logs it there).
---@param prog string
---@return string?
local function last_stderr(prog)
  local ok, path = pcall(vim.lsp.get_log_path)
  if not ok or not path then
    return nil
  end
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local size = f:seek("end") or 0
  f:seek("set", math.max(0, size - 65536))
  local tail = f:read("*a") or ""
  f:close()
  local last
  for line in tail:gmatch("[^\n]+") do
    if line:find('"stderr"', 1, true) and line:find(prog, 1, true) then
      last = line
    end
  end
  if not last then
    return nil
  end
  local msg = last:match('"stderr"%s+"(.*)"%s*$')
  if not msg then
    return nil
  end
  msg = msg:gsub("\\n", "\n"):gsub('\\"', '"')
  local lines = vim.tbl_filter(function(l)
    return l:match("%S") ~= nil
  end, vim.split(msg, "\n", { plain = true }))
  return lines[#lines]
end

--- What to say when the server stopped by itself.
---@param code integer
---@param signal integer
---@param root string?
local function exited(code, signal, root)
  local prog = options().cmd[1]
  local reason = signal ~= 0 and ("killed by signal %d"):format(signal) or ("exit code %d"):format(code)
  local said = last_stderr(prog)
  M.last_exit = { code = code, signal = signal, root = root, reason = said or reason }
  util.notify(
    ("the server for %s stopped (%s)%s. :ClaudeContext restart starts it again; its log is in %s"):format(
      root and util.display_path(root) or "this project",
      reason,
      said and (": " .. util.one_line(said)) or "",
      util.display_path(vim.lsp.get_log_path())
    ),
    vim.log.levels.ERROR
  )
  vim.schedule(function()
    pcall(function()
      require("claude_context.chat").on_server_exit(root)
    end)
    pcall(function()
      require("claude_context.status").on_server_exit(root)
    end)
  end)
end

--- `cmd` of the configuration: starts the program in the project folder. An unexpected exit is
--- reported once by us (with the reason and the fix), not also by Neovim's generic message.
---@param dispatchers vim.lsp.rpc.Dispatchers
---@param config vim.lsp.ClientConfig
---@return vim.lsp.rpc.PublicClient
function M.cmd(dispatchers, config)
  local o = options()
  local root = config and config.root_dir
  local wrapped = setmetatable({
    on_exit = function(code, signal)
      if code ~= 0 or (signal ~= 0 and signal ~= 15) then
        -- Called in a fast event context: no Vimscript, no buffers here.
        vim.schedule(function()
          exited(code, signal, root)
        end)
        return dispatchers.on_exit(0, 0)
      end
      return dispatchers.on_exit(code, signal)
    end,
  }, { __index = dispatchers })
  local env = next(o.cmd_env or {}) and o.cmd_env or nil
  return vim.lsp.rpc.start(o.cmd, wrapped, { cwd = root, env = env })
end

-- Handlers ----------------------------------------------------------------------------------

--- `workspace/applyEdit`: applies the edit to the buffers (undoable, unsaved), then sends the
--- pending `didChange` of each buffer it touched before answering. Neovim 0.11 debounces
--- `didChange` by 150 ms: answered first, the server would read the buffer as it was and a
--- second edit of the same answer would land at the wrong place.
---@param params lsp.ApplyWorkspaceEditParams
---@param ctx lsp.HandlerContext
---@return lsp.ApplyWorkspaceEditResult
function M.apply_edit(params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client or type(params) ~= "table" or type(params.edit) ~= "table" then
    return { applied = false, failureReason = "no edit, or the client is gone" }
  end
  local uris = {}
  for uri in pairs(params.edit.changes or {}) do
    uris[#uris + 1] = uri
  end
  for _, change in ipairs(params.edit.documentChanges or {}) do
    if change.textDocument and change.textDocument.uri then
      uris[#uris + 1] = change.textDocument.uri
    end
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, client.offset_encoding)
  local tracking_ok, tracking = pcall(require, "vim.lsp._changetracking")
  for _, uri in ipairs(uris) do
    local buf = vim.uri_to_bufnr(uri)
    if tracking_ok and vim.api.nvim_buf_is_loaded(buf) then
      pcall(tracking.flush, client, buf)
    end
  end
  if ok then
    return { applied = true }
  end
  return { applied = false, failureReason = tostring(err) }
end

--- Wraps a handler: errors are logged and shown once, never thrown at the user.
---@param what string
---@param mod string
---@param fn string
local function handler(what, mod, fn)
  return function(err, params, ctx)
    return util.safe(what, function()
      return require(mod)[fn](params, ctx, err)
    end)
  end
end

--- The configuration `lsp/claude_context.lua` returns, from the options of `setup()`.
---@return vim.lsp.Config
function M.config()
  local o = options()
  local settings = util.json_object(o.settings or {})
  -- The chat writer redraws at most every 30 ms: the server is asked for at most one text event
  -- per block every 16 ms, so a fast stream is a handful of events to parse, not thousands (the
  -- main loop stays free). Under the settings: the user's own `chat.deltaIntervalMs` wins.
  local init = util.json_object(vim.tbl_deep_extend("force", { chat = { deltaIntervalMs = 16 } }, o.settings or {}))
  return {
    cmd = M.cmd,
    root_dir = M.root_dir,
    -- No `filetypes`: every file buffer is attached (an open file is touched: it activates rules).
    capabilities = {
      workspace = {
        didChangeWatchedFiles = { dynamicRegistration = o.watch_files ~= false, relativePatternSupport = true },
        applyEdit = true,
        configuration = true,
      },
      window = { workDoneProgress = true },
    },
    on_exit = function(_, _, client_id)
      pcall(function()
        require("claude_context.watch").forget(client_id)
      end)
    end,
    init_options = { claudeContext = init },
    settings = { claudeContext = settings },
    handlers = {
      ["context/changed"] = handler("context/changed", "claude_context.events", "context_changed"),
      ["chat/event"] = handler("chat/event", "claude_context.chat", "on_event"),
      ["chat/modeChanged"] = handler("chat/modeChanged", "claude_context.chat", "on_mode_changed"),
      ["chat/permission"] = function(err, params, ctx)
        local ok, result, rerr = pcall(function()
          return require("claude_context.permission").handle(params, ctx, err)
        end)
        if ok then
          return result, rerr
        end
        pcall(require("vim.lsp.log").error, "claude-context: chat/permission: " .. tostring(result))
        return { decision = "deny" }
      end,
      ["$/cancelRequest"] = handler("$/cancelRequest", "claude_context.permission", "on_cancel"),
      ["client/registerCapability"] = function(err, params, ctx)
        local ok, mine = pcall(function()
          return require("claude_context.watch").register(params, ctx)
        end)
        return vim.lsp.handlers["client/registerCapability"](err, ok and mine or params, ctx)
      end,
      ["client/unregisterCapability"] = function(err, params, ctx)
        pcall(function()
          require("claude_context.watch").unregister(params, ctx)
        end)
        return vim.lsp.handlers["client/unregisterCapability"](err, params, ctx)
      end,
      ["workspace/applyEdit"] = function(_, params, ctx)
        local ok, result = pcall(M.apply_edit, params, ctx)
        if ok then
          return result
        end
        return { applied = false, failureReason = tostring(result) }
      end,
    },
  }
end

-- Attaching -----------------------------------------------------------------------------------

--- Starts (or joins) the server for `buf`, as `vim.lsp.enable` does for a buffer with a
--- filetype; used for buffers that have none (no `FileType` event) and after a restart.
---@param buf integer
function M.attach(buf)
  if not buf_path(buf) then
    return
  end
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = buf, name = NAME })) do
    if not c:is_stopped() then
      return
    end
  end
  local config = vim.lsp.config[NAME]
  if not config then
    return
  end
  if config.filetypes and not vim.tbl_contains(config.filetypes, vim.bo[buf].filetype) then
    return
  end
  config = vim.deepcopy(config)
  local function start(root)
    config.root_dir = root
    vim.schedule(function()
      if vim.api.nvim_buf_is_valid(buf) then
        vim.lsp.start(config, { bufnr = buf, reuse_client = config.reuse_client })
      end
    end)
  end
  if type(config.root_dir) == "function" then
    config.root_dir(buf, start)
  elseif config.root_dir then
    start(config.root_dir)
  end
end

local group ---@type integer?

--- Enables the configuration (first file buffer, or `setup()` with `vim.lsp` loaded).
function M.enable()
  vim.lsp.config(NAME, {}) -- drop a configuration resolved before setup() ran
  vim.lsp.enable(NAME)
  vim.lsp.commands["claudeContext.showPreview"] = function(command, ctx)
    util.safe("claudeContext.showPreview", function()
      local uri = command.arguments and command.arguments[1]
      require("claude_context.preview").open({ uri = type(uri) == "string" and uri or nil, client_id = ctx.client_id })
    end)
  end
  group = vim.api.nvim_create_augroup("claude_context", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    callback = function(args)
      vim.schedule(function()
        if vim.api.nvim_buf_is_valid(args.buf) and vim.bo[args.buf].filetype == "" then
          M.attach(args.buf)
        end
      end)
    end,
  })
  vim.api.nvim_create_autocmd("LspAttach", {
    group = group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == NAME then
        util.safe("attach", function()
          require("claude_context.events").on_attach(client, args.buf)
        end)
      end
    end,
  })
  -- Buffers already open (setup() after files were opened, or before VimEnter).
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      M.attach(buf)
    end
  end
end

--- setup() called again: new clients get the new configuration; running ones the new settings
--- (`workspace/didChangeConfiguration`), live.
function M.reconfigure()
  vim.lsp.config(NAME, {})
  local settings = util.json_object(options().settings or {})
  for _, c in ipairs(M.clients()) do
    c.settings = { claudeContext = settings }
    c:notify("workspace/didChangeConfiguration", { settings = c.settings })
  end
end

--- Stops the servers, then starts them again for every file buffer.
function M.restart()
  local clients = M.clients()
  for _, c in ipairs(clients) do
    c:stop()
  end
  missing_said = false
  local deadline = uv.now() + 5000
  local function again()
    local waiting = false
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        waiting = true
      end
    end
    if waiting and uv.now() < deadline then
      vim.defer_fn(again, 50)
      return
    end
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        c:stop(true)
      end
    end
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) then
        M.attach(buf)
      end
    end
  end
  again()
end

--- The server for `buf`: the one attached to it, the chat's for a chat buffer, else the only one
--- running.
---@param buf? integer
---@return vim.lsp.Client?
function M.client_for(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ bufnr = buf, name = NAME })
  if attached[1] then
    return attached[1]
  end
  local chat = package.loaded["claude_context.chat"]
  if chat then
    local c = chat.client_of_buffer(buf)
    if c then
      return c
    end
  end
  local all = M.clients()
  if #all == 1 then
    return all[1]
  end
  -- Several: the one whose folder holds the current directory.
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  for _, c in ipairs(all) do
    if c.root_dir and util.under(cwd, c.root_dir) then
      return c
    end
  end
  return all[1]
end

return M
