--- `:ClaudeContext`: the context of the next request for the current buffer, in a float. The
--- file rows are the rows `claude-context preview` prints (same columns, same reasons); then the
--- totals against the window and the compaction threshold, the attachments, the skills (how
--- each is listed; a conditional one with its `paths:`, and whether a touched file activated it;
--- the messages touched files add), the MCP servers, the agent types (each with its scope, tools
--- and tokens), the output style, the enabled plugins (what each adds, in tokens; the ones not
--- loaded, with why), the pending instruction edits, the hooks (each with its event, scope,
--- status, matcher and command; never run), the findings and the blocks. `<CR>` opens the file
--- under the cursor (a hook: its settings file at its line), `K` shows the exact text of a block
--- or attachment (or a file's, an agent's or a hook's details), `H` runs the SessionStart and
--- UserPromptSubmit hooks once (a trusted folder only) and shows their texts, `r` refreshes, `q`
--- closes. The float follows `context/changed`.

local util = require("claude_context.util")

local M = {}

---@class claude_context.PreviewItem
---@field kind "file"|"attachment"|"block"|"finding"|"pending"|"skill"|"skills"|"mcp"|"agents"|"agent"|"style"|"plugin"|"hook"|"hookText"
---@field path? string
---@field line? integer 0-based line to jump to
---@field text? string the exact text (blocks, attachments)
---@field data table the server's object

---@class claude_context.PreviewState
---@field win integer
---@field buf integer
---@field origin integer the window the float was opened from
---@field client_id integer
---@field params table
---@field items table<integer, claude_context.PreviewItem> by 1-based line
---@field result table?

---@type claude_context.PreviewState?
local state = nil

local ns = vim.api.nvim_create_namespace("claude_context.preview")

local function define_highlights()
  local links = {
    ClaudeContextTitle = "Title",
    ClaudeContextSection = "Title",
    ClaudeContextHeader = "Comment",
    ClaudeContextHint = "Comment",
    ClaudeContextLoaded = "DiagnosticOk",
    ClaudeContextAttached = "DiagnosticInfo",
    ClaudeContextInactive = "Comment",
    ClaudeContextSkipped = "DiagnosticWarn",
    ClaudeContextEmpty = "Comment",
    ClaudeContextError = "DiagnosticError",
    ClaudeContextWarning = "DiagnosticWarn",
    ClaudeContextNear = "DiagnosticWarn",
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

local status_hl = {
  loaded = "ClaudeContextLoaded",
  attached = "ClaudeContextAttached",
  inactive = "ClaudeContextInactive",
  skipped = "ClaudeContextSkipped",
  empty = "ClaudeContextEmpty",
}

---@param s string
---@return integer
local function width(s)
  return vim.fn.strchars(s)
end

---@param s string
---@param n integer
local function pad_right(s, n)
  local w = width(s)
  return w >= n and s or s .. string.rep(" ", n - w)
end

---@param s string
---@param n integer
local function pad_left(s, n)
  local w = width(s)
  return w >= n and s or string.rep(" ", n - w) .. s
end

--- The file rows exactly as `claude-context preview` prints them (`render_table`).
---@param result table a `context/preview` result
---@return { line: string, file: table }[]
function M.file_rows(result)
  local base = result.cwd
  local rows = {}
  for _, f in ipairs(result.files or {}) do
    local tokens = (f.status == "skipped" or f.status == "empty") and "—" or util.thousands(f.tokens or 0)
    local depth = f.depth or 0
    local file = string.rep("  ", depth) .. (depth > 0 and "└ " or "") .. util.display_path(f.path, base)
    local site
    if f.includedFrom then
      local path, line = f.includedFrom:match("^(.*):([^:]*)$")
      if not path then
        path, line = f.includedFrom, ""
      end
      site = util.display_path(path, base) .. ":" .. line
    end
    local note = ""
    if f.status == "loaded" and not f.reason and site then
      note = "(included from " .. site .. ")"
    elseif f.reason and site then
      note = util.one_line(f.reason) .. " (" .. site .. ")"
    elseif f.reason then
      note = util.one_line(f.reason)
    end
    rows[#rows + 1] =
      { scope = f.scope or "", status = f.status or "", tokens = tokens, file = file, note = note, data = f }
  end
  local file_w = 4
  for _, r in ipairs(rows) do
    file_w = math.max(file_w, width(r.file))
  end
  local out = {}
  for _, r in ipairs(rows) do
    local head = ("  %s %s %s  "):format(pad_right(r.scope, 9), pad_right(r.status, 9), pad_left(r.tokens, 6))
    if r.note == "" then
      out[#out + 1] = { line = head .. r.file, file = r.data }
    elseif width(r.file) + width(r.note) > 100 then
      out[#out + 1] = { line = head .. r.file, file = r.data }
      out[#out + 1] = {
        line = ("  %s %s %s     %s"):format(string.rep(" ", 9), string.rep(" ", 9), string.rep(" ", 6), r.note),
        file = r.data,
      }
    else
      out[#out + 1] = { line = head .. pad_right(r.file, file_w) .. "  " .. r.note, file = r.data }
    end
  end
  return out
end

---@param result table
---@return string[] lines
---@return table<integer, claude_context.PreviewItem> items
---@return { [1]: integer, [2]: integer, [3]: integer, [4]: string }[] highlights (line0, col, end_col, group)
function M.render(result)
  local lines, items, hls = {}, {}, {}
  local base = result.cwd
  local function add(line, item, hl)
    line = line:gsub("\n", " ")
    lines[#lines + 1] = line
    if item then
      items[#lines] = item
    end
    if hl then
      hls[#hls + 1] = { #lines - 1, 0, -1, hl }
    end
  end
  local cwd = util.display_path(result.cwd or "?", nil)
  local git
  if result.gitPending then
    git = "  (git: reading the status…)"
  elseif result.git then
    git = ("  (git: %s, %d changed)"):format(util.one_line(result.git.branch or "?"), result.git.changed or 0)
  else
    git = "  (not a git repository)"
  end
  local s = result.session
  if type(s) == "table" then
    add(
      ("Next request of chat session %s in %s%s"):format(tostring(s.sessionId):sub(1, 8), cwd, git),
      nil,
      "ClaudeContextTitle"
    )
    local lu = s.lastUsage
    local figures
    if s.estimated or type(lu) ~= "table" then
      figures = ("≈ %s tokens (an estimate: no answer yet)"):format(util.thousands(s.tokens))
    else
      figures = ("%s tokens (the API's figures for the last answer plus an estimate since; cache read %s, written %s)"):format(
        util.thousands(s.tokens),
        util.thousands(lu.cacheReadInputTokens),
        util.thousands(lu.cacheCreationInputTokens)
      )
    end
    add(
      ("  %d messages, %s%s"):format(s.messages or 0, figures, s.turnId and " · a turn is running" or ""),
      nil,
      "ClaudeContextHeader"
    )
  else
    add(("Context for a new session in %s%s"):format(cwd, git), nil, "ClaudeContextTitle")
  end
  add("")
  local files = result.files or {}
  if #files == 0 then
    add("  No instruction files found (CLAUDE.md, CLAUDE.local.md, .claude/rules/*.md, MEMORY.md).")
  else
    add(
      ("  %s %s %s  file"):format(pad_right("scope", 9), pad_right("status", 9), pad_left("tokens", 6)),
      nil,
      "ClaudeContextHeader"
    )
    for _, row in ipairs(M.file_rows(result)) do
      local f = row.file
      add(row.line, { kind = "file", path = f.path, data = f })
      local group = status_hl[f.status]
      if group then
        hls[#hls + 1] = { #lines - 1, 12, 12 + #(f.status or ""), group }
      end
    end
  end
  local t = result.totals or {}
  add("")
  M.render_totals(t, type(s) == "table", add)
  local near = t.tokens and t.autoCompactThreshold and t.tokens >= 0.9 * t.autoCompactThreshold
  add(
    ("  total ≈ %s tokens of %s (%.1f%%); auto-compaction at %s"):format(
      util.thousands(t.tokens or 0),
      util.thousands(t.window or 0),
      t.percent or 0,
      util.thousands(t.autoCompactThreshold or 0)
    ),
    nil,
    near and "ClaudeContextNear" or nil
  )
  -- Workspace trust: the folder's state and what waits for it (shown when there is something to
  -- say: a folder nobody was asked about with nothing waiting has no section).
  local trust = result.trust
  if type(trust) == "table" and (trust.state ~= "neverAsked" or #(trust.held or {}) > 0) then
    add("")
    add("Workspace trust: " .. util.one_line(trust.summary or trust.state or "?"), nil, "ClaudeContextSection")
    if trust.localTracked then
      add(
        "  .claude/settings.local.json is tracked by git: it is read as the repository's file, not yours",
        nil,
        "ClaudeContextWarning"
      )
    end
    local words =
      { waitingForTrust = "waiting", notTrusted = "not trusted", refused = "refused", notSupported = "not used" }
    for _, h in ipairs(trust.held or {}) do
      add(
        ("  %s %s (%s)  %s"):format(
          pad_right(words[h.status] or h.status or "?", 11),
          util.one_line(h.key or "?"),
          util.one_line(h.detail or ""),
          util.display_path(h.path or "?", base)
        ),
        { kind = "finding", path = h.path, line = h.line and (h.line - 1) or nil, data = h },
        h.status == "refused" and "ClaudeContextWarning" or nil
      )
      add("              " .. util.one_line(h.reason or ""), nil, "ClaudeContextHint")
    end
  end
  local attachments = result.attachments or {}
  if #attachments > 0 then
    add("")
    add(
      type(s) == "table" and "Attachments (the files open now add these to the next message)"
        or "Attachments (added when a touched file makes them apply)",
      nil,
      "ClaudeContextSection"
    )
    for _, a in ipairs(attachments) do
      add(
        ("  %s  %s tokens  because of %s"):format(
          util.display_path(a.path, base),
          util.thousands(a.tokens or 0),
          a.trigger and util.display_path(a.trigger, base) or "?"
        ),
        { kind = "attachment", path = a.path, text = a.text, data = a }
      )
    end
  end
  M.render_skills(result.skills, base, add)
  M.render_mcp(result.mcp, add)
  M.render_agents(result.agents, base, add)
  M.render_style(result.style, base, add)
  M.render_plugins(result.plugins, add)
  local hooks = result.hooks
  if type(hooks) == "table" then
    add("")
    local n = 0
    for _, h in ipairs(hooks.hooks or {}) do
      n = n + (h.status == "runs" and 1 or 0)
    end
    add(
      ("Hooks: %d configured, %d run%s; never run by the preview (H runs SessionStart and UserPromptSubmit once)"):format(
        #(hooks.hooks or {}),
        n,
        hooks.trusted and "" or " (this folder is not trusted: none runs until it is)"
      ),
      nil,
      "ClaudeContextSection"
    )
    for _, h in ipairs(hooks.hooks or {}) do
      local matcher = h.matcher == nil and "(all)" or (h.matcher == "" and '""' or util.one_line(h.matcher))
      local detail = {
        "event    " .. (h.event or "?"),
        "scope    " .. (h.scope or "?"),
        "status   " .. (h.status or "?") .. (h.reason and (": " .. h.reason) or ""),
        "matcher  " .. matcher,
        "command  " .. (h.command or ""),
        "timeout  " .. (h.timeout and (tostring(h.timeout) .. " s") or "default"),
        "lands    " .. (h.lands or ""),
        "file     " .. util.display_path(h.path or "?", base) .. (h.line and (":" .. (h.line + 1)) or ""),
      }
      add(
        ("  %s %s %s %s  %s"):format(
          pad_right(h.event or "?", 18),
          pad_right(h.scope or "?", 8),
          pad_right(h.status or "?", 10),
          pad_right(matcher, 9),
          util.one_line(h.command or "")
        ),
        { kind = "hook", path = h.path, line = h.line, text = table.concat(detail, "\n"), data = h },
        h.status == "runs" and nil or "ClaudeContextHint"
      )
    end
    local run = hooks.run
    if type(run) == "table" then
      add("  " .. util.one_line(run.note or ""), nil, "ClaudeContextWarning")
      if run.blocked then
        add(
          "  the prompt would be blocked: " .. util.one_line(run.blocked),
          { kind = "hookText", text = run.blocked, data = run },
          "ClaudeContextWarning"
        )
      end
      for _, ht in ipairs(run.texts or {}) do
        add(
          ("  %s %s tokens  %s"):format(
            pad_right(ht.event or "?", 18),
            pad_left(util.thousands(ht.tokens or 0), 6),
            util.one_line(ht.text or "")
          ),
          { kind = "hookText", text = ht.text, data = ht }
        )
      end
      for _, note in ipairs(run.notes or {}) do
        add("  note: " .. util.one_line(note), nil, "ClaudeContextHint")
      end
    end
  end
  local pending = result.pending or {}
  if #pending > 0 then
    add("")
    add(
      type(s) == "table"
          and "Pending instruction edits (this session keeps what it started with; a new session sees them)"
        or "Pending instruction edits (unsaved)",
      nil,
      "ClaudeContextSection"
    )
    for _, p in ipairs(pending) do
      add(
        ("  %s  %s"):format(util.display_path(p.path, base), util.one_line(p.message or "")),
        { kind = "pending", path = p.path, data = p },
        "ClaudeContextWarning"
      )
    end
  end
  local perms = result.permissions
  if type(perms) == "table" then
    add("")
    local ms = type(perms.modeSource) == "table" and perms.modeSource or {}
    local from = ms.from == "settings"
        and ("defaultMode in %s:%d"):format(util.display_path(ms.file or "?", base), (ms.line or 0) + 1)
      or ms.from == "commandLine" and "requested"
      or ms.from == "session" and "switched in the session"
      or "no setting"
    add(
      ("Permissions: mode %s (%s); folder %s"):format(
        tostring(perms.mode),
        from,
        perms.trusted and "trusted" or "not trusted"
      ),
      nil,
      "ClaudeContextSection"
    )
    for _, r in ipairs(perms.rules or {}) do
      local src = r.source or {}
      local at = src.file and (util.display_path(src.file, base) .. (src.line and (":" .. src.line) or ""))
        or "command line"
      add(
        ("  %s %s  %s%s"):format(
          pad_right(r.kind or "?", 5),
          util.one_line(r.rule or ""),
          at,
          r.inert and "  (matches nothing)" or ""
        ),
        src.file and { kind = "finding", path = src.file, line = src.line and (src.line - 1) or nil, data = r } or nil,
        r.kind == "deny" and "ClaudeContextError" or nil
      )
    end
    for _, d in ipairs(perms.additionalDirectories or {}) do
      add(("  additional working directory %s"):format(util.display_path(d.path or "?", base)))
    end
    for _, n in ipairs(perms.notices or {}) do
      add("  note: " .. util.one_line(n.message or ""), nil, "ClaudeContextHint")
    end
  end
  local findings = result.findings or {}
  if #findings > 0 then
    add("")
    add("Findings", nil, "ClaudeContextSection")
    for _, f in ipairs(findings) do
      local sev = f.severity or "info"
      add(
        ("  %-7s %s:%d  %s"):format(
          sev,
          util.display_path(f.path or "?", base),
          (f.line or 0) + 1,
          util.one_line(f.message or "")
        ),
        { kind = "finding", path = f.path, line = f.line, data = f },
        sev == "error" and "ClaudeContextError" or sev == "warning" and "ClaudeContextWarning" or "ClaudeContextHint"
      )
    end
  end
  local blocks = result.blocks or {}
  if #blocks > 0 then
    add("")
    add("Blocks (K shows the exact text)", nil, "ClaudeContextSection")
    for _, b in ipairs(blocks) do
      add(
        ("  %s %s %s tokens"):format(
          pad_right(b.kind or "?", 14),
          pad_right(b.segment or "", 8),
          pad_left(util.thousands(b.tokens or 0), 7)
        ),
        { kind = "block", text = b.text, data = b }
      )
    end
  end
  add("")
  add("<CR> open file   K exact text   r refresh   q close", nil, "ClaudeContextHint")
  return lines, items, hls
end

local listed_words = {
  full = "listed",
  reduced = "name only (over the listing budget)",
  nameOnly = "name only (skillOverrides)",
  hidden = "not listed (disable-model-invocation)",
  off = "not listed (skillOverrides)",
  conditional = "listed when a touched file matches",
}

--- The parts of the total, one row each, adding up to it: the system prompt (the skills listing,
--- the MCP servers' parts and the agent types listing are in it), the tool definitions every request carries, the
--- instructions and git blocks, the attachments, and a session's conversation.
---@param t table the result's `totals`
---@param session boolean
---@param add fun(line: string, item: claude_context.PreviewItem?, hl: string?)
function M.render_totals(t, session, add)
  local parts = {
    { "system prompt", t.system },
    { "tool definitions", t.tools },
    { "instructions block", t.instructions },
    { "git block", t.git },
    { "attachments", t.attachments },
  }
  if session then
    parts[#parts + 1] = { "conversation", t.conversation }
  end
  local digits = 0
  for _, p in ipairs(parts) do
    digits = math.max(digits, #util.thousands(p[2] or 0))
  end
  for _, p in ipairs(parts) do
    local line = ("  %-19s %" .. digits .. "s tokens"):format(p[1], util.thousands(p[2] or 0))
    if p[1] == "system prompt" and ((t.skills or 0) > 0 or (t.mcp or 0) > 0 or (t.agents or 0) > 0) then
      line = line
        .. ("   of which the skills listing %s, MCP servers %s, the agent types listing %s"):format(
          util.thousands(t.skills or 0),
          util.thousands(t.mcp or 0),
          util.thousands(t.agents or 0)
        )
    end
    add(line)
  end
end

local mcp_hl = {
  failed = "ClaudeContextWarning",
  ["not approved"] = "ClaudeContextHint",
  ["waiting for trust"] = "ClaudeContextHint",
  ["not trusted"] = "ClaudeContextHint",
  disabled = "ClaudeContextHint",
  unsupported = "ClaudeContextHint",
}

--- The MCP servers section: each server with its status, scope, what it adds now and once its
--- tools are loaded, and why (who approved or disabled it, the failure).
---@param mcp table? the result's `mcp`
---@param add fun(line: string, item: claude_context.PreviewItem?, hl: string?)
function M.render_mcp(mcp, add)
  if type(mcp) ~= "table" or type(mcp.servers) ~= "table" or #mcp.servers == 0 then
    return
  end
  add("")
  add(
    ("MCP servers (%s tokens now; %s more if every tool is loaded)"):format(
      util.thousands(mcp.tokens or 0),
      util.thousands(mcp.definitionTokens or 0)
    ),
    {
      kind = "mcp",
      text = table.concat(
        vim.tbl_filter(function(x)
          return type(x) == "string"
        end, { mcp.deferredTools, mcp.instructions, mcp.connectingNote, mcp.failedNote }),
        "\n\n"
      ),
      data = mcp,
    },
    "ClaudeContextSection"
  )
  for _, sv in ipairs(mcp.servers) do
    local tools = type(sv.tools) == "table" and (" · %d tools"):format(#sv.tools) or ""
    add(
      ("  %s  %s  %s  %s tokens%s  %s"):format(
        util.one_line(sv.name or "?"),
        sv.status or "?",
        sv.scope or "?",
        util.thousands((sv.nameTokens or 0) + (sv.instructionsTokens or 0)),
        tools,
        util.one_line(sv.reason or "")
      ),
      { kind = "mcp", path = sv.path, data = sv },
      mcp_hl[sv.status]
    )
  end
end

local agent_scope = { builtIn = "built-in", plugin = "plugin", user = "user", project = "project" }

--- The agent types section: the listing's tokens (`K` shows it), then one row per agent with its
--- scope, tools and the tokens of its line (`K`: its description and details; `<CR>`: its file),
--- then the agents another of the same name replaced.
---@param ag table? the result's `agents`
---@param base string?
---@param add fun(line: string, item: claude_context.PreviewItem?, hl: string?)
function M.render_agents(ag, base, add)
  if type(ag) ~= "table" then
    return
  end
  local agents, shadowed = ag.agents or {}, ag.shadowed or {}
  if #agents == 0 and #shadowed == 0 then
    return
  end
  add("")
  add(
    ("Agents (%d types; listing %s tokens; K shows it)"):format(#agents, util.thousands(ag.tokens or 0)),
    { kind = "agents", text = ag.listing or "", data = ag },
    "ClaudeContextSection"
  )
  for _, a in ipairs(agents) do
    local detail = {
      a.description or "",
      "",
      "scope        " .. (agent_scope[a.scope] or tostring(a.scope)),
      "tools        " .. (a.tools or ""),
      "model        " .. (a.model or "(default)"),
      "listing      " .. util.thousands(a.tokens or 0) .. " tokens",
      "when it runs " .. util.thousands(a.bodyTokens or 0) .. " tokens of system prompt",
    }
    if a.path then
      detail[#detail + 1] = "file         " .. util.display_path(a.path, base)
    end
    add(
      ("  %s  %s  tools: %s  %s tokens"):format(
        util.one_line(a.name or "?"),
        agent_scope[a.scope] or tostring(a.scope),
        util.one_line(a.tools or ""),
        util.thousands(a.tokens or 0)
      ),
      { kind = "agent", path = a.path, text = table.concat(detail, "\n"), data = a }
    )
  end
  for _, sh in ipairs(shadowed) do
    add(
      ("  %s  %s  replaced by the %s one"):format(
        util.one_line(sh.name or "?"),
        agent_scope[sh.scope] or tostring(sh.scope),
        agent_scope[sh.by] or tostring(sh.by)
      ),
      { kind = "agent", path = sh.file, data = sh },
      "ClaudeContextHint"
    )
  end
end

--- The output style section: its name and source, what it adds to the system prompt and after
--- every tool result, the setting that chose it, an unknown name (the default applies) and
--- whether it leaves the coding instructions out. `<CR>` opens its file.
---@param st table? the result's `style`
---@param base string?
---@param add fun(line: string, item: claude_context.PreviewItem?, hl: string?)
function M.render_style(st, base, add)
  if type(st) ~= "table" then
    return
  end
  add("")
  add(
    ("Output style: %s%s  %s tokens, +%s after every tool result and later prompt"):format(
      util.one_line(st.name or "default"),
      st.source and (" (" .. st.source .. ")") or "",
      util.thousands(st.tokens or 0),
      util.thousands(st.reminderTokens or 0)
    ),
    { kind = "style", path = st.path, data = st },
    "ClaudeContextSection"
  )
  if st.setting then
    add(
      ('  outputStyle "%s"%s'):format(
        util.one_line(st.setting),
        st.settingPath and ("  " .. util.display_path(st.settingPath, base)) or ""
      ),
      st.settingPath and { kind = "style", path = st.settingPath, data = st } or nil
    )
  end
  if st.unknown then
    add(
      ("  unknown name: default applies (available: %s)"):format(table.concat(st.available or {}, ", ")),
      nil,
      "ClaudeContextWarning"
    )
  end
  if st.dropsCodingInstructions then
    add("  coding instructions left out (no keep-coding-instructions: true)", nil, "ClaudeContextHint")
  end
end

--- The plugins section: each enabled plugin with what it adds to every request, in tokens, and
--- its parts (skills, MCP servers, output styles, hooks, files not read); then the enabled ones
--- not loaded, with why.
---@param pl table? the result's `plugins`
---@param add fun(line: string, item: claude_context.PreviewItem?, hl: string?)
function M.render_plugins(pl, add)
  if type(pl) ~= "table" then
    return
  end
  local plugins, not_loaded = pl.plugins or {}, pl.notLoaded or {}
  if #plugins == 0 and #not_loaded == 0 then
    return
  end
  add("")
  add(
    ("Plugins (%d loaded%s; %s tokens)"):format(
      #plugins,
      #not_loaded > 0 and (", %d not loaded"):format(#not_loaded) or "",
      util.thousands(pl.tokens or 0)
    ),
    nil,
    "ClaudeContextSection"
  )
  local by = { user = "enabled by you", repository = "enabled by the repository", flag = "--plugin-dir" }
  for _, g in ipairs(plugins) do
    local item = { kind = "plugin", data = g }
    add(
      ("  %s  %s tokens  %s"):format(
        util.one_line(g.id or g.name or "?"),
        util.thousands(g.tokens or 0),
        by[g.enabledBy] or tostring(g.enabledBy)
      ),
      item
    )
    for _, part in ipairs({ { "skill", g.skills }, { "MCP server", g.servers }, { "output style", g.styles } }) do
      for _, x in ipairs(part[2] or {}) do
        add(("    %s %s  %s tokens"):format(part[1], util.one_line(x.name or "?"), util.thousands(x.tokens or 0)), item)
      end
    end
    for _, h in ipairs(g.hooks or {}) do
      add(("    hook %s  (output unknown until it runs)"):format(util.one_line(h)), item)
    end
    for _, f in ipairs(g.skipped or {}) do
      add(
        ("    not read (links outside the plugin): %s"):format(util.display_path(f, g.root)),
        item,
        "ClaudeContextWarning"
      )
    end
  end
  for _, n in ipairs(not_loaded) do
    add(
      ("  %s  not loaded: %s"):format(util.one_line(n.id or "?"), util.one_line(n.reason or "")),
      { kind = "plugin", data = n },
      "ClaudeContextHint"
    )
  end
end

--- The skills section: one row per skill (how it is listed; a conditional skill with its
--- `paths:`, "activated" once a touched file matched), then the messages touched files add.
---@param sk table? the result's `skills`
---@param base string?
---@param add fun(line: string, item: claude_context.PreviewItem?, hl: string?)
function M.render_skills(sk, base, add)
  if type(sk) ~= "table" then
    return
  end
  local skills, discovered, activated = sk.skills or {}, sk.discovered or {}, sk.activated or {}
  if #skills == 0 and #discovered == 0 and #activated == 0 then
    return
  end
  local on = {}
  for _, a in ipairs(activated) do
    for _, name in ipairs(a.skills or {}) do
      on[name] = true
    end
  end
  add("")
  add(
    ("Skills (listing %s tokens; K shows it)"):format(util.thousands(sk.tokens or 0)),
    { kind = "skills", text = sk.listing or "", data = sk },
    "ClaudeContextSection"
  )
  for _, k in ipairs(skills) do
    local words = listed_words[k.listed] or tostring(k.listed)
    if k.listed == "conditional" and on[k.name] then
      words = "activated by a touched file"
    end
    local paths = (k.paths and #k.paths > 0) and ("  paths: " .. table.concat(k.paths, ", ")) or ""
    local name = k.alias and ("%s (%s)"):format(k.name, k.alias) or k.name
    add(
      ("  %s  %s  %s tokens%s"):format(util.one_line(name), words, util.thousands(k.tokens or 0), util.one_line(paths)),
      { kind = "skill", path = k.path, data = k },
      (k.listed == "conditional" and not on[k.name] or k.listed == "hidden" or k.listed == "off")
          and "ClaudeContextHint"
        or nil
    )
  end
  for _, d in ipairs(discovered) do
    add(
      ("  skills found below cwd  %s tokens  because of %s"):format(
        util.thousands(d.tokens or 0),
        util.display_path(d.trigger or "?", base)
      ),
      { kind = "skills", path = d.trigger, text = d.text, data = d }
    )
  end
  for _, a in ipairs(activated) do
    add(
      ("  conditional skills activated  %s tokens  because of %s"):format(
        util.thousands(a.tokens or 0),
        util.display_path(a.trigger or "?", base)
      ),
      { kind = "skills", path = a.trigger, text = a.text, data = a }
    )
  end
end

local function close()
  if state and vim.api.nvim_win_is_valid(state.win) then
    pcall(vim.api.nvim_win_close, state.win, true)
  end
  state = nil
end
M.close = close

---@param st claude_context.PreviewState
---@param result table
local function fill(st, result)
  local lines, items, hls = M.render(result)
  st.items = items
  st.result = result
  vim.bo[st.buf].modifiable = true
  vim.api.nvim_buf_set_lines(st.buf, 0, -1, false, lines)
  vim.bo[st.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(st.buf, ns, 0, -1)
  for _, h in ipairs(hls) do
    pcall(vim.api.nvim_buf_set_extmark, st.buf, ns, h[1], h[2], {
      end_row = h[3] == -1 and h[1] + 1 or h[1],
      end_col = h[3] == -1 and 0 or h[3],
      hl_group = h[4],
      strict = false,
    })
  end
  if vim.api.nvim_win_is_valid(st.win) then
    local o = require("claude_context.config").options.float
    local maxw = math.floor(vim.o.columns * ((o.width or 0.8) <= 1 and (o.width or 0.8) or 1))
    local maxh = math.floor((vim.o.lines - 2) * ((o.height or 0.8) <= 1 and (o.height or 0.8) or 1))
    local w = 20
    for _, l in ipairs(lines) do
      w = math.max(w, vim.fn.strdisplaywidth(l) + 1)
    end
    w = math.min(w, math.max(maxw, 20))
    local h = math.min(#lines, math.max(maxh, 5))
    pcall(vim.api.nvim_win_set_config, st.win, {
      relative = "editor",
      width = w,
      height = h,
      row = math.max(0, math.floor((vim.o.lines - h) / 2) - 1),
      col = math.max(0, math.floor((vim.o.columns - w) / 2)),
    })
  end
end

--- The item under the cursor.
---@return claude_context.PreviewItem?
local function item_at_cursor()
  if not state then
    return nil
  end
  local line = vim.api.nvim_win_get_cursor(state.win)[1]
  return state.items[line]
end

local function open_item()
  local it = item_at_cursor()
  if not it or not it.path then
    return
  end
  local origin = state and state.origin
  close()
  if origin and vim.api.nvim_win_is_valid(origin) then
    vim.api.nvim_set_current_win(origin)
  end
  vim.cmd.edit(vim.fn.fnameescape(it.path))
  if it.line then
    pcall(vim.api.nvim_win_set_cursor, 0, { it.line + 1, 0 })
  end
end

--- A second float with `lines`, closed by `q`.
---@param title string
---@param lines string[]
---@param ft? string
local function show_text(title, lines, ft)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  if ft then
    vim.bo[buf].filetype = ft
  end
  local w = math.min(math.max(40, math.floor(vim.o.columns * 0.7)), vim.o.columns - 4)
  local h = math.min(math.max(#lines, 1), math.max(5, math.floor((vim.o.lines - 2) * 0.7)))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = w,
    height = h,
    row = math.floor((vim.o.lines - h) / 2),
    col = math.floor((vim.o.columns - w) / 2),
    border = require("claude_context.config").options.float.border,
    title = " " .. title .. " ",
    style = "minimal",
  })
  vim.wo[win].wrap = true
  vim.keymap.set("n", "q", function()
    pcall(vim.api.nvim_win_close, win, true)
  end, { buffer = buf, nowait = true, desc = "Close" })
  vim.keymap.set("n", "<Esc>", function()
    pcall(vim.api.nvim_win_close, win, true)
  end, { buffer = buf, nowait = true, desc = "Close" })
end

local function show_item()
  local it = item_at_cursor()
  if not it then
    return
  end
  local base = state and state.result and state.result.cwd
  if it.text then
    local title = it.kind == "block" and (it.data.kind or "block")
      or it.kind == "skills" and "skills"
      or it.kind == "mcp" and "MCP servers"
      or it.kind == "agents" and "agent types"
      or it.kind == "agent" and ((it.data.name or "agent") .. " agent")
      or (it.kind == "hook" or it.kind == "hookText") and ((it.data.event or "hook") .. " hook")
      or util.display_path(it.path or "", base)
    show_text(title, util.lines(it.text), "markdown")
    return
  end
  local d = it.data or {}
  local lines = {}
  for _, k in ipairs({
    "id",
    "name",
    "path",
    "command",
    "scope",
    "status",
    "source",
    "listed",
    "tokens",
    "reason",
    "description",
    "includedFrom",
    "globs",
    "paths",
    "matchedGlob",
    "message",
    "code",
    "severity",
    "listedOn",
    "tools",
    "notes",
    "enabledBy",
    "root",
    "setting",
    "reminderTokens",
    "dropsCodingInstructions",
    "unknown",
  }) do
    local v = d[k]
    if v ~= nil then
      if type(v) == "table" then
        v = table.concat(vim.tbl_map(tostring, v), ", ")
      end
      lines[#lines + 1] = ("%-13s %s"):format(k, util.one_line(tostring(v)))
    end
  end
  show_text(util.display_path(it.path or "?", base), lines)
end

---@param st claude_context.PreviewState
local function request(st)
  local client = vim.lsp.get_client_by_id(st.client_id)
  if not client then
    return
  end
  client:request("context/preview", st.params, function(err, result)
    if state ~= st or not vim.api.nvim_buf_is_valid(st.buf) then
      return
    end
    if err then
      vim.bo[st.buf].modifiable = true
      vim.api.nvim_buf_set_lines(
        st.buf,
        0,
        -1,
        false,
        { "context/preview failed: " .. util.one_line(err.message or tostring(err)) }
      )
      vim.bo[st.buf].modifiable = false
      return
    end
    local cursor = vim.api.nvim_win_is_valid(st.win) and vim.api.nvim_win_get_cursor(st.win)
    util.safe("rendering the preview", fill, st, result)
    if cursor then
      pcall(vim.api.nvim_win_set_cursor, st.win, cursor)
    end
  end)
end

---@class claude_context.PreviewOpts
---@field uri? string the document (default: the current buffer)
---@field client_id? integer
---@field session? string|false a chat session (default: the project's chat session, if any; false: a new session)

--- Opens the float.
---@param opts? claude_context.PreviewOpts
function M.open(opts)
  opts = opts or {}
  define_highlights()
  local cur = vim.api.nvim_get_current_buf()
  local lsp = require("claude_context.lsp")
  local client = opts.client_id and vim.lsp.get_client_by_id(opts.client_id) or lsp.client_for(cur)
  if not client then
    util.notify(
      "no server for this buffer: it is not in a project (no .git or CLAUDE.md above it), or the server did not start (:checkhealth claude_context)",
      vim.log.levels.WARN
    )
    return
  end
  local params = {}
  local uri = opts.uri
  if not uri and lsp.buf_path(cur) then
    uri = vim.uri_from_bufnr(cur)
  end
  if uri then
    params.textDocument = { uri = uri }
  end
  local chat = package.loaded["claude_context.chat"]
  local session = opts.session
  if session == nil and chat then
    session = chat.session_of_client(client.id)
  end
  if session then
    params.sessionId = session
  end
  close()
  local origin = vim.api.nvim_get_current_win()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "claude_context_preview"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "asking the server…" })
  vim.bo[buf].modifiable = false
  local w = math.floor(vim.o.columns * 0.6)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = math.max(w, 20),
    height = 3,
    row = math.floor(vim.o.lines / 2) - 2,
    col = math.floor((vim.o.columns - w) / 2),
    border = require("claude_context.config").options.float.border,
    title = " claude-context ",
    style = "minimal",
  })
  vim.wo[win].cursorline = true
  vim.wo[win].wrap = false
  local st = { win = win, buf = buf, origin = origin, client_id = client.id, params = params, items = {} }
  state = st
  local map = function(lhs, fn, desc)
    vim.keymap.set("n", lhs, function()
      util.safe(desc, fn)
    end, { buffer = buf, nowait = true, desc = desc })
  end
  map("q", close, "Close")
  map("<Esc>", close, "Close")
  map("<CR>", open_item, "Open the file under the cursor")
  map("K", show_item, "Show the exact text")
  map("r", function()
    st.params.runHooks = nil
    request(st)
  end, "Refresh")
  map("H", function()
    st.params.runHooks = true
    request(st)
    st.params.runHooks = nil
  end, "Run the SessionStart and UserPromptSubmit hooks once")
  vim.api.nvim_create_autocmd("WinClosed", {
    pattern = tostring(win),
    once = true,
    callback = function()
      if state == st then
        state = nil
      end
    end,
  })
  request(st)
end

--- The float's state (tests, and `context/changed`).
---@return claude_context.PreviewState?
function M.state()
  return state
end

--- `context/changed`: the open float asks again.
function M.on_changed()
  if state and vim.api.nvim_win_is_valid(state.win) then
    request(state)
  end
end

return M
