-- A project's MCP server in the chat, against the real server, the fake model API and a real MCP
-- server on the official Python SDK (tests/data/mcp/demo_server.py; PyPI `mcp`, from python3 or
-- the CI cache folder scripts/test names in SPEC_PYTHON_MCP): the approval is asked in Claude
-- Code's words through vim.ui.select and remembered; the server's tools reach the model; a call
-- of one asks like Write and its result shows in the transcript.
local H = require("helpers")

local root, fake, chat_mod
local E = H.chat_events(function()
  return root
end)
local events, wait_done = E.list, E.wait_done

--- The PYTHONPATH under which python3 imports `mcp`, or nil when it cannot.
---@return string|false|nil
local function python_mcp()
  local dir = os.getenv("SPEC_PYTHON_MCP")
  for _, path in ipairs({ dir or false, "" }) do
    if path ~= false then
      local env = path ~= "" and { PYTHONPATH = path } or nil
      local r = vim.system({ "python3", "-c", "import mcp" }, { env = env }):wait(30000)
      if r.code == 0 then
        return path
      end
    end
  end
  return nil
end

describe("a project's MCP server", function()
  local pythonpath = python_mcp()

  setup(function()
    if not pythonpath then
      return
    end
    local entry = { command = "python3", args = { H.repo .. "/tests/data/mcp/demo_server.py" } }
    if pythonpath ~= "" then
      entry.env = { PYTHONPATH = pythonpath }
    end
    root = H.project({
      ["CLAUDE.md"] = "# Shop\n",
      [".mcp.json"] = vim.json.encode({ mcpServers = { demo = entry } }),
      ["src/cart.ts"] = "export const cart = 1;\n",
    })
    fake = H.fake()
    -- The first request waits for the server however long Python takes to start.
    H.setup(fake, { cmd_env = { MCP_CONNECTION_NONBLOCKING = "0" } })
    vim.cmd.edit(root .. "/src/cart.ts")
    H.client()
    chat_mod = require("claude_context.chat")
    E.start()
  end)

  teardown(function()
    if fake then
      fake:stop()
    end
  end)

  if not pythonpath then
    pending("needs python3 with PyPI mcp (installed by .ci/run into the CI cache folder)")
    return
  end

  it("is approved in Claude Code's words, remembered, and its tool asks and answers in the chat", function()
    fake:push({
      {
        text = "Loading it.",
        toolUses = { { id = "toolu_s1", name = "ToolSearch", input = { query = "select:mcp__demo__add" } } },
      },
      { text = "Adding.", toolUses = { { id = "toolu_a1", name = "mcp__demo__add", input = { a = 2, b = 3 } } } },
      { text = "The sum is 5." },
    })
    local calls = H.async_select(function(items)
      -- The folder's trust first (nobody was asked yet), then the server question, then the tool
      -- call: yes to each.
      for i, it in ipairs(items) do
        if it.decision == "allow" then
          return i
        end
      end
    end)
    vim.cmd("ClaudeChat add 2 and 3 with the demo server")
    local last = wait_done(1, 60000)
    assert.are.equal("completed", last.outcome)

    -- The trust question, in Claude Code's words, "No" first (its default).
    assert.are.equal(
      3,
      #calls,
      vim.inspect(vim.tbl_map(function(c)
        return c.opts.prompt
      end, calls))
    )
    local t = table.remove(calls, 1)
    assert.are.equal(
      1,
      t.opts.prompt:find(
        "Accessing workspace: " .. root .. " Quick safety check: Is this a project you created or one you trust?",
        1,
        true
      ),
      t.opts.prompt
    )
    assert.matches("Trusting this folder loads .mcp.json (MCP servers: demo).", t.opts.prompt, 1, true)
    assert.are.same({ "No, don't trust this folder", "Yes, I trust this folder" }, t.labels)
    -- The server's question: its title, warning and the dialog's three answers.
    local q = calls[1]
    assert.matches("^New MCP server found in this project: demo", q.opts.prompt)
    assert.matches("MCP servers may execute code", q.opts.prompt, 1, true)
    assert.are.same({
      "Use this MCP server",
      "Use this and all future MCP servers in this project",
      "Continue without using this MCP server",
    }, q.labels)
    -- Remembered as Claude Code remembers it: the next session does not ask.
    local local_settings = vim.json.decode(H.read(root .. "/.claude/settings.local.json"))
    assert.are.same({ "demo" }, local_settings.enabledMcpjsonServers)

    -- The model saw the server's tool by name, and the call asked like Write, with our words.
    local first = fake:requests()[1]
    assert.matches("mcp__demo__add", vim.json.encode(first.body or first), 1, true)
    local c = calls[2]
    -- (The model's input as it sent it: the key order is the fake's.)
    assert.matches("^Claude wants to run: mcp__demo__add %(MCP server demo%): {", c.opts.prompt)
    assert.matches('"a":2', c.opts.prompt, 1, true)
    assert.matches('"b":3', c.opts.prompt, 1, true)
    assert.are.equal("Allow once", c.labels[1])
    -- Its result reached the model and the transcript.
    local results = vim.tbl_filter(function(e)
      return e.kind == "toolResult" and e.toolUseId == "toolu_a1"
    end, events)
    assert.are.equal(1, #results)
    assert.is_false(results[1].isError)
    -- A structured result reaches the model as compact JSON, as Claude Code sends it.
    assert.are.equal([[{"result":5}]], vim.trim(results[1].content))
    local chat = chat_mod.get(root)
    chat.w:flush()
    assert.matches("The sum is 5.", H.text(chat.buf), 1, true)
  end)
end)
