-- The context, one glance away: attach on a source file, its rule in the float, the float's rows
-- equal to `claude-context preview`'s, refresh on context/changed, the statusline, the code lens.
local H = require("helpers")

local root

local function project()
  return H.project({
    ["CLAUDE.md"] = "# Shop\n\nBe brief.\n@docs/style.md\n@docs/missing.md\n",
    ["docs/style.md"] = "Two spaces.\n",
    [".claude/rules/typescript.md"] = "---\npaths: src/**/*.ts\n---\nTypeScript: strict mode.\n",
    [".claude/rules/python.md"] = '---\npaths: "**/*.py"\n---\nPython: type hints.\n',
    ["src/api/handler.ts"] = "export const handler = 1;\n",
    ["src/api/CLAUDE.md"] = "API rules.\n",
    ["notes.unknownext"] = "no filetype here\n",
    [".claude/skills/always/SKILL.md"] = "---\ndescription: ALWAYS\n---\nBody.\n",
    [".claude/skills/api-cond/SKILL.md"] = '---\ndescription: API COND\npaths: "src/api/**"\n---\nBody.\n',
    [".claude/skills/web-cond/SKILL.md"] = "---\ndescription: WEB COND\npaths: web/**\n---\nBody.\n",
    [".mcp.json"] = '{"mcpServers":{"tracker":{"command":"tracker-mcp","args":["--stdio"]}}}',
  })
end

local function float_state()
  local st
  H.wait(20000, function()
    st = require("claude_context.preview").state()
    return st and st.result
  end, "the float's preview")
  return st
end

