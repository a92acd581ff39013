-- The chat's writer: coalesced writes at the end of the buffer; a window whose cursor is at the
-- end follows, no other window or cursor moves, focus stays; folds; a restarted answer removed.
local writer = require("claude_context.writer")

describe("the chat writer", function()
  it("coalesces deltas, follows the end only where the cursor is there, and never moves focus", function()
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "line 1", "line 2", "line 3" })
    vim.bo[buf].modifiable = false
    local w = writer.new(buf, 30)
    local home = vim.api.nvim_get_current_win()
    vim.cmd("vsplit")
    local at_end = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(at_end, buf)
    vim.api.nvim_win_set_cursor(at_end, { 3, 0 })
    vim.cmd("split")
    local reading = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(reading, buf)
    vim.api.nvim_win_set_cursor(reading, { 1, 2 })
    vim.api.nvim_set_current_win(home)
    local flushes = 0
    w.on_flush = function()
      flushes = flushes + 1
    end
    for i = 1, 200 do
      w:append(i % 20 == 0 and "\n" or "x")
    end
    assert.are.equal(0, flushes) -- nothing written synchronously
    assert.is_true(vim.wait(1000, function()
      return flushes > 0
    end, 5))
    assert.are.equal(1, flushes)
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    assert.are.equal(13, #lines)
    assert.are.equal("line 3" .. string.rep("x", 19), lines[3])
    assert.are.same({ 13, 0 }, vim.api.nvim_win_get_cursor(at_end))
    assert.are.same({ 1, 2 }, vim.api.nvim_win_get_cursor(reading))
    assert.are.equal(home, vim.api.nvim_get_current_win())
    assert.is_false(vim.bo[buf].modifiable)
  end)

  it("shows a closed fold's first line rendered: no raw ** or backticks, brackets kept", function()
    local buf = vim.api.nvim_create_buf(false, true)
    local w = writer.new(buf, 10)
    w:append("## Claude\n\n")
    w:fold_begin()
    w:append("**⚙ Bash** `ls src/[id]` and a[0] * 2\n```json\n{}\n```\n")
    w:fold_end()
    w:flush()
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.foldmethod = "expr"
    vim.wo.foldexpr = "v:lua.require'claude_context.writer'.foldexpr()"
    vim.wo.foldtext = "v:lua.require'claude_context.writer'.foldtext()"
    vim.wo.foldlevel = 0
    assert.are.equal(3, vim.fn.foldclosed(4))
    assert.are.equal("⚙ Bash ls src/[id] and a[0] * 2  · 3 more lines", vim.fn.foldtextresult(3))
    assert.are.same({
      { "⚙ Bash", "@markup.strong" },
      { " ", "Folded" },
      { "ls src/[id]", "@markup.raw" },
      { " and a[0] * 2", "Folded" },
    }, writer.markdown_chunks("**⚙ Bash** `ls src/[id]` and a[0] * 2", "Folded"))
    -- Unclosed markers are text.
    assert.are.same({ { "**half `open", "Folded" } }, writer.markdown_chunks("**half `open", "Folded"))
  end)

  it("keeps folds for foldexpr and removes a restarted answer with its folds", function()
    local buf = vim.api.nvim_create_buf(false, true)
    local w = writer.new(buf, 10)
    w:append("## Claude\n\n")
    local mark = w:mark()
    w:append("partial answer ")
    w:fold_begin()
    w:append("**tool**\nbody\n")
    w:fold_end()
    w:flush()
    assert.are.same({ { s = 4, e = 5 } }, w.folds)
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.foldmethod = "expr"
    vim.wo.foldexpr = "v:lua.require'claude_context.writer'.foldexpr()"
    vim.wo.foldlevel = 0
    assert.are.equal(4, vim.fn.foldclosed(5))
    w:truncate(mark)
    assert.are.same({}, w.folds)
    assert.are.same({ "## Claude", "", "" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
    w:append("whole answer")
    w:flush()
    assert.are.same({ "## Claude", "", "whole answer" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  end)
end)
