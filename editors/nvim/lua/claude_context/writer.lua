--- The chat transcript's writer: text is appended at the end of the buffer with
--- `nvim_buf_set_text`, coalesced (one write per `flush_ms`, not one per delta); a window whose
--- cursor is on the last line follows the end, no other window or cursor moves, focus never
--- changes. It also keeps the folds (tool calls and results, thinking) for `foldexpr`, a mark
--- for "the answer streamed so far" (discarded on a `restart`), and one transient line
--- (virtual text: retries) that goes with the next write.

local M = {}

local uv = vim.uv or vim.loop

---@class claude_context.Fold
---@field s integer first line (1-based)
---@field e integer? last line; nil while the fold is being written

---@class claude_context.Writer
---@field buf integer
---@field flush_ms integer
---@field pending string[]
---@field nlines integer lines of the buffer once the pending text is written
---@field lastlen integer bytes of the last line once the pending text is written
---@field tail string the last two characters of the content once written ("\n\n" when empty)
---@field folds claude_context.Fold[]
---@field scheduled boolean
---@field timer uv.uv_timer_t?
---@field transient integer? extmark id
---@field on_flush fun()?
local Writer = {}
Writer.__index = Writer

local ns = vim.api.nvim_create_namespace("claude_context.chat")
M.ns = ns

---@type table<integer, claude_context.Writer>
local by_buf = {}

--- A writer for `buf` (its current content kept).
---@param buf integer
---@param flush_ms integer?
---@return claude_context.Writer
function M.new(buf, flush_ms)
  local w = setmetatable({
    buf = buf,
    flush_ms = flush_ms or 30,
    pending = {},
    folds = {},
    scheduled = false,
  }, Writer)
  w:sync()
  by_buf[buf] = w
  return w
end

---@param buf integer
---@return claude_context.Writer?
function M.get(buf)
  return by_buf[buf]
end

