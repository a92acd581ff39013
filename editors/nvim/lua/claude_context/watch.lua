--- The server's file watchers, made affordable in Neovim 0.11. Neovim watches a relative pattern
--- by walking its base folder recursively on the main thread, whatever the pattern: the
--- server's `{ baseUri: $HOME, pattern: ".claude.json" }` made Neovim walk the whole home
--- directory at every start (322 ms for 44,000 entries; seconds for a real home), and a base that
--- does not exist yet printed "watch.watchdirs: ENOENT". So, before Neovim sees a registration:
--- - a pattern of one level (`.claude.json`, `*.md`: no `/`, no `**`) is watched here, with one
---   non-recursive `uv_fs_event` on its folder, and reported as `workspace/didChangeWatchedFiles`
---   (debounced 100 ms, as Neovim does);
--- - a pattern whose base folder does not exist is dropped (Neovim's watcher would watch
---   nothing there either);
--- - the rest (the project's `**/*`) is left to Neovim.

local M = {}

local uv = vim.uv or vim.loop

---@class claude_context.ShallowWatch
---@field handle uv.uv_fs_event_t
---@field base string
---@field pattern vim.lpeg.Pattern
---@field kind integer

---@type table<integer, table<string, claude_context.ShallowWatch[]>> client id → registration id → watches
local active = {}
---@type table<integer, { timer: uv.uv_timer_t?, changes: table<string, integer>, seen: table<string, boolean> }>
local queues = {}

--- The folder a watcher's base names.
---@param base string|{ uri: string }
---@return string?
local function base_path(base)
  local uri = type(base) == "table" and base.uri or base
  if type(uri) ~= "string" then
    return nil
  end
  local ok, path = pcall(vim.uri_to_fname, uri)
  return ok and path or nil
end

---@param client_id integer
local function send(client_id)
  local q = queues[client_id]
  if not q then
    return
  end
  local changes = {}
  for uri, type in pairs(q.changes) do
    changes[#changes + 1] = { uri = uri, type = type }
  end
  q.changes = {}
  local client = vim.lsp.get_client_by_id(client_id)
  if client and #changes > 0 then
    client:notify("workspace/didChangeWatchedFiles", { changes = changes })
  end
end

---@param client_id integer
---@param w claude_context.ShallowWatch
---@param name string
local function on_event(client_id, w, name)
  local path = w.base .. "/" .. name
  local q = queues[client_id]
  if not q then
    q = { changes = {}, seen = {} }
    queues[client_id] = q
  end
  local stat = uv.fs_stat(path)
  local type
  if not stat then
    type = 3 -- Deleted
    q.seen[path] = nil
  elseif q.seen[path] then
    type = 2 -- Changed
  else
    type = 1 -- Created
    q.seen[path] = true
  end
  local bit = ({ 1, 2, 4 })[type]
  if math.floor(w.kind / bit) % 2 == 0 then
    return
  end
  q.changes[vim.uri_from_fname(path)] = type
  q.timer = q.timer or assert(uv.new_timer())
  q.timer:stop()
  q.timer:start(
    100,
    0,
    vim.schedule_wrap(function()
      send(client_id)
    end)
  )
end

--- Takes out of `params` what is watched here, and returns what Neovim should watch.
---@param params lsp.RegistrationParams
---@param ctx lsp.HandlerContext
---@return lsp.RegistrationParams
function M.register(params, ctx)
  if type(params) ~= "table" or type(params.registrations) ~= "table" then
    return params
  end
  local out = { registrations = {} }
  for _, reg in ipairs(params.registrations) do
    local watchers = vim.tbl_get(reg, "registerOptions", "watchers")
    if reg.method ~= "workspace/didChangeWatchedFiles" or type(watchers) ~= "table" then
      out.registrations[#out.registrations + 1] = reg
    else
      local keep = {}
      for _, w in ipairs(watchers) do
        local gp = w.globPattern
        if type(gp) == "table" and gp.baseUri and type(gp.pattern) == "string" then
          local base = base_path(gp.baseUri)
          local stat = base and uv.fs_stat(base)
          -- Nothing to watch where the folder does not exist yet (Neovim would only say ENOENT).
          local exists = stat and stat.type == "directory"
          local shallow = not gp.pattern:find("/", 1, true) and not gp.pattern:find("**", 1, true)
          if exists and shallow then
            local handle = uv.new_fs_event()
            if handle then
              ---@type claude_context.ShallowWatch
              local sw = { handle = handle, base = base, pattern = vim.glob.to_lpeg(gp.pattern), kind = w.kind or 7 }
              local ok = handle:start(base, {}, function(err, name)
                if err or type(name) ~= "string" or not sw.pattern:match(name) then
                  return
                end
                on_event(ctx.client_id, sw, name)
              end)
              if ok then
                active[ctx.client_id] = active[ctx.client_id] or {}
                active[ctx.client_id][reg.id] = active[ctx.client_id][reg.id] or {}
                table.insert(active[ctx.client_id][reg.id], sw)
                -- Files there now count as seen: their next event is a change.
                local q = queues[ctx.client_id] or { changes = {}, seen = {} }
                queues[ctx.client_id] = q
                for name in vim.fs.dir(base) do
                  if sw.pattern:match(name) then
                    q.seen[base .. "/" .. name] = true
                  end
                end
              else
                handle:close()
                keep[#keep + 1] = w
              end
            else
              keep[#keep + 1] = w
            end
          elseif exists then
            keep[#keep + 1] = w
          end
        else
          keep[#keep + 1] = w
        end
      end
      local copy = vim.deepcopy(reg)
      copy.registerOptions.watchers = keep
      out.registrations[#out.registrations + 1] = copy
    end
  end
  return out
end

---@param client_id integer
---@param id string
local function stop(client_id, id)
  local regs = active[client_id]
  for _, sw in ipairs(regs and regs[id] or {}) do
    if not sw.handle:is_closing() then
      sw.handle:close()
    end
  end
  if regs then
    regs[id] = nil
  end
end

---@param params lsp.UnregistrationParams
---@param ctx lsp.HandlerContext
function M.unregister(params, ctx)
  -- LSP spells it `unregisterations`.
  for _, u in ipairs(type(params) == "table" and (params.unregisterations or params.unregistrations) or {}) do
    stop(ctx.client_id, u.id)
  end
end

--- The client stopped: its watches go.
---@param client_id integer
function M.forget(client_id)
  for id in pairs(active[client_id] or {}) do
    stop(client_id, id)
  end
  active[client_id] = nil
  local q = queues[client_id]
  if q and q.timer and not q.timer:is_closing() then
    q.timer:close()
  end
  queues[client_id] = nil
end

--- What is watched here (health, tests): base folder and number of watches per client.
---@param client_id integer
---@return string[]
function M.bases(client_id)
  local out = {}
  for _, list in pairs(active[client_id] or {}) do
    for _, sw in ipairs(list) do
      out[#out + 1] = sw.base
    end
  end
  table.sort(out)
  return out
end

return M
