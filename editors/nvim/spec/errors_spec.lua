-- When things go wrong: no API key, the API's own error message, a retry shown as a transient
-- line, a cut stream whose partial answer is discarded, the server stopping (one message, then
-- :ClaudeContext restart), and a missing server program.
local H = require("helpers")

local root, fake, chat_mod
local notes = {}
local E = H.chat_events(function()
  return root
end)
local events, done_count, wait_done, transcript = E.list, E.done_count, E.wait_done, E.transcript

describe("when things go wrong", function()
  setup(function()
    root = H.project({ ["CLAUDE.md"] = "# Shop\n", ["src/a.ts"] = "export const a = 1;\n" })
    fake = H.fake()
    local notify = vim.notify
    vim.notify = function(msg, level, opts)
      notes[#notes + 1] = { msg = msg, level = level }
      return notify(msg, level, opts)
    end
  end)

  teardown(function()
    fake:stop()
  end)

  it("says which variable to set when there is no API key", function()
    vim.env.ANTHROPIC_API_KEY = nil
    vim.env.ANTHROPIC_AUTH_TOKEN = nil
    require("claude_context").setup({
      cmd = { H.bin, "lsp" },
      cmd_env = { ANTHROPIC_BASE_URL = fake.url, CLAUDE_CONTEXT_AUTO_MEMORY = "0" },
    })
    vim.cmd.edit(root .. "/src/a.ts")
    H.client()
    chat_mod = require("claude_context.chat")
    vim.cmd("ClaudeChat hello")
    H.wait(15000, function()
      return transcript():find("ANTHROPIC_API_KEY", 1, true)
    end, function()
      return "the key's name in the chat: " .. transcript()
    end)
    local t = transcript()
    assert.matches("no API key: set ANTHROPIC_API_KEY", t, 1, true)
    assert.matches("Set `ANTHROPIC_API_KEY` in the environment Neovim starts from", t, 1, true)
    assert.is_false(chat_mod.get(root).sending)
  end)

  it("shows the API's own message, a retry as a transient line, and drops a cut answer", function()
    vim.env.ANTHROPIC_API_KEY = "sk-ant-spec-fake-key"
    local old = vim.lsp.get_clients({ name = "claude_context", bufnr = 0 })[1]
    vim.cmd("ClaudeContext restart")
    H.wait(20000, function()
      local c = vim.lsp.get_clients({ name = "claude_context", bufnr = 0 })[1]
      return c and c.initialized and c.id ~= old.id
    end, "the restarted server")
    local orig = chat_mod.on_event
    local transients = {}
    chat_mod.on_event = function(params, ctx)
      events[#events + 1] = params
      local r = orig(params, ctx)
      local chat = chat_mod.get(root)
      local tt = chat and chat.w:transient_text()
      if tt then
        transients[#transients + 1] = tt
      end
      return r
    end
    vim.cmd("ClaudeChatNew")
    -- A 4xx ends the turn with the API's own message.
    fake:push({
      {
        status = 400,
        error = { type = "invalid_request_error", message = "prompt is too long: 300000 tokens > 200000 maximum" },
      },
    })
    vim.cmd("ClaudeChat first")
    local last = wait_done(1)
    assert.are.equal("failed", last.outcome)
    assert.matches("prompt is too long: 300000 tokens > 200000 maximum", transcript(), 1, true)
    -- A 529 is retried: a transient line, then the answer; the line is gone.
    fake:push({ { status = 529 }, { text = "Recovered." } })
    vim.cmd("ClaudeChat second")
    last = wait_done(2)
    assert.are.equal("completed", last.outcome)
    local retry
    for _, t in ipairs(transients) do
      if t:find("trying again", 1, true) then
        retry = t
      end
    end
    assert.is_not_nil(retry, vim.inspect(transients))
    assert.matches("529 overloaded_error: fake error: trying again in ", retry, 1, true)
    assert.matches("(attempt 2 of 5)", retry, 1, true)
    assert.is_nil(chat_mod.get(root).w:transient_text())
    assert.matches("Recovered.", transcript(), 1, true)
    -- A stream cut mid-answer: what arrived is discarded, the new answer rendered.
    fake:push({
      {
        text = "PARTIAL-ANSWER-THAT-MUST-GO " .. string.rep("x", 200),
        piece = 10,
        fault = { after = 8, kind = "reset" },
      },
      { text = "The whole answer." },
    })
    vim.cmd("ClaudeChat third")
    last = wait_done(3)
    assert.are.equal("completed", last.outcome)
    local restarted = false
    for _, e in ipairs(events) do
      if e.kind == "error" and e.restart then
        restarted = true
      end
    end
    assert.is_true(restarted, "the server did not report a restart")
    local t = transcript()
    assert.is_nil(t:find("PARTIAL", 1, true), t)
    assert.matches("## You\n\nthird\n\n## Claude\n\nThe whole answer.", t, 1, true)
  end)

  it("says once that the server stopped, and :ClaudeContext restart brings it back", function()
    local win = vim.fn.bufwinid(vim.fn.bufnr(root .. "/src/a.ts"))
    assert.is_true(win ~= -1)
    vim.api.nvim_set_current_win(win)
    local c = vim.lsp.get_clients({ name = "claude_context", bufnr = 0 })[1]
    assert.is_not_nil(c)
    -- Our own child process: the server.
    local pid
    for _, p in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
      local info = vim.api.nvim_get_proc(p)
      if info and info.name and info.name:find("claude%-context") then
        pid = p
      end
    end
    assert.is_not_nil(pid, "the server's process")
    local before = #notes
    vim.uv.kill(pid, 9)
    H.wait(10000, function()
      return c:is_stopped() and #notes > before
    end, "the message")
    vim.wait(500)
    local mine = {}
    for i = before + 1, #notes do
      mine[#mine + 1] = notes[i].msg
    end
    assert.are.equal(1, #mine, table.concat(mine, "\n"))
    assert.matches("stopped (killed by signal 9)", mine[1], 1, true)
    assert.matches(":ClaudeContext restart", mine[1], 1, true)
    assert.are.equal("✻ stopped", require("claude_context").status())
    vim.cmd("ClaudeContext restart")
    local c2 = H.client()
    assert.are_not.equal(c.id, c2.id)
    -- The chat goes on: the session is resumed in the new server.
    fake:push({ { text = "Back again." } })
    local n = done_count()
    vim.cmd("ClaudeChat still there?")
    assert.are.equal("completed", wait_done(n + 1).outcome)
    assert.matches("Back again.", transcript(), 1, true)
  end)

  it("names the fix when the server program is missing, and never throws", function()
    local before = #notes
    require("claude_context").setup({ cmd = { "claude-context-not-installed-here", "lsp" } })
    vim.lsp.enable("claude_context", false)
    H.wait(5000, function()
      return #vim.lsp.get_clients({ name = "claude_context" }) == 0
    end, "the servers to stop")
    local other = H.project({ ["CLAUDE.md"] = "# Other\n", ["b.ts"] = "b\n" })
    vim.lsp.enable("claude_context")
    vim.cmd.edit(other .. "/b.ts")
    H.wait(5000, function()
      for i = before + 1, #notes do
        if notes[i].msg:find("was not found on PATH", 1, true) then
          return true
        end
      end
    end, "the message about the missing program")
    local found
    for i = before + 1, #notes do
      if notes[i].msg:find("not found", 1, true) then
        found = notes[i]
      end
    end
    assert.matches("cargo install --locked --path server", found.msg, 1, true)
    assert.are.equal(vim.log.levels.ERROR, found.level)
    -- The commands answer with a message, not a Lua error.
    vim.cmd("ClaudeContext")
    vim.cmd("ClaudeChat hi")
    vim.cmd("ClaudeCompact!")
  end)
end)