describe("the context float", function()
  setup(function()
    root = project()
    H.setup(nil)
  end)

  it("attaches on a source file (and on a file with no filetype), one server for the project", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    local c = H.client()
    assert.are.equal(root, c.root_dir)
    vim.cmd.edit(root .. "/notes.unknownext")
    assert.are.equal("", vim.bo.filetype)
    local c2 = H.client()
    assert.are.equal(c.id, c2.id)
    -- A nested CLAUDE.md is not a second project.
    vim.cmd.edit(root .. "/src/api/CLAUDE.md")
    assert.are.equal(c.id, H.client().id)
    assert.are.equal(1, #vim.lsp.get_clients({ name = "claude_context" }))
  end)

  it("shows the rule that applies to the buffer, with the rows `claude-context preview` prints", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    H.client()
    vim.cmd("ClaudeContext")
    local st = float_state()
    local text = H.text(st.buf)
    assert.matches('attached%s+%d+%s+%.claude/rules/typescript%.md%s+paths "src/%*%*/%*%.ts" matched', text)
    -- The same rows as the command line, touching the files open in the editor.
    local args = { "preview", "--cwd", root }
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local name = vim.api.nvim_buf_get_name(b)
      if vim.api.nvim_buf_is_loaded(b) and name:sub(1, #root) == root then
        -- The server touches the document first, then the other open files.
        if name == root .. "/src/api/handler.ts" then
          table.insert(args, 4, "--file")
          table.insert(args, 5, name)
        else
          vim.list_extend(args, { "--file", name })
        end
      end
    end
    local json = vim.json.decode(H.cli(root, vim.list_extend(vim.deepcopy(args), { "--json" })))
    local rows = {}
    for lnum, item in pairs(st.items) do
      if item.kind == "file" and not rows[item.path] then
        rows[item.path] = lnum
      end
    end
    local float_files = {}
    for lnum = 1, #H.lines(st.buf) do
      local it = st.items[lnum]
      if it and it.kind == "file" and rows[it.path] == lnum then
        float_files[#float_files + 1] =
          { path = it.data.path, status = it.data.status, scope = it.data.scope, tokens = it.data.tokens }
      end
    end
    local cli_files = vim.tbl_map(function(f)
      return { path = f.path, status = f.status, scope = f.scope, tokens = f.tokens }
    end, json.files)
    assert.are.same(cli_files, float_files)
    -- And the text of the rows is the command line's table, line for line.
    local table_text = H.cli(root, args)
    local cli_rows = {}
    local inside = false
    for _, l in ipairs(vim.split(table_text, "\n")) do
      if l:match("^  scope%s+status%s+tokens%s+file$") then
        inside = true
      elseif inside and l == "" then
        break
      elseif inside then
        cli_rows[#cli_rows + 1] = l
      end
    end
    local shown = {}
    for lnum, l in ipairs(H.lines(st.buf)) do
      if st.items[lnum] and st.items[lnum].kind == "file" then
        shown[#shown + 1] = l
      end
    end
    assert.is_true(#cli_rows >= 6)
    assert.are.same(cli_rows, shown)
    assert.matches("auto%-compaction at", text)
    assert.matches("include not found", text)
  end)

  it("shows every part of the total, tool definitions included, adding up to it; and the MCP servers", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    H.client()
    vim.cmd("ClaudeContext")
    local st = float_state()
    local text = H.text(st.buf)
    local function n(s)
      return tonumber((s:gsub(",", "")))
    end
    local sum, names = 0, {}
    for name, figure in text:gmatch("\n  ([a-z][a-z ]-)%s+([%d,]+) tokens") do
      if
        name == "system prompt"
        or name == "tool definitions"
        or name == "instructions block"
        or name == "git block"
        or name == "attachments"
      then
        sum = sum + n(figure)
        names[#names + 1] = name
      end
    end
    assert.are.same({ "system prompt", "tool definitions", "instructions block", "git block", "attachments" }, names)
    local total = text:match("total ≈ ([%d,]+) tokens")
    assert.is_not_nil(total, text)
    assert.are.equal(n(total), sum)
    assert.is_true(n(text:match("tool definitions%s+([%d,]+)")) > 500, "the tools' definitions are counted")
    -- The project's MCP server, not approved yet, with why; K shows its command.
    assert.matches("\nMCP servers %(", text)
    local line
    for lnum, it in pairs(st.items) do
      if it.kind == "mcp" and it.data and it.data.name == "tracker" then
        line = lnum
      end
    end
    assert.is_not_nil(line, text)
    -- A folder nobody was asked about yet: the project's server waits for trust first.
    assert.matches("^  tracker  waiting for trust  project  0 tokens  ", H.lines(st.buf)[line])
    vim.api.nvim_win_set_cursor(st.win, { line, 0 })
    vim.api.nvim_feedkeys("K", "x", false)
    assert.matches("command%s+tracker%-mcp %-%-stdio", H.text(vim.api.nvim_get_current_buf()))
    vim.api.nvim_feedkeys("q", "x", false)
    require("claude_context.preview").close()
  end)

  it("shows the skills: a conditional one activated by the buffer, one still waiting, the message", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    H.client()
    vim.cmd("ClaudeContext")
    local st = float_state()
    local text = H.text(st.buf)
    assert.matches("\n  always  listed  %d+ tokens", text)
    assert.matches("\n  api%-cond  activated by a touched file  0 tokens  paths: src/api/%*%*", text)
    assert.matches("\n  web%-cond  listed when a touched file matches  0 tokens  paths: web/%*%*", text)
    local line
    for lnum, it in pairs(st.items) do
      if it.kind == "skills" and it.text and it.text:find("API COND", 1, true) then
        line = lnum
      end
    end
    assert.is_not_nil(line, text)
    assert.matches("conditional skills activated", H.lines(st.buf)[line])
    vim.api.nvim_win_set_cursor(st.win, { line, 0 })
    vim.api.nvim_feedkeys("K", "x", false)
    assert.are.equal(
      "The following skills are available for use with the Skill tool:\n\n- api-cond: API COND",
      H.text(vim.api.nvim_get_current_buf())
    )
    vim.api.nvim_feedkeys("q", "x", false)
    require("claude_context.preview").close()
  end)

  it("K shows a block's exact text, <CR> opens the file under the cursor, q closes", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    vim.cmd("ClaudeContext")
    local st = float_state()
    local block_line, rule_line
    for lnum, it in pairs(st.items) do
      if it.kind == "block" and it.data.kind == "instructions" then
        block_line = lnum
      end
      if it.kind == "file" and it.path == root .. "/.claude/rules/typescript.md" then
        rule_line = lnum
      end
    end
    assert.is_not_nil(block_line)
    vim.api.nvim_win_set_cursor(st.win, { block_line, 0 })
    vim.api.nvim_feedkeys("K", "x", false)
    local shown = H.text(vim.api.nvim_get_current_buf())
    assert.matches("Be brief.", shown, 1, true)
    local block
    for _, b in ipairs(st.result.blocks) do
      if b.kind == "instructions" then
        block = b
      end
    end
    assert.are.equal(block.text, shown)
    vim.api.nvim_feedkeys("q", "x", false)
    vim.api.nvim_set_current_win(st.win)
    vim.api.nvim_win_set_cursor(st.win, { rule_line, 0 })
    vim.api.nvim_feedkeys("\r", "x", false)
    assert.are.equal(root .. "/.claude/rules/typescript.md", vim.api.nvim_buf_get_name(0))
    assert.is_nil(require("claude_context.preview").state())
  end)

  it("refreshes on context/changed: a rule edited on disk shows in the open float", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    vim.cmd("ClaudeContext")
    local st = float_state()
    local before = st.result
    local tokens
    for _, f in ipairs(before.files) do
      if f.path == root .. "/.claude/rules/python.md" then
        tokens = f.tokens
      end
    end
    -- Not open in Neovim: only the watcher can tell the server.
    H.write(
      root .. "/.claude/rules/python.md",
      '---\npaths: "**/*.py"\n---\n' .. string.rep("Python: type hints everywhere. ", 40) .. "\n"
    )
    H.wait(15000, function()
      local now = require("claude_context.preview").state()
      if not now or not now.result or now.result == before then
        return false
      end
      for _, f in ipairs(now.result.files) do
        if f.path == root .. "/.claude/rules/python.md" and f.tokens > tokens then
          return true
        end
      end
    end, "the float to show the rule's new size")
    require("claude_context.preview").close()
  end)

  it("gives the statusline tokens / window and the pending edits, without a request per redraw", function()
    vim.cmd.edit(root .. "/src/api/handler.ts")
    local c = H.client()
    H.wait(10000, function()
      return require("claude_context").status():match("^✻ ≈[%d.]+k?/1M [%d.]+%%$")
    end, function()
      return "a status, got " .. vim.inspect(require("claude_context").status())
    end)
    -- No request on redraw.
    local sent = 0
    local orig = c.request
    c.request = function(self, method, ...)
      sent = sent + 1
      return orig(self, method, ...)
    end
    for _ = 1, 50 do
      require("claude_context").status()
    end
    c.request = orig
    assert.are.equal(0, sent)
    -- An unsaved instruction edit is pending.
    vim.cmd.edit(root .. "/CLAUDE.md")
    vim.api.nvim_buf_set_lines(0, -1, -1, false, { "A new line nobody saved." })
    vim.cmd.edit(root .. "/src/api/handler.ts")
    H.wait(10000, function()
      return require("claude_context").status():match("· 1 pending$")
    end, function()
      return "1 pending, got " .. require("claude_context").status()
    end)
  end)

  it("runs the code lens command through vim.lsp.commands", function()
    vim.cmd.edit(root .. "/.claude/rules/typescript.md")
    local c = H.client()
    local buf = vim.api.nvim_get_current_buf()
    local lenses
    H.wait(10000, function()
      lenses = vim.lsp.codelens.get(buf)
      return lenses and #lenses > 0 and lenses[1].command
    end, "a code lens")
    local lens = lenses[1]
    assert.are.equal("claudeContext.showPreview", lens.command.command)
    assert.matches("tokens", lens.command.title)
    require("claude_context.preview").close()
    vim.lsp.codelens.run()
    local st = float_state()
    assert.are.equal(vim.uri_from_fname(root .. "/.claude/rules/typescript.md"), st.params.textDocument.uri)
    assert.are.equal(c.id, st.client_id)
    require("claude_context.preview").close()
  end)
end)

describe("watched files", function()
  it("never walks the home folder, and a change to the user's files there reaches the float", function()
    local walked = {}
    local wf = require("vim.lsp._watchfiles")
    local orig = wf._watchfunc
    wf._watchfunc = function(path, opts, cb)
      walked[#walked + 1] = path
      return orig(path, opts, cb)
    end
    local home = vim.env.HOME
    vim.fn.mkdir(home .. "/.claude", "p")
    for _, c in ipairs(vim.lsp.get_clients({ name = "claude_context" })) do
      c:stop(true)
    end
    H.wait(5000, function()
      return #vim.lsp.get_clients({ name = "claude_context" }) == 0
    end, "the old server to stop")
    vim.cmd("ClaudeContext restart")
    local c = H.client()
    local regs
    H.wait(10000, function()
      regs = c.dynamic_capabilities.capabilities["workspace/didChangeWatchedFiles"]
      return regs and #regs > 0
    end, "the server's watcher registration")
    wf._watchfunc = orig
    -- The server watches the places outside the workspace (home, ~/.claude) itself: every
    -- pattern it registers with the client is a workspace pattern (no base folder).
    for _, r in ipairs(regs) do
      for _, w in ipairs(vim.tbl_get(r, "registerOptions", "watchers") or {}) do
        assert.are.equal("string", type(w.globPattern), vim.inspect(w))
        assert.is_nil(w.globPattern:find(home, 1, true), vim.inspect(w))
      end
    end
    assert.are.same({}, require("claude_context.watch").bases(c.id))
    -- Neovim's recursive watcher never got the home folder (nor a folder that does not exist).
    assert.is_false(vim.tbl_contains(walked, home), vim.inspect(walked))
    for _, p in ipairs(walked) do
      assert.is_truthy(vim.uv.fs_stat(p), p)
    end
    assert.is_true(vim.tbl_contains(walked, root), vim.inspect(walked))
    -- A user CLAUDE.md written on disk reaches the open float.
    vim.cmd.edit(root .. "/src/api/handler.ts")
    vim.cmd("ClaudeContext")
    local st = float_state()
    local before = st.result
    H.write(home .. "/.claude/CLAUDE.md", "User rules.\n")
    H.wait(10000, function()
      local now = require("claude_context.preview").state()
      if not now or now.result == before then
        return false
      end
      for _, f in ipairs(now.result.files) do
        if f.path == home .. "/.claude/CLAUDE.md" and f.status == "loaded" then
          return true
        end
      end
    end, "the user's CLAUDE.md in the float")
    require("claude_context.preview").close()
  end)
end)
