--- `:checkhealth claude_context`: Neovim's version, the server program and its version, the
--- servers running (and the one for the buffer you came from), watched files, applyEdit, the
--- model key's presence (never its value) and the `vim.ui.select` in use.

local M = {}

local h = vim.health

---@return vim.lsp.Client[]
local function clients()
  return vim.lsp.get_clients({ name = "claude_context" })
end

function M.check()
  local options = require("claude_context.config").options
  h.start("claude-context: Neovim")
  local v = vim.version()
  local vs = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.11") == 1 then
    h.ok("Neovim " .. vs)
  else
    h.error("Neovim " .. vs .. ": 0.11 or later is needed (vim.lsp.config, vim.lsp.enable)")
  end

  h.start("claude-context: the server program")
  local prog = options.cmd[1]
  local path = vim.fn.exepath(prog)
  if path == "" then
    h.error(("`%s` not found%s"):format(prog, prog:find("/") and "" or " on PATH"), {
      "Install it: `cargo install --locked --path server` in a clone of claude-context",
      'Or give its path: require("claude_context").setup({ cmd = { "/path/to/claude-context", "lsp" } })',
    })
  else
    local ok, res = pcall(function()
      return vim.system({ path, "--version" }, { text = true }):wait(5000)
    end)
    if ok and res and res.code == 0 then
      h.ok(("%s: %s"):format(path, vim.trim(res.stdout or "")))
    else
      h.warn(
        ("%s found, but `--version` failed: %s"):format(
          path,
          ok and res and vim.trim(res.stderr or "") or tostring(res)
        )
      )
    end
  end
  h.info("command: " .. table.concat(options.cmd, " "))

  h.start("claude-context: servers")
  local all = clients()
  local alt = vim.fn.bufnr("#")
  local target = (alt > 0 and vim.api.nvim_buf_is_valid(alt)) and alt or vim.api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ bufnr = target, name = "claude_context" })[1]
  local tname = vim.api.nvim_buf_get_name(target)
  if attached then
    h.ok(
      ("buffer %s: served by the server of %s"):format(
        tname ~= "" and vim.fn.fnamemodify(tname, ":~:.") or target,
        attached.root_dir or "?"
      )
    )
  elseif tname ~= "" and vim.bo[target].buftype == "" then
    local root = require("claude_context.lsp").find_root(vim.fs.normalize(vim.fn.fnamemodify(tname, ":p")))
    if root then
      h.warn(
        ("buffer %s (project %s) has no server"):format(vim.fn.fnamemodify(tname, ":~:."), root),
        { ":ClaudeContext restart", "the LSP log says why it stopped: " .. vim.lsp.get_log_path() }
      )
    else
      h.info(
        ("buffer %s is in no project (no %s above it)"):format(
          vim.fn.fnamemodify(tname, ":~:."),
          table.concat(options.root_markers, " or ")
        )
      )
    end
  end
  if #all == 0 then
    local last = require("claude_context.lsp").last_exit
    if last then
      h.error(("no server running; the last one stopped: %s"):format(last.reason or "?"), { ":ClaudeContext restart" })
    else
      h.info("no server running (one starts when a file of a project opens)")
    end
  end
  for _, c in ipairs(all) do
    local n = vim.tbl_count(c.attached_buffers or {})
    h.ok(
      ("%s: %d buffer%s attached, position encoding %s"):format(
        c.root_dir or "?",
        n,
        n == 1 and "" or "s",
        c.offset_encoding or "?"
      )
    )
    local dyn = vim.tbl_get(c.capabilities or {}, "workspace", "didChangeWatchedFiles", "dynamicRegistration")
    local regs = vim.tbl_get(c, "dynamic_capabilities", "capabilities", "workspace/didChangeWatchedFiles")
    local watchers = 0
    for _, r in ipairs(regs or {}) do
      watchers = watchers + #(vim.tbl_get(r, "registerOptions", "watchers") or {})
    end
    if dyn then
      local backend = vim.fn.executable("inotifywait") == 1 and "inotifywait"
        or (
          vim.fn.has("linux") == 1 and "one fs event per folder (install inotify-tools for large projects)"
          or "the system's watcher"
        )
      local shallow = package.loaded["claude_context.watch"] and require("claude_context.watch").bases(c.id) or {}
      h.ok(
        ("watched files: on, %d pattern%s registered; backend: %s"):format(
          watchers,
          watchers == 1 and "" or "s",
          backend
        )
      )
      if #shallow > 0 then
        h.info("watched without a recursive walk: " .. table.concat(
          vim.tbl_map(function(b)
            return vim.fn.fnamemodify(b, ":~")
          end, shallow),
          ", "
        ))
      end
    else
      h.warn(
        "watched files: off (watch_files = false): edits made outside Neovim reach the server only through its own refresh"
      )
    end
    local apply = vim.tbl_get(c.capabilities or {}, "workspace", "applyEdit")
    local ours = c.handlers and c.handlers["workspace/applyEdit"] ~= nil
    local tracking = pcall(require, "vim.lsp._changetracking")
    if apply and ours and tracking then
      h.ok(
        "applyEdit: on; the pending didChange is sent before each answer (edits land in the buffer, unsaved, undoable)"
      )
    elseif apply then
      h.warn("applyEdit: on, but without the flush of didChange before the answer: two edits of one buffer may collide")
    else
      h.warn("applyEdit: off: the model's edits are written on disk")
    end
  end

  h.start("claude-context: the model")
  local var = (options.settings.chat or {}).keyVariable or "ANTHROPIC_API_KEY"
  local function present(name)
    local val = (options.cmd_env or {})[name] or vim.env[name]
    return val ~= nil and val ~= ""
  end
  if present(var) then
    h.ok(var .. " is set")
  elseif present("ANTHROPIC_AUTH_TOKEN") then
    h.ok("ANTHROPIC_AUTH_TOKEN is set")
  else
    h.warn(
      var .. " is not set: the chat cannot answer",
      { "Set it in the environment Neovim starts from (never in a settings file), then :ClaudeContext restart" }
    )
  end
  local base = vim.env.ANTHROPIC_BASE_URL or (options.cmd_env or {}).ANTHROPIC_BASE_URL
  if base and base ~= "" then
    h.info("ANTHROPIC_BASE_URL: " .. base)
  end

  h.start("claude-context: pickers")
  local info = debug.getinfo(vim.ui.select, "S")
  if info and info.source and info.source:find("vim/ui%.lua$") then
    h.info("vim.ui.select is Neovim's own (it blocks the editor): permission questions use a float of ours instead")
  else
    h.ok("vim.ui.select is " .. ((info and info.short_src) or "a custom picker") .. ": permission questions use it")
  end
end

return M