--- Reads the end state from the buffer (after a direct change).
function Writer:sync()
  local count = vim.api.nvim_buf_line_count(self.buf)
  local lines = vim.api.nvim_buf_get_lines(self.buf, math.max(0, count - 2), count, true)
  local last = lines[#lines] or ""
  self.nlines = count
  self.lastlen = #last
  local src = #lines >= 2 and (lines[1] .. "\n" .. last) or last
  if #src < 2 then
    src = "\n\n" .. src
  end
  self.tail = src:sub(-2)
end

--- Appends `text` (written at the next flush).
---@param text string
function Writer:append(text)
  if text == "" then
    return
  end
  self.pending[#self.pending + 1] = text
  local last_nl = nil
  local n = 0
  local i = 0
  while true do
    i = text:find("\n", i + 1, true)
    if not i then
      break
    end
    n = n + 1
    last_nl = i
  end
  if last_nl then
    self.nlines = self.nlines + n
    self.lastlen = #text - last_nl
  else
    self.lastlen = self.lastlen + #text
  end
  self.tail = (self.tail .. text):sub(-2)
  self:schedule()
end

--- Starts a new line unless at one.
function Writer:bol()
  if self.tail:sub(-1) ~= "\n" then
    self:append("\n")
  end
end

--- Leaves one empty line before what follows (a new paragraph or block).
function Writer:blank()
  self:bol()
  if self.tail ~= "\n\n" then
    self:append("\n")
  end
end

--- Where the next character goes: 0-based row and byte column.
---@return { [1]: integer, [2]: integer }
function Writer:mark()
  return { self.nlines - 1, self.lastlen }
end

--- Opens a fold at the next line.
function Writer:fold_begin()
  self:bol()
  self.folds[#self.folds + 1] = { s = self.nlines }
end

--- Closes the open fold at the last complete line.
function Writer:fold_end()
  local f = self.folds[#self.folds]
  if f and not f.e then
    self:bol()
    f.e = math.max(f.s, self.nlines - 1)
  end
end

function Writer:schedule()
  if self.scheduled then
    return
  end
  self.scheduled = true
  self.timer = self.timer or assert(uv.new_timer())
  self.timer:start(
    self.flush_ms,
    0,
    vim.schedule_wrap(function()
      self.scheduled = false
      self:flush()
    end)
  )
end

--- Writes what is pending now.
function Writer:flush()
  if self.timer and self.scheduled then
    self.timer:stop()
    self.scheduled = false
  end
  if #self.pending == 0 then
    return
  end
  local text = table.concat(self.pending)
  self.pending = {}
  local buf = self.buf
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  self:clear_transient()
  local lines = vim.split(text, "\n", { plain = true })
  local count = vim.api.nvim_buf_line_count(buf)
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, true)[1]
  local follow = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      follow[#follow + 1] = win
    end
  end
  local was = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_text(buf, count - 1, #last, count - 1, #last, lines)
  vim.bo[buf].modifiable = was
  local new_count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { new_count, 0 })
  end
  if self.on_flush then
    pcall(self.on_flush)
  end
end

--- Deletes everything from `mark` to the end (a restarted answer), folds included.
---@param mark { [1]: integer, [2]: integer }
function Writer:truncate(mark)
  self:flush()
  local buf = self.buf
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local count = vim.api.nvim_buf_line_count(buf)
  local row = math.min(mark[1], count - 1)
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
  local col = math.min(mark[2], #line)
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, true)[1]
  local was = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_text(buf, row, col, count - 1, #last, { "" })
  vim.bo[buf].modifiable = was
  local keep = {}
  for _, f in ipairs(self.folds) do
    if f.s <= row then
      if f.e and f.e > row then
        f.e = row
      end
      keep[#keep + 1] = f
    end
  end
  self.folds = keep
  self:sync()
end

--- Empties the buffer.
function Writer:clear()
  self.pending = {}
  self.folds = {}
  if vim.api.nvim_buf_is_valid(self.buf) then
    local was = vim.bo[self.buf].modifiable
    vim.bo[self.buf].modifiable = true
    vim.api.nvim_buf_set_lines(self.buf, 0, -1, false, {})
    vim.bo[self.buf].modifiable = was
    self:clear_transient()
  end
  self:sync()
end

--- A line under the end of the buffer that is not text (a retry in progress); replaced by the
--- next one, removed by the next write.
---@param text string
---@param hl? string
function Writer:set_transient(text, hl)
  self:flush()
  if not vim.api.nvim_buf_is_valid(self.buf) then
    return
  end
  self:clear_transient()
  local row = vim.api.nvim_buf_line_count(self.buf) - 1
  self.transient = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, {
    virt_lines = { { { text, hl or "DiagnosticWarn" } } },
  })
end

function Writer:clear_transient()
  if self.transient and vim.api.nvim_buf_is_valid(self.buf) then
    pcall(vim.api.nvim_buf_del_extmark, self.buf, ns, self.transient)
  end
  self.transient = nil
end

--- The transient line's text, if any (tests, health).
---@return string?
function Writer:transient_text()
  if not self.transient then
    return nil
  end
  local m = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, self.transient, { details = true })
  local vl = m and m[3] and m[3].virt_lines
  return vl and vl[1] and vl[1][1] and vl[1][1][1] or nil
end

function Writer:close()
  if self.timer then
    self.timer:stop()
    if not self.timer:is_closing() then
      self.timer:close()
    end
    self.timer = nil
  end
  by_buf[self.buf] = nil
end

--- `foldexpr` of the transcript window: the tool calls, results and thinking are folds.
---@return string
function M.foldexpr()
  local w = by_buf[vim.api.nvim_get_current_buf()]
  if not w then
    return "0"
  end
  local lnum = vim.v.lnum
  local folds = w.folds
  local lo, hi = 1, #folds
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local f = folds[mid]
    if lnum < f.s then
      hi = mid - 1
    elseif f.e and lnum > f.e then
      lo = mid + 1
    else
      if lnum == f.s then
        return ">1"
      elseif f.e and lnum == f.e then
        return "<1"
      end
      return "1"
    end
  end
  return "0"
end

--- The Markdown of one line as highlighted chunks: `**strong**` and `` `code` `` without their
--- markers, the rest as written (brackets included: a closed fold never hides a character the
--- line shows).
---@param line string
---@param base string highlight of plain text
---@return [string, string][]
function M.markdown_chunks(line, base)
  local out = {}
  local plain = {}
  local function flush()
    if #plain > 0 then
      out[#out + 1] = { table.concat(plain), base }
      plain = {}
    end
  end
  local i, n = 1, #line
  while i <= n do
    local ticks = line:match("^`+", i)
    if line:sub(i, i + 1) == "**" then
      local close = line:find("**", i + 2, true)
      if close and close > i + 2 then
        flush()
        out[#out + 1] = { line:sub(i + 2, close - 1), "@markup.strong" }
        i = close + 2
      else
        plain[#plain + 1] = "**"
        i = i + 2
      end
    elseif ticks then
      local close = line:find(ticks, i + #ticks, true)
      if close then
        flush()
        out[#out + 1] = { line:sub(i + #ticks, close - 1), "@markup.raw" }
        i = close + #ticks
      else
        plain[#plain + 1] = ticks
        i = i + #ticks
      end
    else
      local j = line:find("[`*]", i) or (n + 1)
      if j == i then
        j = i + 1
      end
      plain[#plain + 1] = line:sub(i, j - 1)
      i = j
    end
  end
  flush()
  return out
end

--- `foldtext` of the transcript window: the fold's first line rendered (no raw `**` or
--- backticks), then how many lines it holds.
---@return [string, string][]
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  local chunks = M.markdown_chunks(first, "Folded")
  local n = vim.v.foldend - vim.v.foldstart
  chunks[#chunks + 1] = { ("  · %d more line%s"):format(n, n == 1 and "" or "s"), "Comment" }
  return chunks
end

return M
