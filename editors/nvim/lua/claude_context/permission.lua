--- `chat/permission`: may this tool call run? (Or, `tool: "workspaceTrust"`, does the user trust
--- the chat's folder: Claude Code's trust dialog in its words, "No" first; and `mcpServer`, a
--- project's MCP server.) Asked with `vim.ui.select` (telescope, snacks,
--- fzf-lua, dressing: whatever you set), without blocking Neovim: the handler runs in the
--- coroutine Neovim gives each server request and yields until the picker answers. Neovim's own
--- `vim.ui.select` (`inputlist()`) would block the editor and cannot be closed from outside, so
--- in its place a small float asks. The prompt closes when the turn ends or is cancelled (the
--- server sends `$/cancelRequest`); a `vim.notify` says so when the chat is not visible.

local util = require("claude_context.util")

local M = {}

---@class claude_context.Prompt
---@field client_id integer
---@field session string
---@field params table
---@field done boolean
---@field waiting boolean
---@field wins integer[] windows the picker opened
---@field back claude_context.Where where the user was when the question came
---@field took_focus boolean? the question moved the cursor itself (its own tab)
---@field finish fun(decision: string?)

---@class claude_context.Where
---@field win integer
---@field buf integer
---@field insert boolean
---@field cursor integer[] (1,0)-indexed; in Insert mode the column is where the next character goes

---@type claude_context.Prompt[]
local open = {}

--- Neovim's own `vim.ui.select` (it blocks: `inputlist()`).
---@return boolean
local function builtin_select()
  local info = debug.getinfo(vim.ui.select, "S")
  return info ~= nil and type(info.source) == "string" and info.source:find("vim/ui%.lua$") ~= nil
end

--- Where the user is now: the window, and whether they were typing.
---@return claude_context.Where
local function where()
  local win = vim.api.nvim_get_current_win()
  return {
    win = win,
    buf = vim.api.nvim_win_get_buf(win),
    insert = vim.fn.mode():sub(1, 1) == "i",
    cursor = vim.api.nvim_win_get_cursor(win),
  }
end

