-- Hooks in the editor: a project whose settings have a SessionStart context hook and a
-- PreToolUse guard that denies `rm`, in a folder its user trusts: the chat shows the guard's
-- denial like a tool result, and the context float lists the hooks (never running them) and, on
-- `H`, one run's texts.
local H = require("helpers")

local root, fake

local E = H.chat_events(function()
  return root
end)
local events, done_count, wait_done, transcript = E.list, E.done_count, E.wait_done, E.transcript

local GUARD = [[
import json, sys
call = json.load(sys.stdin)
if call["tool_input"].get("command", "").lstrip().startswith("rm "):
    sys.stderr.write("rm is not allowed here\n")
    sys.exit(2)
]]

describe("hooks", function()
  setup(function()
    root = H.project({
      ["CLAUDE.md"] = "# Shop\n",
      ["src/cart.ts"] = "export const cart = 1;\n",
      [".claude/hooks/guard.py"] = GUARD,
      [".claude/settings.json"] = vim.json.encode({
        hooks = {
          SessionStart = { { hooks = { { type = "command", command = "echo SPRINT-42 is the current sprint" } } } },
          PreToolUse = {
            {
              matcher = "Bash",
              hooks = { { type = "command", command = "/usr/bin/python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py" } },
            },
          },
        },
      }),
    })
    -- Trusted, as Claude Code records it.
    H.write(
      vim.env.HOME .. "/.claude.json",
      vim.json.encode({ projects = { [root] = { hasTrustDialogAccepted = true } } })
    )
    fake = H.fake()
    H.setup(fake)
    vim.cmd.edit(root .. "/src/cart.ts")
    H.client()
    E.start()
  end)

  teardown(function()
    fake:stop()
  end)

  it("shows a PreToolUse hook's denial like a tool result, and the model gets it", function()
    fake:push({
      { toolUses = { { id = "toolu_rm", name = "Bash", input = { command = "rm -rf build" } } } },
      { text = "I will not delete it." },
    })
    local before = done_count()
    vim.cmd("ClaudeChat Clean the build")
    local last = wait_done(before + 1)
    assert.are.equal("completed", last.outcome)
    local hook
    for _, e in ipairs(events) do
      if e.kind == "hook" and e.event == "PreToolUse" then
        hook = e
      end
    end
    assert.is_not_nil(hook)
    assert.are.equal("denied", hook.outcome)
    assert.matches("rm is not allowed here", hook.text, 1, true)
    local t = transcript()
    assert.matches("**⚑ PreToolUse hook denied** (Bash)", t, 1, true)
    assert.matches(
      "PreToolUse:Bash hook error: [/usr/bin/python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py]: rm is not allowed here",
      t,
      1,
      true
    )
    -- The SessionStart hook's text reached the model, in the environment section.
    local reqs = fake:requests()
    local system = reqs[1].body.system[2].text
    assert.matches(
      "SessionStart:startup hook success: SPRINT-42 is the current sprint\n\n# Environment",
      system,
      1,
      true
    )
  end)

  it("lists the hooks in the context float and runs them only on H", function()
    vim.cmd.edit(root .. "/src/cart.ts")
    require("claude_context.preview").open({ session = false })
    local st
    H.wait(20000, function()
      st = require("claude_context.preview").state()
      return st and st.result
    end, "the float's preview")
    local text = H.text(st.buf)
    assert.matches("Hooks: 2 configured, 2 run; never run by the preview", text, 1, true)
    local row
    for lnum, it in pairs(st.items) do
      if it.kind == "hook" and it.data.event == "PreToolUse" then
        row = lnum
      end
    end
    assert.is_not_nil(row)
    local line = H.lines(st.buf)[row]
    assert.matches(
      "PreToolUse%s+project%s+runs%s+Bash%s+/usr/bin/python3 %$CLAUDE_PROJECT_DIR/%.claude/hooks/guard%.py",
      line
    )
    assert.is_nil(text:find("one run's output", 1, true))
    vim.api.nvim_feedkeys("H", "x", false)
    H.wait(20000, function()
      return H.text(st.buf):find("one run's output", 1, true)
    end, "one run's output")
    assert.matches("SessionStart:startup hook success: SPRINT-42 is the current sprint", H.text(st.buf), 1, true)
  end)
end)
