-- The chat against the real server and the fake model API: a streamed turn that asks permission
-- through an async vim.ui.select and edits an open buffer; two edits of one buffer in one
-- answer; cancel (with a question open); resume (ours and Claude Code's sessions).
local H = require("helpers")

local root, fake

local E = H.chat_events(function()
  return root
end)
local events, done_count, wait_done, transcript = E.list, E.done_count, E.wait_done, E.transcript
local chat_mod

describe("the chat", function()
  setup(function()
    root = H.project({
      ["CLAUDE.md"] = "# Shop\n",
      [".claude/rules/typescript.md"] = "---\npaths: src/**/*.ts\n---\nTypeScript: strict mode.\n",
      ["src/cart.ts"] = "export const cart = 1;\n",
      ["src/two.ts"] = "alpha\nmiddle\nomega\n",
    })
    fake = H.fake()
    H.setup(fake)
    vim.cmd.edit(root .. "/src/cart.ts")
    H.client()
    E.start()
    chat_mod = require("claude_context.chat")
  end)

  teardown(function()
    fake:stop()
  end)

  it("streams a turn that asks permission through an async vim.ui.select and edits the open buffer", function()
    local long = string.rep("The cart holds one item. ", 12)
    fake:push({
      -- Paced as the API streams (deltas that reach the server together go out as one event).
      {
        text = "Let me change it. " .. long,
        piece = 4,
        paceMs = 2,
        toolUses = {
          {
            id = "toolu_e1",
            name = "Edit",
            input = { file_path = root .. "/src/cart.ts", old_string = "cart = 1", new_string = "cart = 2" },
          },
        },
      },
      { text = "Done: the cart now holds 2.", piece = 3 },
    })
    local calls = H.async_select(function(items)
      for i, it in ipairs(items) do
        if it.decision == "allow" then
          return i
        end
      end
    end)
    local src_win = vim.api.nvim_get_current_win()
    local src_buf = vim.api.nvim_get_current_buf()
    local chat_flushes = 0
    vim.cmd("ClaudeChat Please set the cart to 2")
    -- Focus stays where it was.
    assert.are.equal(src_win, vim.api.nvim_get_current_win())
    local chat = chat_mod.get(root)
    local orig_flush = chat.w.on_flush
    chat.w.on_flush = function()
      chat_flushes = chat_flushes + 1
    end
    local last = wait_done(1)
    chat.w.on_flush = orig_flush
    assert.are.equal("done", last.kind)
    assert.are.equal("completed", last.outcome)
    -- Asked once, with the server's own scope text.
    assert.are.equal(1, #calls)
    assert.matches("Edit", calls[1].opts.prompt)
    local labels = table.concat(calls[1].labels, "\n")
    assert.matches("Allow for this session: ", labels, 1, true)
    assert.matches("Allow once", labels, 1, true)
    -- ~80 deltas 2 ms apart: streamed as several events (the server sends one a frame at most),
    -- each written in at most one flush.
    local texts = 0
    for _, e in ipairs(events) do
      if e.kind == "text" then
        texts = texts + 1
      end
    end
    assert.is_true(texts >= 3 and texts < 60, "text events: " .. texts)
    assert.is_true(chat_flushes <= texts, ("%d flushes for %d text events"):format(chat_flushes, texts))
    -- The edit is in the buffer, unsaved; the disk is unchanged.
    assert.are.same({ "export const cart = 2;" }, vim.api.nvim_buf_get_lines(src_buf, 0, -1, false))
    assert.is_true(vim.bo[src_buf].modified)
    assert.are.equal("export const cart = 1;\n", H.read(root .. "/src/cart.ts"))
    local t = transcript()
    assert.matches("## You\n\nPlease set the cart to 2", t, 1, true)
    assert.matches(
      "## Claude\n\n> rule `.claude/rules/typescript.md` now applies (because of `src/cart.ts`) · ",
      t,
      1,
      true
    )
    assert.matches(" tokens\n\nLet me change it. " .. long .. "\n", t, 1, true)
    assert.matches("**⚙ Edit** `src/cart.ts`", t, 1, true)
    assert.matches("allowed once", t, 1, true)
    assert.matches("Done: the cart now holds 2.", t, 1, true)
    assert.matches("rule `.claude/rules/typescript.md` now applies (because of `src/cart.ts`)", t, 1, true)
    -- The tool call is a closed fold in the chat window.
    local twin = vim.fn.bufwinid(chat.buf)
    assert.is_true(twin ~= -1)
    local tool_line
    for i, l in ipairs(H.lines(chat.buf)) do
      if l:find("**⚙ Edit**", 1, true) then
        tool_line = i
      end
    end
    vim.api.nvim_win_call(twin, function()
      assert.is_true(vim.fn.foldclosed(tool_line) == tool_line)
      -- Shown rendered: no raw ** or backticks.
      assert.matches("^⚙ Edit src/cart%.ts  · %d+ more lines$", vim.fn.foldtextresult(tool_line))
    end)
    -- The statusline shows the API's figures (no ≈) for the session.
    H.wait(5000, function()
      return require("claude_context").status():match("^✻ [%d.]+k?/1M")
    end, "the session's figures in the statusline")
    vim.cmd("silent! undo")
    assert.are.same({ "export const cart = 1;" }, vim.api.nvim_buf_get_lines(src_buf, 0, -1, false))
  end)

  it("applies two edits of one buffer in one answer exactly as the model meant", function()
    vim.cmd.edit(root .. "/src/two.ts")
    local buf = vim.api.nvim_get_current_buf()
    H.client(buf)
    fake:push({
      {
        toolUses = {
          {
            id = "toolu_a",
            name = "Edit",
            input = {
              file_path = root .. "/src/two.ts",
              old_string = "alpha",
              new_string = "alpha one\nalpha two\nalpha three",
            },
          },
          {
            id = "toolu_b",
            name = "Edit",
            input = { file_path = root .. "/src/two.ts", old_string = "omega", new_string = "OMEGA" },
          },
        },
      },
      { text = "Both edits made." },
    })
    local calls = H.async_select(function(items)
      for i, it in ipairs(items) do
        if it.decision == "allowSession" then
          return i
        end
      end
    end)
    local before = done_count()
    vim.cmd("ClaudeChat Expand alpha and shout omega")
    local last = wait_done(before + 1)
    assert.are.equal("completed", last.outcome)
    assert.is_true(#calls >= 1)
    local results = {}
    for _, e in ipairs(events) do
      if e.kind == "toolResult" and (e.toolUseId == "toolu_a" or e.toolUseId == "toolu_b") then
        results[#results + 1] = e
      end
    end
    assert.are.equal(2, #results)
    for _, r in ipairs(results) do
      assert.is_false(r.isError, r.content)
    end
    assert.are.same(
      { "alpha one", "alpha two", "alpha three", "middle", "OMEGA" },
      vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    )
    assert.are.equal("alpha\nmiddle\nomega\n", H.read(root .. "/src/two.ts"))
  end)

  it("keeps the brackets of text that Markdown would take as a link", function()
    fake:push({ { text = "Read a[0] first, then [the note] and [x](y)." } })
    local before = done_count()
    vim.cmd("ClaudeChat Brackets?")
    wait_done(before + 1)
    local chat = chat_mod.get(root)
    local row
    for i, l in ipairs(H.lines(chat.buf)) do
      if l:find("Read a[0] first", 1, true) then
        row = i - 1
      end
    end
    assert(row, "the answer in the transcript")
    local line = H.lines(chat.buf)[row + 1]
    --- Whether treesitter conceals the character at byte `col` of the line.
    local function concealed(col)
      vim.treesitter.get_parser(chat.buf):parse(true)
      for _, c in
        ipairs(
          vim.inspect_pos(chat.buf, row, col, { syntax = false, extmarks = false, semantic_tokens = false }).treesitter
        )
      do
        if c.metadata and c.metadata.conceal ~= nil then
          return true
        end
      end
      return false
    end
    assert.is_false(concealed(line:find("[0]", 1, true) - 1))
    assert.is_false(concealed(line:find("[the note]", 1, true) - 1))
    -- A real link still reads as one.
    assert.is_true(concealed(line:find("[x](y)", 1, true) - 1))
  end)

  it("asks about a file that makes programs run code with the server's warning and no session choice", function()
    -- The user's denial ends the turn (as Claude Code's does): no answer follows it.
    fake:push({
      {
        toolUses = {
          {
            id = "toolu_g",
            name = "Write",
            input = { file_path = root .. "/.gitattributes", content = "* filter=x\n" },
          },
        },
      },
    })
    local calls = H.async_select(function(items)
      for i, it in ipairs(items) do
        if it.decision == "deny" then
          return i
        end
      end
    end)
    local before = done_count()
    vim.cmd("ClaudeChat Add a git filter")
    local last = wait_done(before + 1)
    assert.are.equal("completed", last.outcome)
    assert.are.equal(1, #calls)
    assert.matches("⚠", calls[1].opts.prompt, 1, true)
    for _, it in ipairs(calls[1].items) do
      assert.are_not.equal("allowSession", it.decision)
    end
    assert.is_nil(vim.uv.fs_stat(root .. "/.gitattributes"))
  end)

  it("shows a subagent as one item with its own tool calls, then its report", function()
    fake:push({
      {
        toolUses = {
          {
            id = "toolu_sub",
            name = "Agent",
            input = { subagent_type = "general-purpose", description = "look at the cart", prompt = "Read src/cart.ts" },
          },
        },
      },
      { toolUses = { { id = "toolu_sr", name = "Read", input = { file_path = root .. "/src/cart.ts" } } } },
      { text = "SUB-REPORT the cart is 1" },
      { text = "All reviewed." },
    })
    local before = done_count()
    vim.cmd("ClaudeChat Review the cart")
    local last = wait_done(before + 1)
    assert.are.equal("completed", last.outcome)
    local t = transcript()
    assert.matches("**⚙ Agent** `general-purpose`: look at the cart", t, 1, true)
    assert.matches("> **subagent `general-purpose`** look at the cart", t, 1, true)
    assert.matches("general-purpose › Read", t, 1, true)
    assert.matches("> subagent `general-purpose` completed after 1 tool call\n", t, 1, true)
    assert.matches("SUB-REPORT the cart is 1", t, 1, true)
    assert.matches("All reviewed.", t, 1, true)
    -- The subagent's call came inside the Agent call's item: its start before, its end after.
    assert.is_true(t:find("subagent `general-purpose`** look", 1, true) < t:find("general-purpose › Read", 1, true))
    assert.is_true(t:find("general-purpose › Read", 1, true) < t:find("completed after 1 tool call", 1, true))
  end)

  it("cancels a running answer, closing the question it asked", function()
    vim.cmd.edit(root .. "/src/cart.ts")
    fake:push({
      { text = "I will run it.", toolUses = { { id = "toolu_bash", name = "Bash", input = { command = "echo hi" } } } },
    })
    -- A picker the user has not answered yet.
    local calls = H.async_select(function()
      return false
    end)
    local before = done_count()
    vim.cmd("ClaudeChat Run echo")
    H.wait(20000, function()
      return #calls == 1 and #require("claude_context.permission").open_prompts() == 1
    end, "the permission question")
    assert.is_true(vim.api.nvim_win_is_valid(calls[1].win))
    vim.cmd("ClaudeChatCancel")
    local last = wait_done(before + 1)
    assert.are.equal("cancelled", last.outcome)
    -- The picker's window is closed, the question withdrawn.
    H.wait(5000, function()
      return not vim.api.nvim_win_is_valid(calls[1].win)
    end, "the picker to close")
    assert.are.equal(0, #require("claude_context.permission").open_prompts())
    assert.matches("_(cancelled)_", transcript(), 1, true)
    assert.matches("the question was withdrawn", transcript(), 1, true)
    -- A hanging stream is cancelled too.
    fake:push({ { hang = true } })
    before = done_count()
    local requests = fake:state().requests
    vim.cmd("ClaudeChat Anything")
    H.wait(10000, function()
      return fake:state().requests > requests
    end, "the hanging request")
    vim.cmd("ClaudeChatCancel")
    last = wait_done(before + 1, 15000)
    assert.are.equal("cancelled", last.outcome)
  end)

  it("sends @file mentions and a visual selection with the message", function()
    vim.cmd.edit(root .. "/src/cart.ts")
    fake:push({ { text = "Seen." }, { text = "Seen too." } })
    local n = done_count()
    vim.cmd("ClaudeChat what does @src/two.ts hold?")
    wait_done(n + 1)
    local reqs = fake:requests()
    local body = vim.json.encode(reqs[#reqs].body)
    assert.matches("what does @src/two.ts hold?", body, 1, true)
    assert.matches("middle", body, 1, true) -- the mentioned file's text went with it
    vim.cmd("1,1ClaudeChat explain this line")
    wait_done(n + 2)
    reqs = fake:requests()
    body = vim.json.encode(reqs[#reqs].body)
    assert.matches("explain this line", body, 1, true)
    assert.matches("From `src/cart.ts`, lines 1-1:", body, 1, true)
  end)

  it("resumes a session from :ClaudeChatSessions, ours and Claude Code's (read-only)", function()
    local chat = chat_mod.get(root)
    local first = chat.session
    -- A Claude Code session of this project.
    local slug = root:gsub("[^%w]", "-")
    local ref_id = "0c0ffee0-0000-4000-8000-000000000001"
    local function rec(t)
      return vim.json.encode(
        vim.tbl_extend(
          "force",
          { isSidechain = false, userType = "external", cwd = root, sessionId = ref_id, version = "2.1.12" },
          t
        )
      )
    end
    H.write(vim.env.HOME .. "/.claude/projects/" .. slug .. "/" .. ref_id .. ".jsonl", table.concat({
      rec({
        parentUuid = vim.NIL,
        type = "user",
        message = { role = "user", content = "What is in the reference session?" },
        uuid = "c0000001-0000-4000-8000-000000000001",
        timestamp = "2026-01-21T09:00:00.000Z",
      }),
      rec({
        parentUuid = "c0000001-0000-4000-8000-000000000001",
        type = "assistant",
        message = {
          model = "claude-opus-4-5",
          id = "msg_r1",
          type = "message",
          role = "assistant",
          content = { { type = "text", text = "Reference answer." } },
          stop_reason = "end_turn",
          usage = { input_tokens = 3, output_tokens = 2, cache_creation_input_tokens = 0, cache_read_input_tokens = 0 },
        },
        uuid = "c0000001-0000-4000-8000-000000000002",
        timestamp = "2026-01-21T09:00:05.000Z",
      }),
    }, "\n") .. "\n")
    vim.cmd("ClaudeChatNew")
    assert.is_nil(chat.session)
    assert.are.equal("", transcript())
    local labels
    local calls = H.async_select(function(items, opts)
      labels = vim.tbl_map(opts.format_item, items)
      for i, it in ipairs(items) do
        if it.sessionId == first then
          return i
        end
      end
    end)
    vim.cmd("ClaudeChatSessions")
    H.wait(10000, function()
      return chat.session == first
    end, "the session to resume")
    assert.are.equal(1, #calls)
    local ref_label
    for _, l in ipairs(labels) do
      if l:find("What is in the reference session?", 1, true) then
        ref_label = l
      end
    end
    assert.is_not_nil(ref_label, table.concat(labels, "\n"))
    assert.matches("read-only", ref_label, 1, true)
    local t = transcript()
    assert.matches("Please set the cart to 2", t, 1, true)
    assert.matches("Done: the cart now holds 2.", t, 1, true)
    assert.matches("**⚙ Edit** `src/cart.ts`", t, 1, true)
    -- The resumed session takes the next message.
    fake:push({ { text = "Still here." } })
    local before = done_count()
    vim.cmd("ClaudeChat Are you there?")
    assert.are.equal("completed", wait_done(before + 1).outcome)
    assert.matches("Still here.", transcript(), 1, true)
    assert.are.equal(first, chat.session)
    -- Claude Code's session continues in a new one of ours.
    H.async_select(function(items)
      for i, it in ipairs(items) do
        if it.sessionId == ref_id then
          return i
        end
      end
    end)
    vim.cmd("ClaudeChatSessions")
    H.wait(10000, function()
      return chat.session ~= first and chat.session ~= nil
    end, "the reference session to resume")
    t = transcript()
    assert.matches("What is in the reference session?", t, 1, true)
    assert.matches("Reference answer.", t, 1, true)
    assert.matches("read-only there", t, 1, true)
  end)

  it(
    "switches the permission mode with :ClaudeChatMode: plan refuses an edit, the winbar and statusline say so",
    function()
      vim.cmd.edit(root .. "/src/cart.ts")
      local chat = chat_mod.get(root)
      vim.cmd("ClaudeChatMode plan")
      H.wait(10000, function()
        return chat.mode == "plan"
      end, "the mode to switch")
      H.wait(5000, function()
        return require("claude_context").status():find("plan", 1, true) ~= nil
      end, function()
        return "the statusline to show the mode: " .. require("claude_context").status()
      end)
      local win = vim.fn.win_findbuf(chat.buf)[1]
      if win then
        assert.matches("mode plan", vim.wo[win].winbar, 1, true)
      end
      local disk = H.read(root .. "/src/cart.ts")
      fake:push({
        {
          text = "Planning.",
          toolUses = {
            {
              id = "toolu_pm",
              name = "Edit",
              input = { file_path = root .. "/src/cart.ts", old_string = "cart", new_string = "basket" },
            },
          },
        },
        { text = "The plan: rename it." },
      })
      local calls = H.async_select(function()
        return false
      end)
      local before = done_count()
      vim.cmd("ClaudeChat Plan the rename")
      assert.are.equal("completed", wait_done(before + 1).outcome)
      assert.are.equal(0, #calls, "plan mode asks nothing: it refuses")
      local refused
      for _, e in ipairs(events) do
        if e.kind == "toolResult" and e.toolUseId == "toolu_pm" then
          refused = e
        end
      end
      assert.is_true(refused.isError)
      assert.are.equal(("Cannot write to %s/src/cart.ts while in plan mode."):format(root), refused.content)
      assert.are.equal(disk, H.read(root .. "/src/cart.ts"))
      vim.cmd("ClaudeChatMode default")
      H.wait(10000, function()
        return chat.mode == "default"
      end, "the mode to switch back")
      assert.is_nil(require("claude_context").status():find("plan", 1, true))
    end
  )

  it("switches the output style with :ClaudeChatStyle: the next request carries the style", function()
    vim.cmd.edit(root .. "/src/cart.ts")
    local chat = chat_mod.get(root)
    assert.is_not_nil(chat.session, "the earlier tests started a session")
    vim.cmd("ClaudeChatStyle Explanatory")
    H.wait(10000, function()
      return chat.style == "Explanatory"
    end, "the style to switch")
    fake:push({ { text = "Explained." } })
    local before = done_count()
    vim.cmd("ClaudeChat Explain the cart")
    assert.are.equal("completed", wait_done(before + 1).outcome)
    local reqs = fake:requests()
    -- In the prompt's message (the session's system prompt stays as it started: default).
    local last = vim.json.encode(reqs[#reqs].body.messages)
    assert.is_nil(vim.json.encode(reqs[#reqs].body.system):find("Output Style", 1, true))
    assert.matches("# Output Style: Explanatory", last, 1, true)
    assert.matches("Explanatory output style is active.", last, 1, true)
    -- A picker lists the session's styles, default first.
    local calls = H.async_select(function(items)
      for i, it in ipairs(items) do
        if it == "default" then
          return i
        end
      end
    end)
    vim.cmd("ClaudeChatStyle")
    H.wait(10000, function()
      return chat.style == "default"
    end, "the style to switch back")
    assert.are.equal("default", calls[1].items[1])
  end)
end)
