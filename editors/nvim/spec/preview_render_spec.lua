-- The float's rendering of a `context/preview` result, without a server: the agent types, the
-- output style and the plugins, each with their tokens, and the agent types listing as a part of
-- the system prompt in the totals. (context_spec.lua drives the float against the real server.)
local preview = require("claude_context.preview")

local cwd = "/home/me/work/shop"

--- A result as the server sends it (docs/protocol.md, `context/preview`), the new parts filled.
---@return table
local function result()
  return {
    cwd = cwd,
    files = {},
    blocks = {},
    attachments = {},
    pending = {},
    findings = {},
    touched = {},
    gitPending = false,
    totals = {
      tokens = 3111,
      system = 1045,
      tools = 1841,
      instructions = 81,
      git = 144,
      attachments = 0,
      skills = 20,
      mcp = 12,
      agents = 96,
      window = 200000,
      autoCompactThreshold = 167000,
      percent = 1.6,
    },
    agents = {
      listing = "Available agent types and the tools they have access to:\n- general-purpose: …\n- reviewer: …",
      tokens = 96,
      agents = {
        {
          name = "general-purpose",
          scope = "builtIn",
          description = "General-purpose agent for researching complex questions",
          tools = "*",
          tokens = 61,
          bodyTokens = 420,
        },
        {
          name = "reviewer",
          scope = "project",
          path = cwd .. "/.claude/agents/reviewer.md",
          description = "Reviews a diff for bugs",
          tools = "Read, Grep",
          model = "sonnet",
          tokens = 35,
          bodyTokens = 80,
        },
      },
      shadowed = { { name = "reviewer", scope = "user", by = "project", file = "/home/me/.claude/agents/reviewer.md" } },
    },
    style = {
      name = "Terse",
      source = "project",
      path = cwd .. "/.claude/output-styles/terse.md",
      description = "Short answers",
      setting = "Terse",
      settingPath = cwd .. "/.claude/settings.json",
      unknown = false,
      tokens = 140,
      reminderTokens = 22,
      dropsCodingInstructions = true,
      available = { "default", "Explanatory", "Learning", "Terse" },
    },
    plugins = {
      tokens = 58,
      plugins = {
        {
          name = "demo",
          id = "demo@local",
          root = "/home/me/plugins/demo",
          enabledBy = "user",
          skills = { { name = "demo:greet", tokens = 12 } },
          servers = { { name = "plugin:demo:db", tokens = 30 } },
          styles = { { name = "demo:pirate", tokens = 16 } },
          hooks = { "SessionStart: ./hello.sh" },
          agentsDir = "/home/me/plugins/demo/agents",
          skipped = { "/home/me/plugins/demo/skills/evil/SKILL.md" },
          tokens = 42,
        },
      },
      notLoaded = { { id = "repo-tool@team", reason = "the repository's plugin waits for trust" } },
    },
  }
end

--- The rendered lines, and the item of the first line that `pattern` finds (plain).
---@param r table
---@param pattern string
---@return string[] lines
---@return claude_context.PreviewItem? item
---@return integer? lnum
local function rendered(r, pattern)
  local lines, items = preview.render(r)
  for i, l in ipairs(lines) do
    if l:find(pattern, 1, true) then
      return lines, items[i], i
    end
  end
  return lines, nil, nil
end

--- An in-process LSP server that answers `context/preview` with `r` (no binary: the float's keys
--- run against the canned result).
---@param r table
---@return integer client id
local function canned_client(r)
  local id = vim.lsp.start({
    name = "canned-preview",
    root_dir = cwd,
    cmd = function(dispatchers)
      local closing = false
      local n = 0
      return {
        request = function(method, _, callback)
          n = n + 1
          local answer = method == "initialize" and { capabilities = {} }
            or method == "context/preview" and r
            or vim.NIL
          vim.schedule(function()
            callback(nil, answer)
          end)
          return true, n
        end,
        notify = function(method)
          if method == "exit" then
            dispatchers.on_exit(0, 15)
          end
          return true
        end,
        is_closing = function()
          return closing
        end,
        terminate = function()
          closing = true
        end,
      }
    end,
  }, { attach = false })
  return assert(id, "the in-process client started")
end

