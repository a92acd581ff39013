-- Diff review: an Edit of several lines opens a tab with the buffer as it is and as the edit
-- leaves it (diff highlighting, unsaved text included), answered with its keys; accepted, the
-- edit lands in the buffer unsaved; rejected, nothing changes; a small edit keeps the compact
-- question.
local H = require("helpers")

local root, fake

local E = H.chat_events(function()
  return root
end)
local done_count, wait_done = E.done_count, E.wait_done

--- The review's windows once open: { left = win, right = win }.
local function review()
  local found
  H.wait(30000, function()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
      if name:find("claude-context://proposed/", 1, true) then
        found = found or {}
        found.right = win
      elseif name:find("claude-context://current/", 1, true) then
        found = found or {}
        found.left = win
      end
    end
    return found and found.left and found.right
  end, "the diff review")
  return found
end

--- Presses `key` in the review's right window (its buffer-local mapping).
local function press(win, key)
  local buf = vim.api.nvim_win_get_buf(win)
  for _, m in ipairs(vim.api.nvim_buf_get_keymap(buf, "n")) do
    if m.lhs == key then
      vim.api.nvim_win_call(win, m.callback)
      return
    end
  end
  error("no key " .. key .. " in the review")
end

local FIVE = "one\ntwo\nthree\nfour\nfive\n"

describe("the diff review", function()
  setup(function()
    root = H.project({ ["CLAUDE.md"] = "# Shop\n", ["src/list.ts"] = FIVE, ["src/small.ts"] = "a = 1\n" })
    fake = H.fake()
    H.setup(fake)
    vim.cmd.edit(root .. "/src/list.ts")
    H.client()
    E.start()
  end)

  teardown(function()
    fake:stop()
  end)

  it("opens an edit of several lines as a diff, the unsaved text on the left; accepted, it lands unsaved", function()
    local src = vim.api.nvim_get_current_buf()
    -- An unsaved change the edit applies to.
    vim.api.nvim_buf_set_lines(src, 0, 1, false, { "ONE" })
    fake:push({
      {
        toolUses = {
          {
            id = "toolu_d1",
            name = "Edit",
            input = {
              file_path = root .. "/src/list.ts",
              old_string = "two\nthree\nfour\nfive",
              new_string = "2\n3\n4\n5\n6",
            },
          },
        },
      },
      { text = "Changed." },
    })
    local origin = vim.api.nvim_get_current_win()
    local before = done_count()
    vim.cmd("ClaudeChat Number them")
    local r = review()
    assert.are.same(
      { "ONE", "two", "three", "four", "five" },
      vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(r.left), 0, -1, false)
    )
    assert.are.same(
      { "ONE", "2", "3", "4", "5", "6" },
      vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(r.right), 0, -1, false)
    )
    assert.is_true(vim.wo[r.left].diff and vim.wo[r.right].diff)
    assert.are.equal(vim.api.nvim_win_get_tabpage(r.left), vim.api.nvim_win_get_tabpage(r.right))
    assert.are_not.equal(vim.api.nvim_win_get_tabpage(origin), vim.api.nvim_win_get_tabpage(r.right))
    assert.matches("a Allow once", vim.wo[r.right].winbar, 1, true)
    assert.matches("r/q Deny", vim.wo[r.right].winbar, 1, true)
    assert.are.equal("typescript", vim.bo[vim.api.nvim_win_get_buf(r.right)].filetype)
    press(r.right, "a")
    wait_done(before + 1)
    -- The review is gone, the user is back where they were, the edit is in the buffer, unsaved.
    assert.is_false(vim.api.nvim_win_is_valid(r.right))
    assert.is_false(vim.api.nvim_win_is_valid(r.left))
    H.wait(2000, function()
      return vim.api.nvim_get_current_win() == origin
    end, "the focus back in the user's window")
    assert.are.same({ "ONE", "2", "3", "4", "5", "6" }, vim.api.nvim_buf_get_lines(src, 0, -1, false))
    assert.is_true(vim.bo[src].modified)
    assert.are.equal(FIVE, H.read(root .. "/src/list.ts"))
  end)

  it("rejected with its key, changes nothing; closing the tab rejects too", function()
    local src = vim.fn.bufnr(root .. "/src/list.ts")
    local was = vim.api.nvim_buf_get_lines(src, 0, -1, false)
    fake:push({
      {
        toolUses = {
          { id = "toolu_d2", name = "Write", input = { file_path = root .. "/src/list.ts", content = "x\ny\nz\nw\n" } },
        },
      },
    })
    local before = done_count()
    vim.cmd("ClaudeChat Rewrite it")
    local r = review()
    press(r.right, "r")
    wait_done(before + 1)
    assert.are.same(was, vim.api.nvim_buf_get_lines(src, 0, -1, false))
    -- Closing the review's tab is a denial.
    fake:push({
      {
        toolUses = {
          {
            id = "toolu_d3",
            name = "Write",
            input = { file_path = root .. "/src/new.ts", content = "1\n2\n3\n4\n5\n" },
          },
        },
      },
    })
    before = done_count()
    vim.cmd("ClaudeChat Write a new file")
    r = review()
    assert.are.same({ "" }, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(r.left), 0, -1, false))
    assert.matches("a new file", vim.wo[r.left].winbar, 1, true)
    vim.api.nvim_set_current_win(r.right)
    vim.cmd("tabclose")
    wait_done(before + 1)
    assert.is_nil(vim.uv.fs_stat(root .. "/src/new.ts"))
    assert.are.equal(0, #require("claude_context.permission").open_prompts())
  end)

  it("keeps the compact question for a small edit", function()
    local calls = H.async_select(function(items)
      for i, it in ipairs(items) do
        if it.decision == "allow" then
          return i
        end
      end
    end)
    fake:push({
      {
        toolUses = {
          {
            id = "toolu_s",
            name = "Edit",
            input = { file_path = root .. "/src/small.ts", old_string = "a = 1", new_string = "a = 2" },
          },
        },
      },
      { text = "Small." },
    })
    local before = done_count()
    vim.cmd("ClaudeChat Small change")
    wait_done(before + 1)
    assert.are.equal(1, #calls)
    assert.are.equal("a = 2\n", H.read(root .. "/src/small.ts"))
  end)
end)
