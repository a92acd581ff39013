-- Workspace trust in the chat, against the real server and the fake model API: a repository
-- that commits `.claude/settings.local.json` approving its own `.mcp.json` server starts
-- nothing; the first message asks whether the folder is trusted, through vim.ui.select in
-- Claude Code's words ("No" first); "no" is kept, the server never starts, the transcript and the
-- context float say so, and the next chat does not ask.
local H = require("helpers")

local root, fake, marker
local E = H.chat_events(function()
  return root
end)
local wait_done = E.wait_done

describe("workspace trust", function()
  setup(function()
    root = H.project({
      ["CLAUDE.md"] = "# Shop\n",
      ["src/cart.ts"] = "export const cart = 1;\n",
      [".claude/settings.local.json"] = '{"enableAllProjectMcpServers": true}',
    })
    marker = root .. "/started"
    -- A server that would leave a marker if it ever started.
    H.write(
      root .. "/.mcp.json",
      vim.json.encode({
        mcpServers = { demo = { command = "sh", args = { "-c", "echo started >> '" .. marker .. "'; exec cat" } } },
      })
    )
    H.git(root, "add", "-A")
    H.git(root, "commit", "-qm", "the repository approves its own server")
    fake = H.fake()
    H.setup(fake)
    vim.cmd.edit(root .. "/src/cart.ts")
    H.client()
    E.start()
  end)

  teardown(function()
    fake:stop()
  end)

  it("is asked before the first request in Claude Code's words; no is kept and nothing starts", function()
    fake:push({ { text = "Hello." }, { text = "Again." } })
    local calls = H.async_select(function(items)
      for i, it in ipairs(items) do
        if it.decision == "deny" then
          return i
        end
      end
    end)
    vim.cmd("ClaudeChat hello")
    assert.are.equal("completed", wait_done(1, 60000).outcome)
    assert.are.equal(1, #calls)
    local q = calls[1]
    assert.are.equal(1, q.opts.prompt:find("Accessing workspace: " .. root .. " ", 1, true), q.opts.prompt)
    assert.matches(
      "Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source project, or work from your team).",
      q.opts.prompt,
      1,
      true
    )
    assert.matches(
      "Trusting this folder loads .mcp.json (MCP servers: demo) and .claude/settings.local.json (committed by the repository: approves the project's MCP servers).",
      q.opts.prompt,
      1,
      true
    )
    assert.are.same({ "No, don't trust this folder", "Yes, I trust this folder" }, q.labels)
    assert.is_nil(vim.uv.fs_stat(marker), "the repository's server started")
    local chat = require("claude_context.chat").get(root)
    chat.w:flush()
    local text = H.text(chat.buf)
    assert.matches("**? Trust asked:** Accessing workspace: " .. root, text, 1, true)
    assert.matches("_→ not trusted_", text, 1, true)
    -- Kept: `claude-context trust` says so, and the next message does not ask again.
    assert.matches('"state": "notTrusted"', H.cli(root, { "trust", "--json" }), 1, true)
    vim.cmd("ClaudeChat again")
    assert.are.equal("completed", wait_done(2, 60000).outcome)
    assert.are.equal(1, #calls)
    assert.is_nil(vim.uv.fs_stat(marker))
    -- The context view shows the trust and what waits.
    local client = H.client()
    local p = H.request(client, "context/preview", {})
    assert.are.equal("notTrusted", p.trust.state)
    local lines = require("claude_context.preview").render(p)
    local shown = table.concat(lines, "\n")
    assert.matches("Workspace trust: not trusted", shown, 1, true)
    assert.matches(".claude/settings.local.json is tracked by git", shown, 1, true)
  end)
end)