describe("the float's agents, output style and plugins", function()
  it("lists the agent types: the listing's tokens, each with scope, tools and tokens", function()
    local r = result()
    local lines, head = rendered(r, "Agents (")
    local text = table.concat(lines, "\n")
    assert.matches("\nAgents %(2 types; listing 96 tokens; K shows it%)\n", text)
    assert.are.equal("agents", head.kind)
    assert.are.equal(r.agents.listing, head.text)
    local _, builtin, at = rendered(r, "  general-purpose  ")
    assert.are.equal("  general-purpose  built-in  tools: *  61 tokens", lines[at])
    assert.is_nil(builtin.path, "a built-in agent has no file")
    assert.matches("^General%-purpose agent for researching complex questions\n", builtin.text)
    local _, reviewer, rat = rendered(r, "  reviewer  project")
    assert.are.equal("  reviewer  project  tools: Read, Grep  35 tokens", lines[rat])
    assert.are.equal("agent", reviewer.kind)
    assert.are.equal(cwd .. "/.claude/agents/reviewer.md", reviewer.path)
    assert.matches("^Reviews a diff for bugs\n", reviewer.text)
    assert.matches("model        sonnet", reviewer.text, 1, true)
    assert.matches("80 tokens of system prompt", reviewer.text, 1, true)
    local _, shadowed, sat = rendered(r, "replaced by")
    assert.are.equal("  reviewer  user  replaced by the project one", lines[sat])
    assert.are.equal("/home/me/.claude/agents/reviewer.md", shadowed.path)
    r.agents = nil
    assert.is_nil(select(3, rendered(r, "Agents (")), "no agents, no section")
  end)

  it("K on an agent shows its description, <CR> opens its file", function()
    local r = result()
    local origin = vim.api.nvim_get_current_win()
    preview.open({ client_id = canned_client(r), session = false })
    local st
    vim.wait(10000, function()
      st = preview.state()
      return st and st.result
    end, 10)
    assert.is_truthy(st and st.result, "the float got the canned preview")
    local line
    for lnum, it in pairs(st.items) do
      if it.kind == "agent" and it.data.name == "reviewer" and it.data.scope == "project" then
        line = lnum
      end
    end
    assert.is_not_nil(line)
    vim.api.nvim_win_set_cursor(st.win, { line, 0 })
    vim.api.nvim_feedkeys("K", "x", false)
    local shown = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.matches("^Reviews a diff for bugs\n", shown)
    vim.api.nvim_feedkeys("q", "x", false)
    vim.api.nvim_set_current_win(st.win)
    vim.api.nvim_win_set_cursor(st.win, { line, 0 })
    vim.api.nvim_feedkeys("\r", "x", false)
    assert.are.equal(cwd .. "/.claude/agents/reviewer.md", vim.api.nvim_buf_get_name(0))
    assert.are.equal(origin, vim.api.nvim_get_current_win())
    assert.is_nil(preview.state(), "<CR> closes the float")
  end)

  it("shows the output style, its tokens, an unknown name and dropped coding instructions", function()
    local r = result()
    local lines, head, at = rendered(r, "Output style:")
    assert.are.equal(
      "Output style: Terse (project)  140 tokens, +22 after every tool result and later prompt",
      lines[at]
    )
    assert.are.equal(cwd .. "/.claude/output-styles/terse.md", head.path, "<CR> opens the style's file")
    assert.are.equal('  outputStyle "Terse"  .claude/settings.json', lines[at + 1])
    assert.are.equal("  coding instructions left out (no keep-coding-instructions: true)", lines[at + 2])
    r.style = {
      name = "default",
      setting = "terse",
      unknown = true,
      tokens = 0,
      reminderTokens = 0,
      dropsCodingInstructions = false,
      available = { "default", "Terse" },
    }
    local l2, h2, at2 = rendered(r, "Output style:")
    assert.are.equal("Output style: default  0 tokens, +0 after every tool result and later prompt", l2[at2])
    assert.is_nil(h2.path)
    assert.are.equal('  outputStyle "terse"', l2[at2 + 1])
    assert.are.equal("  unknown name: default applies (available: default, Terse)", l2[at2 + 2])
    assert.is_nil(table.concat(l2, "\n"):find("coding instructions left out", 1, true))
  end)

  it("lists the plugins: what each adds, in tokens; the ones not loaded with why", function()
    local r = result()
    local lines, _, at = rendered(r, "Plugins (")
    assert.are.same({
      "Plugins (1 loaded, 1 not loaded; 58 tokens)",
      "  demo@local  42 tokens  enabled by you",
      "    skill demo:greet  12 tokens",
      "    MCP server plugin:demo:db  30 tokens",
      "    output style demo:pirate  16 tokens",
      "    hook SessionStart: ./hello.sh  (output unknown until it runs)",
      "    not read (links outside the plugin): skills/evil/SKILL.md",
      "  repo-tool@team  not loaded: the repository's plugin waits for trust",
    }, vim.list_slice(lines, at, at + 7))
    local _, item = rendered(r, "  demo@local")
    assert.are.equal("plugin", item.kind)
    assert.are.equal("demo@local", item.data.id)
    r.plugins = { tokens = 0, plugins = {}, notLoaded = {} }
    assert.is_nil(select(3, rendered(r, "Plugins (")), "no plugins, no section")
  end)

  it("counts the agent types listing as a part of the system prompt; the parts still add up to the total", function()
    local lines = preview.render(result())
    local text = table.concat(lines, "\n")
    assert.matches(
      "system prompt       1,045 tokens   of which the skills listing 20, MCP servers 12, the agent types listing 96",
      text,
      1,
      true
    )
    local parts = { "system prompt", "tool definitions", "instructions block", "git block", "attachments" }
    local sum, names = 0, {}
    for name, figure in text:gmatch("\n  ([a-z][a-z ]-)%s+([%d,]+) tokens") do
      if vim.tbl_contains(parts, name) then
        sum = sum + tonumber((figure:gsub(",", "")))
        names[#names + 1] = name
      end
    end
    assert.are.same(parts, names)
    assert.are.equal(3111, sum)
    assert.matches("total ≈ 3,111 tokens", text, 1, true)
  end)
end)