--- Puts the user back where the question found them once it is answered: the window they were
--- in, and Insert mode at the same place if they were typing (a prompt left in Normal mode would
--- take the next words as commands: "Yes, use reduce." reached the model as ", use reduce.").
--- Nothing moves when the user went elsewhere meanwhile (a window of their own).
---@param prompt claude_context.Prompt
local function give_back(prompt)
  local back = prompt.back
  local cur = vim.api.nvim_get_current_win()
  local ours = cur == back.win or prompt.took_focus == true
  for _, win in ipairs(prompt.wins or {}) do
    ours = ours or win == cur
  end
  if not ours or not vim.api.nvim_win_is_valid(back.win) or vim.api.nvim_win_get_buf(back.win) ~= back.buf then
    return
  end
  if cur ~= back.win then
    vim.api.nvim_set_current_win(back.win)
  end
  if not back.insert or vim.fn.mode():sub(1, 1) == "i" then
    return
  end
  local row, col = back.cursor[1], back.cursor[2]
  local line = vim.api.nvim_buf_get_lines(back.buf, row - 1, row, false)[1]
  if line == nil then
    return
  end
  if col >= #line then
    -- At the end of the line: Normal mode cannot stand there, so append.
    pcall(vim.api.nvim_win_set_cursor, back.win, { row, math.max(#line - 1, 0) })
    vim.cmd.startinsert({ bang = true })
  else
    pcall(vim.api.nvim_win_set_cursor, back.win, { row, col })
    vim.cmd.startinsert()
  end
end

---@param prompt claude_context.Prompt
local function close_windows(prompt)
  local in_picker = false
  local cur = vim.api.nvim_get_current_win()
  for _, win in ipairs(prompt.wins or {}) do
    if win == cur then
      in_picker = true
    end
    if vim.api.nvim_win_is_valid(win) then
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
  if in_picker and vim.fn.mode():sub(1, 1) == "i" then
    pcall(vim.cmd.stopinsert)
  end
end

--- The lines that show what the tool would do (the float shows them; pickers show the summary).
---@param params table
---@return string[]
local function details(params)
  local input = type(params.input) == "table" and params.input or {}
  local out = {}
  local function add_block(prefix, text, max)
    local lines = util.lines(tostring(text))
    for i, l in ipairs(lines) do
      if i > max then
        out[#out + 1] = ("  … %d more lines"):format(#lines - max)
        break
      end
      out[#out + 1] = prefix .. util.one_line(l)
    end
  end
  if params.tool == "Edit" then
    add_block("- ", input.old_string or "", 12)
    add_block("+ ", input.new_string or "", 12)
  elseif params.tool == "Write" then
    add_block("  ", input.content or "", 12)
  elseif params.tool == "Bash" then
    add_block("$ ", input.command or "", 12)
  elseif params.tool == "mcpServer" and type(input.url) == "string" then
    out[#out + 1] = "  url: " .. util.one_line(input.url)
    if input.source then
      out[#out + 1] = "  from " .. util.one_line(tostring(input.source))
    end
  elseif params.tool == "mcpServer" then
    local argv = { tostring(input.command or "?") }
    for _, a in ipairs(type(input.args) == "table" and input.args or {}) do
      argv[#argv + 1] = tostring(a)
    end
    add_block("$ ", table.concat(argv, " "), 4)
    if input.source then
      out[#out + 1] = "  from " .. util.one_line(tostring(input.source))
    end
  end
  return out
end

--- The trust question (`tool: "workspaceTrust"`): does the user trust the session's folder?
---@param params table
---@return boolean
local function is_trust(params)
  return params.tool == "workspaceTrust"
end
M.is_trust = is_trust

--- `text` cut into lines of at most `width` display cells, at spaces.
---@param text string
---@param width integer
---@return string[]
local function wrap(text, width)
  local out = {}
  for _, para in ipairs(util.lines(text)) do
    local line = ""
    for word in para:gmatch("%S+") do
      if line ~= "" and vim.fn.strdisplaywidth(line .. " " .. word) > width then
        out[#out + 1] = line
        line = word
      else
        line = line == "" and word or (line .. " " .. word)
      end
    end
    out[#out + 1] = line
  end
  return out
end

--- The answers offered, in order.
---@param params table
---@return { decision: string, label: string }[]
function M.choices(params)
  -- The server's own words for each answer when it sends them (a project's MCP server: Claude
  -- Code's dialog), else ours.
  local words = type(params.choices) == "table" and params.choices or {}
  local function word(key, default)
    return type(words[key]) == "string" and words[key] ~= "" and util.one_line(words[key]) or default
  end
  local out = { { decision = "allow", label = word("allow", "Allow once") } }
  -- No scope: a file that makes programs run code can only be allowed once.
  if type(params.sessionScope) == "string" and params.sessionScope ~= "" then
    out[#out + 1] = {
      decision = "allowSession",
      label = word("allowSession", "Allow for this session: " .. util.one_line(params.sessionScope)),
    }
  end
  out[#out + 1] = { decision = "deny", label = word("deny", "Deny") }
  if is_trust(params) then
    -- As in Claude Code's dialog, "no" comes first (the default).
    table.insert(out, 1, table.remove(out))
  end
  return out
end

--- The question's first line: the summary, and the server's warning when it sent one.
---@param params table
---@return string
function M.title(params)
  local summary = util.one_line(params.summary or params.tool or "?")
  if is_trust(params) then
    -- Claude Code's trust dialog, in its words: the folder, the safety check, what trusting
    -- loads.
    local text = type(params.warning) == "string" and util.lines(params.warning) or {}
    return table.concat(vim.list_extend({ summary }, vim.tbl_map(util.one_line, text)), " ")
  end
  -- A question in the server's own words (`choices`) is its own title, not a tool run.
  local t = type(params.choices) == "table" and summary or ("Claude wants to run: " .. summary)
  if type(params.warning) == "string" and params.warning ~= "" then
    t = t .. " ⚠ " .. util.one_line(params.warning)
  end
  -- Why it is asked (an ask rule, the command checker's words).
  if type(params.reason) == "string" and params.reason ~= "" then
    t = t .. " (" .. util.one_line(params.reason) .. ")"
  end
  return t
end

--- The float used in place of Neovim's blocking `vim.ui.select`.
---@param prompt claude_context.Prompt
local function ask_float(prompt)
  local params = prompt.params
  local items = M.choices(params)
  local lines = { "Claude wants to run: " .. util.one_line(params.summary or params.tool or "?"), "" }
  if is_trust(params) then
    -- The trust dialog: its title and its text, wrapped.
    lines = { util.one_line(params.summary or "?"), "" }
    for _, l in
      ipairs(
        wrap(type(params.warning) == "string" and params.warning or "", math.max(40, math.min(96, vim.o.columns - 8)))
      )
    do
      lines[#lines + 1] = l
    end
    lines[#lines + 1] = ""
  elseif type(params.warning) == "string" and params.warning ~= "" then
    lines[#lines + 1] = "⚠ " .. util.one_line(params.warning)
    lines[#lines + 1] = ""
  end
  if type(params.reason) == "string" and params.reason ~= "" then
    lines[#lines + 1] = "why: " .. util.one_line(params.reason)
    lines[#lines + 1] = ""
  end
  for _, l in ipairs(details(params)) do
    lines[#lines + 1] = l
  end
  if #lines > 2 then
    lines[#lines + 1] = ""
  end
  local first = #lines + 1
  for i, c in ipairs(items) do
    lines[#lines + 1] = ("  %d  %s"):format(i, c.label)
  end
  lines[#lines + 1] = ""
  local keys = {}
  for i = 1, #items do
    keys[i] = tostring(i)
  end
  lines[#lines + 1] = ("  %s or <CR> on a line; q or <Esc> denies"):format(table.concat(keys, "/"))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local w = 30
  for _, l in ipairs(lines) do
    w = math.max(w, vim.fn.strdisplaywidth(l) + 2)
  end
  w = math.min(w, vim.o.columns - 4)
  local h = math.min(#lines, vim.o.lines - 4)
  if vim.fn.mode():sub(1, 1) == "i" then
    pcall(vim.cmd.stopinsert)
  end
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = w,
    height = h,
    row = math.floor((vim.o.lines - h) / 2),
    col = math.floor((vim.o.columns - w) / 2),
    border = "rounded",
    title = is_trust(params) and " claude-context: workspace trust " or " claude-context: permission ",
    style = "minimal",
  })
  vim.wo[win].cursorline = true
  pcall(vim.api.nvim_win_set_cursor, win, { first, 0 })
  prompt.wins = { win }
  prompt.took_focus = true
  local function pick(i)
    local c = items[i]
    close_windows(prompt)
    prompt.finish(c and c.decision or "deny")
  end
  for i = 1, #items do
    vim.keymap.set("n", tostring(i), function()
      pick(i)
    end, { buffer = buf, nowait = true })
  end
  vim.keymap.set("n", "<CR>", function()
    local row = vim.api.nvim_win_get_cursor(win)[1]
    local i = row - first + 1
    if items[i] then
      pick(i)
    end
  end, { buffer = buf, nowait = true })
  local deny = #items
  for i, c in ipairs(items) do
    if c.decision == "deny" then
      deny = i
    end
  end
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, function()
      pick(deny)
    end, { buffer = buf, nowait = true })
  end
  vim.api.nvim_create_autocmd("WinClosed", {
    pattern = tostring(win),
    once = true,
    callback = function()
      vim.schedule(function()
        prompt.finish("deny")
      end)
    end,
  })
end

--- The diff review of an edit (a tab, `diff` highlighting), when the edit is big enough.
---@param prompt claude_context.Prompt
---@return boolean asked false: ask another way
local function ask_diff(prompt)
  local o = require("claude_context.config").options.chat or {}
  if o.diff == false then
    return false
  end
  local diff = require("claude_context.diff")
  local proposal = diff.proposal(prompt.params, o.diff_min_lines or 4)
  if not proposal then
    return false
  end
  if vim.fn.mode():sub(1, 1) == "i" then
    pcall(vim.cmd.stopinsert)
  end
  local function pick(decision)
    close_windows(prompt)
    prompt.finish(decision)
  end
  prompt.wins = diff.open(proposal, M.choices(prompt.params), M.title(prompt.params), pick)
  prompt.took_focus = true
  for _, win in ipairs(prompt.wins) do
    vim.api.nvim_create_autocmd("WinClosed", {
      pattern = tostring(win),
      once = true,
      callback = function()
        vim.schedule(function()
          close_windows(prompt)
          prompt.finish("deny")
        end)
      end,
    })
  end
  return true
end

---@param prompt claude_context.Prompt
local function ask_select(prompt)
  local params = prompt.params
  local before = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    before[win] = true
  end
  vim.ui.select(M.choices(params), {
    prompt = M.title(params),
    kind = "claude_context.permission",
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    prompt.finish(choice and choice.decision or "deny")
  end)
  -- Windows the picker opened: closed if the server cancels the request.
  prompt.wins = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if not before[win] then
      prompt.wins[#prompt.wins + 1] = win
    end
  end
end

--- Notes the question and the answer in the transcript.
---@param params table
---@param text string
local function note(params, text)
  local chat = package.loaded["claude_context.chat"]
  if chat then
    local c = chat.by_session(params.sessionId)
    if c then
      c.w:bol()
      c.w:append(text .. "\n")
      c.w:flush()
    end
  end
end

local answers = { allow = "allowed once", allowSession = "allowed for this session", deny = "denied" }
local trust_answers = { allow = "trusted", deny = "not trusted" }

--- The `chat/permission` handler (runs in the request's coroutine).
---@param params table
---@param ctx lsp.HandlerContext
---@return table? result
---@return lsp.ResponseError? err
function M.handle(params, ctx)
  if type(params) ~= "table" then
    return { decision = "deny" }
  end
  local co, main = coroutine.running()
  local can_yield = co ~= nil and not main
  ---@type claude_context.Prompt
  local prompt = {
    client_id = ctx.client_id,
    session = params.sessionId,
    params = params,
    done = false,
    waiting = false,
    wins = {},
    back = where(),
  }
  local result ---@type string?
  prompt.finish = function(decision)
    if prompt.done then
      return
    end
    prompt.done = true
    for i, p in ipairs(open) do
      if p == prompt then
        table.remove(open, i)
        break
      end
    end
    result = decision
    if prompt.took_focus then
      -- Our own float or tab, closed by now: at once, so the keys typed right after the answer
      -- (already waiting) are read in Insert mode.
      pcall(give_back, prompt)
    else
      -- After the picker's own closing (it may move the cursor when its callback returns).
      vim.schedule(function()
        pcall(give_back, prompt)
      end)
    end
    local words = is_trust(params) and trust_answers or answers
    note(params, decision and ("_→ %s_"):format(words[decision] or decision) or "_→ the question was withdrawn_")
    if prompt.waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  open[#open + 1] = prompt
  local trust = is_trust(params)
  note(
    params,
    ("**? %s:** %s"):format(
      trust and "Trust asked" or "Permission asked",
      util.one_line(params.summary or params.tool or "?")
    )
  )
  local chat = package.loaded["claude_context.chat"]
  if
    require("claude_context.config").options.chat.notify_on_permission
    and not (chat and chat.is_visible(params.sessionId))
  then
    local folder = type(params.input) == "table" and params.input.folder or "this folder"
    local what = trust and ("claude-context asks whether you trust %s"):format(util.one_line(tostring(folder)))
      or ("Claude asks to run %s"):format(util.one_line(params.summary or params.tool or "a tool"))
    util.notify(what .. ": answer in the prompt (:ClaudeChat shows the chat)", vim.log.levels.WARN)
  end
  local ok, err = pcall(function()
    if ask_diff(prompt) then
      return
    elseif builtin_select() then
      ask_float(prompt)
    else
      ask_select(prompt)
    end
  end)
  if not ok then
    pcall(require("vim.lsp.log").error, "claude-context: permission prompt: " .. tostring(err))
    prompt.finish("deny")
  end
  if not prompt.done then
    if not can_yield then
      -- Not in a coroutine (an old Neovim): wait here, the editor stays responsive to input.
      vim.wait(15 * 60 * 1000, function()
        return prompt.done
      end, 50)
    else
      prompt.waiting = true
      coroutine.yield()
    end
  end
  if result == nil then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestCancelled, "the question was withdrawn")
  end
  return { decision = result }
end

--- Closes the open prompts of `session` (the turn ended or was cancelled).
---@param session string?
function M.close_session(session)
  for i = #open, 1, -1 do
    local p = open[i]
    if p and (session == nil or p.session == session) then
      close_windows(p)
      p.finish(nil)
    end
  end
end

--- `$/cancelRequest` from the server. Neovim does not tell a handler its request's id, so the
--- prompt is closed when it is the only one open on that server (a turn has one at a time);
--- otherwise the turn's `done` closes it.
---@param params table
---@param ctx lsp.HandlerContext
function M.on_cancel(params, ctx)
  local mine = {}
  for _, p in ipairs(open) do
    if p.client_id == ctx.client_id then
      mine[#mine + 1] = p
    end
  end
  if #mine == 1 then
    close_windows(mine[1])
    mine[1].finish(nil)
  end
end

--- The prompts waiting for an answer (tests, health).
---@return claude_context.Prompt[]
function M.open_prompts()
  return open
end

return M
