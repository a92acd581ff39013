--- The chat: one conversation per project (per server), owned here; the transcript buffer is
--- its view, rebuilt from `chat/resume` when needed. `:ClaudeChat` shows a markdown transcript
--- with a prompt window under it; `chat/event`s stream into the transcript through the
--- coalescing writer (never moving focus or a cursor that is not at the end).

local util = require("claude_context.util")
local writer = require("claude_context.writer")

local M = {}

---@class claude_context.ChatState
---@field root string the project folder
---@field client_id integer
---@field session string?
---@field needs_resume boolean the server restarted: resume the session before the next message
---@field buf integer the transcript
---@field prompt integer the prompt buffer
---@field w claude_context.Writer
---@field turn string? the running turn
---@field sending boolean a message is on its way (chat/new, chat/send not answered yet)
---@field answer { [1]: integer, [2]: integer }? where the answer being streamed started
---@field new_answer boolean the next content starts a new answer
---@field last { kind: string, index: integer? }?
---@field thinking boolean a thinking fold is open
---@field tools table<string, { name: string, input: table }>
---@field usage table? the last `usage` event
---@field title string?
---@field last_error string?
---@field mode string? the session's permission mode (or the one the next session starts in)
---@field modes table[]? the modes `chat/setMode` accepts (`{ id, name, description }`)
---@field style string? the session's output style, as `chat/setStyle` last answered
---@field styles string[]? the styles `chat/setStyle` last listed

---@type table<string, claude_context.ChatState>
local chats = {}

---@return claude_context.Options
local function options()
  return require("claude_context.config").options
end

local function lsp()
  return require("claude_context.lsp")
end

--- The live client of a chat (a restart gives a new one for the same folder).
---@param chat claude_context.ChatState
---@return vim.lsp.Client?
local function client_of(chat)
  local c = vim.lsp.get_client_by_id(chat.client_id)
  if c and not c:is_stopped() then
    return c
  end
  for _, other in ipairs(lsp().clients()) do
    if other.root_dir == chat.root and not other:is_stopped() then
      if chat.client_id ~= other.id then
        chat.client_id = other.id
        chat.needs_resume = chat.session ~= nil
      end
      return other
    end
  end
  return nil
end

-- Lookups for the other modules ---------------------------------------------------------------

---@param client_id integer
---@return string?
function M.session_of_client(client_id)
  for _, chat in pairs(chats) do
    if chat.client_id == client_id and chat.session and not chat.needs_resume then
      return chat.session
    end
  end
  return nil
end

---@param buf integer
---@return claude_context.ChatState?
local function chat_of_buffer(buf)
  for _, chat in pairs(chats) do
    if chat.buf == buf or chat.prompt == buf then
      return chat
    end
  end
  return nil
end

---@param buf integer
---@return vim.lsp.Client?
function M.client_of_buffer(buf)
  local chat = chat_of_buffer(buf)
  return chat and client_of(chat) or nil
end

---@param buf integer
---@return integer?
function M.client_id_of_buffer(buf)
  local chat = chat_of_buffer(buf)
  return chat and chat.client_id or nil
end

---@param session string
---@return claude_context.ChatState?
function M.by_session(session)
  for _, chat in pairs(chats) do
    if chat.session == session then
      return chat
    end
  end
  return nil
end

--- The chat of `root` (tests).
---@param root? string
---@return claude_context.ChatState?
function M.get(root)
  if root then
    return chats[root]
  end
  local _, chat = next(chats)
  return chat
end

--- The chat is shown in a window of the current tab.
---@param chat claude_context.ChatState
---@return integer? win
local function visible(chat)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == chat.buf then
      return win
    end
  end
  return nil
end

---@param session string
---@return boolean
function M.is_visible(session)
  local chat = M.by_session(session)
  return chat ~= nil and visible(chat) ~= nil
end

-- The view --------------------------------------------------------------------------------------

---@param chat claude_context.ChatState
local function winbar(chat)
  local parts = { "Claude · " .. vim.fs.basename(chat.root) }
  if chat.session then
    parts[#parts + 1] = "session " .. chat.session:sub(1, 8)
  end
  if chat.usage then
    parts[#parts + 1] = ("%s/%s (%.1f%%)"):format(
      util.short(chat.usage.contextTokens),
      util.short(chat.usage.window),
      chat.usage.percent or 0
    )
  end
  if chat.mode then
    parts[#parts + 1] = "mode " .. chat.mode
  end
  if chat.turn or chat.sending then
    parts[#parts + 1] = "answering… (" .. (options().chat.keymaps.cancel or ":ClaudeChatCancel") .. " stops)"
  end
  local text = table.concat(parts, " · "):gsub("%%", "%%%%")
  for _, win in ipairs(vim.fn.win_findbuf(chat.buf)) do
    pcall(function()
      vim.wo[win].winbar = text
    end)
  end
end

---@param chat claude_context.ChatState
local function keymaps(chat)
  local k = options().chat.keymaps or {}
  local function map(buf, modes, lhs, fn, desc)
    if lhs and lhs ~= "" then
      vim.keymap.set(modes, lhs, function()
        util.safe(desc, fn)
      end, { buffer = buf, desc = "claude-context: " .. desc, nowait = true })
    end
  end
  local send = function()
    M.send_prompt(chat)
  end
  map(chat.prompt, { "n", "i" }, k.send, send, "send the prompt")
  map(chat.prompt, "n", k.send_normal, send, "send the prompt")
  map(chat.prompt, "n", k.cancel, function()
    M.cancel(chat)
  end, "stop the answer")
  map(chat.buf, "n", k.cancel, function()
    M.cancel(chat)
  end, "stop the answer")
  map(chat.buf, "n", k.close, function()
    M.hide(chat)
  end, "hide the chat")
  for _, key in ipairs({ "i", "a", "o" }) do
    map(chat.buf, "n", key, function()
      M.show(chat, true)
      vim.cmd.startinsert({ bang = true })
    end, "type in the prompt")
  end
end

--- Markdown's inline highlights without the conceal of a shortcut link's brackets: in a chat,
--- `a[0]` or `[Request interrupted by user]` is text, not a link, and must keep its brackets.
--- `nil` when the installed query has no such rule (then the buffer keeps the default).
---@return string?
local function inline_query_keeping_brackets()
  local ok, files = pcall(vim.treesitter.query.get_files, "markdown_inline", "highlights")
  if not ok or #files == 0 then
    return nil
  end
  local parts = {}
  for _, file in ipairs(files) do
    local f = io.open(file, "rb")
    if f then
      parts[#parts + 1] = f:read("*a")
      f:close()
    end
  end
  local text = table.concat(parts, "\n"):gsub("; *[Ee]xtends *\n", "\n")
  local kept, n = text:gsub('%(shortcut_link%s*%[%s*"%["%s*"%]"%s*%]%s*@[%w%.]+%s*%(#set! conceal ""%)%)', "")
  return n > 0 and kept or nil
end

--- Highlights `buf` (Markdown) with treesitter, keeping a shortcut link's brackets visible.
---@param buf integer
local function highlight_keeping_brackets(buf)
  local query = inline_query_keeping_brackets()
  if not query then
    return
  end
  pcall(function()
    local parser = vim.treesitter.get_parser(buf, "markdown")
    if not parser then
      return
    end
    if vim.treesitter.highlighter.active[buf] then
      vim.treesitter.stop(buf)
    end
    vim.treesitter.highlighter.new(parser, { queries = { markdown_inline = query } })
  end)
end

---@param root string
---@param client vim.lsp.Client
---@return claude_context.ChatState
local function create(root, client)
  local name = vim.fs.basename(root)
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, "claude-context://chat/" .. name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  highlight_keeping_brackets(buf)
  vim.bo[buf].modifiable = false
  local prompt = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, prompt, "claude-context://prompt/" .. name)
  vim.bo[prompt].buftype = "nofile"
  vim.bo[prompt].bufhidden = "hide"
  vim.bo[prompt].swapfile = false
  vim.bo[prompt].filetype = "markdown"
  local chat = {
    root = root,
    client_id = client.id,
    needs_resume = false,
    buf = buf,
    prompt = prompt,
    w = writer.new(buf, options().chat.flush_ms),
    sending = false,
    new_answer = false,
    thinking = false,
    tools = {},
  }
  chats[root] = chat
  keymaps(chat)
  return chat
end

---@param chat claude_context.ChatState
---@param win integer
local function style_transcript(chat, win)
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "no"
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'claude_context.writer'.foldexpr()"
  wo.foldtext = "v:lua.require'claude_context.writer'.foldtext()"
  wo.fillchars = "fold: "
  wo.foldlevel = 0
  wo.foldenable = true
  wo.conceallevel = 2
  winbar(chat)
end

--- Shows the chat in the current tab (transcript, prompt under it). Returns the prompt window.
---@param chat claude_context.ChatState
---@param focus boolean move the cursor to the prompt
---@return integer? prompt_win
function M.show(chat, focus)
  local origin = vim.api.nvim_get_current_win()
  local twin = visible(chat)
  local pwin
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == chat.prompt then
      pwin = win
    end
  end
  local o = options().chat
  if not twin then
    local function size(v, total)
      return v > 1 and math.floor(v) or math.max(10, math.floor(total * v))
    end
    if o.position == "tab" then
      vim.cmd("tab split")
      vim.api.nvim_win_set_buf(0, chat.buf)
    elseif o.position == "bottom" then
      vim.cmd("botright " .. size(o.height or 0.4, vim.o.lines) .. "split")
      vim.api.nvim_win_set_buf(0, chat.buf)
    else
      vim.cmd((o.position == "left" and "topleft " or "botright ") .. size(o.width or 0.4, vim.o.columns) .. "vsplit")
      vim.api.nvim_win_set_buf(0, chat.buf)
      vim.wo.winfixwidth = true
    end
    twin = vim.api.nvim_get_current_win()
    style_transcript(chat, twin)
    pcall(vim.api.nvim_win_set_cursor, twin, { vim.api.nvim_buf_line_count(chat.buf), 0 })
  end
  if not pwin then
    vim.api.nvim_set_current_win(twin)
    vim.cmd("belowright " .. (o.prompt_height or 4) .. "split")
    pwin = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(pwin, chat.prompt)
    vim.wo[pwin].winfixheight = true
    vim.wo[pwin].number = false
    vim.wo[pwin].relativenumber = false
    vim.wo[pwin].signcolumn = "no"
    vim.wo[pwin].winbar = ("Message · %s sends · @file mentions a file"):format(
      o.keymaps.send or o.keymaps.send_normal or ":ClaudeChat"
    )
  end
  if focus then
    vim.api.nvim_set_current_win(pwin)
  elseif vim.api.nvim_win_is_valid(origin) then
    vim.api.nvim_set_current_win(origin)
  end
  return pwin
end

---@param chat claude_context.ChatState
function M.hide(chat)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local b = vim.api.nvim_win_get_buf(win)
    if (b == chat.buf or b == chat.prompt) and #vim.api.nvim_tabpage_list_wins(0) > 1 then
      pcall(vim.api.nvim_win_close, win, false)
    end
  end
end

-- Rendering ---------------------------------------------------------------------------------------

---@param chat claude_context.ChatState
---@param path string?
---@return string
local function rel(chat, path)
  if type(path) ~= "string" then
    return "?"
  end
  return util.display_path(path, chat.root)
end

--- A fence longer than any run of backticks in `text`.
---@param text string
---@return string
local function fence(text)
  local longest = 2
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", longest + 1)
end

--- A short line for a tool call: the file, the command or the pattern.
---@param chat claude_context.ChatState
---@param name string
---@param input table?
---@return string
local function tool_summary(chat, name, input)
  if type(input) ~= "table" then
    return ""
  end
  if input.file_path then
    return "`" .. rel(chat, input.file_path) .. "`"
  elseif input.command then
    return "`" .. util.one_line(tostring(input.command)):sub(1, 120) .. "`"
  elseif input.pattern then
    return "`"
      .. util.one_line(tostring(input.pattern))
      .. "`"
      .. (input.path and (" in `" .. rel(chat, input.path) .. "`") or "")
  elseif name == "TodoWrite" and type(input.todos) == "table" then
    return ("%d items"):format(#input.todos)
  elseif name == "Agent" and input.description then
    return ("`%s`: %s"):format(
      util.one_line(tostring(input.subagent_type or "general-purpose")),
      util.one_line(tostring(input.description))
    )
  end
  return ""
end

---@param chat claude_context.ChatState
local function close_thinking(chat)
  if chat.thinking then
    chat.w:append("\n")
    chat.w:fold_end()
    chat.thinking = false
  end
end

--- Content of a new answer starts here (after a tool result, a usage, a retry).
---@param chat claude_context.ChatState
local function begin_content(chat)
  if chat.new_answer then
    chat.new_answer = false
    chat.w:blank()
    chat.answer = chat.w:mark()
  end
end

---@param chat claude_context.ChatState
---@param text string
local function user_message(chat, text)
  chat.w:blank()
  chat.w:append("## You\n\n" .. text .. "\n\n")
end

---@param chat claude_context.ChatState
local function assistant_header(chat)
  chat.w:blank()
  chat.w:append("## Claude\n\n")
  chat.answer = chat.w:mark()
  chat.new_answer = false
  chat.last = nil
end

---@param chat claude_context.ChatState
---@param id string
---@param name string
---@param input table?
local function render_tool_use(chat, id, name, input)
  chat.tools[id] = { name = name, input = input }
  chat.w:blank()
  chat.w:fold_begin()
  chat.w:append(("**⚙ %s** %s\n"):format(name, tool_summary(chat, name, input)))
  local json = vim.json.encode(input or vim.empty_dict())
  local f = fence(json)
  chat.w:append(f .. "json\n" .. json .. "\n" .. f .. "\n")
  chat.w:fold_end()
end

---@param chat claude_context.ChatState
---@param id string
---@param content string?
---@param is_error boolean
local function render_tool_result(chat, id, content, is_error)
  local tool = chat.tools[id]
  local name = tool and tool.name or "tool"
  chat.w:bol()
  chat.w:fold_begin()
  if content then
    local n = select(2, content:gsub("\n", "\n")) + (content:sub(-1) == "\n" and 0 or 1)
    chat.w:append(
      ("**↳ %s %s** (%d line%s)\n"):format(name, is_error and "failed" or "result", n, n == 1 and "" or "s")
    )
    local f = fence(content)
    chat.w:append(f .. "\n" .. content .. (content:sub(-1) == "\n" and "" or "\n") .. f .. "\n")
  else
    chat.w:append(("**↳ %s %s**\n"):format(name, is_error and "failed" or "done"))
  end
  chat.w:fold_end()
end

---@param chat claude_context.ChatState
---@param path string
---@param trigger string?
---@param tokens integer?
local function render_attachment(chat, path, trigger, tokens)
  chat.w:bol()
  local what = path:find("/.claude/rules/", 1, true) and "rule" or "instructions"
  chat.w:append(
    ("> %s `%s` now applies%s%s\n"):format(
      what,
      rel(chat, path),
      trigger and (" (because of `" .. rel(chat, trigger) .. "`)") or "",
      tokens and (" · " .. util.thousands(tokens) .. " tokens") or ""
    )
  )
end

--- What a hook did (`chat/event` kind `hook`), shown like a tool result: a folded item whose
--- header names the event and the outcome, with the text the model got (or the user is told) and
--- the hook's command in full.
---@param chat claude_context.ChatState
---@param h table the event
local function render_hook(chat, h)
  chat.w:bol()
  chat.w:fold_begin()
  local text = h.text or ""
  local where = ""
  if h.toolUseId and chat.tools[h.toolUseId] then
    where = " (" .. chat.tools[h.toolUseId].name .. ")"
  end
  chat.w:append(("**⚑ %s hook %s**%s\n"):format(h.event or "?", h.outcome or "", where))
  if h.command then
    chat.w:append(("`%s`\n"):format(util.one_line(h.command)))
  end
  local f = fence(text)
  chat.w:append(f .. "\n" .. text .. (text:sub(-1) == "\n" and "" or "\n") .. f .. "\n")
  chat.w:fold_end()
end

--- What to say for an error the turn ends with, and how to fix it when we know.
---@param chat claude_context.ChatState
---@param message string
---@param kind string?
local function render_error(chat, message, kind)
  close_thinking(chat)
  chat.w:blank()
  chat.w:append(("> **Error**%s: %s\n"):format(kind and (" (" .. kind .. ")") or "", util.one_line(message)))
  local lower = message:lower()
  if
    kind == "auth"
    or lower:find("no api key", 1, true)
    or lower:find("key", 1, true) and lower:find("set ", 1, true)
  then
    local var = (options().settings.chat or {}).keyVariable or "ANTHROPIC_API_KEY"
    chat.w:append(
      ("> Set `%s` in the environment Neovim starts from (never in a settings file), then run `:ClaudeContext restart`.\n"):format(
        var
      )
    )
  end
  chat.w:append("\n")
  chat.last_error = message
end

-- Events ------------------------------------------------------------------------------------------

---@param params table a `chat/event`
---@param ctx lsp.HandlerContext
function M.on_event(params, ctx)
  if type(params) ~= "table" or type(params.sessionId) ~= "string" then
    return
  end
  local chat = M.by_session(params.sessionId)
  if not chat then
    return
  end
  local kind = params.kind
  local w = chat.w
  if kind == "text" then
    close_thinking(chat)
    begin_content(chat)
    local last = chat.last
    if last and (last.kind ~= "text" or last.index ~= params.index) then
      w:blank()
    elseif not last then
      w:bol()
    end
    chat.last = { kind = "text", index = params.index }
    w:append(params.text or "")
  elseif kind == "thinking" then
    begin_content(chat)
    local last = chat.last
    if not chat.thinking or (last and last.index ~= params.index) then
      close_thinking(chat)
      w:blank()
      w:fold_begin()
      w:append("> _thinking_\n> ")
      chat.thinking = true
    end
    chat.last = { kind = "thinking", index = params.index }
    w:append((params.text or ""):gsub("\n", "\n> "))
  elseif kind == "subagentStart" then
    -- A subagent: a quoted header, then its own tool calls (each folded, named after it), then
    -- its end; the `Agent` call's result (its report) follows.
    close_thinking(chat)
    chat.subagents = chat.subagents or {}
    chat.subagents[params.toolUseId or "?"] = params.agentType or "agent"
    chat.w:bol()
    chat.w:append(
      ("> **subagent `%s`** %s · %s\n"):format(params.agentType or "?", params.description or "", params.model or "")
    )
    chat.last = { kind = "subagentStart" }
  elseif kind == "subagentEnd" then
    chat.w:bol()
    local n = params.toolUses or 0
    chat.w:append(
      ("> subagent `%s` %s after %d tool call%s\n"):format(
        (chat.subagents or {})[params.toolUseId or "?"] or "?",
        params.outcome or "ended",
        n,
        n == 1 and "" or "s"
      )
    )
    chat.last = { kind = "subagentEnd" }
  elseif (kind == "toolUse" or kind == "toolResult") and params.parentToolUseId then
    -- A subagent's own call: inside its item, named after it; the answer is not interrupted.
    close_thinking(chat)
    local who = (chat.subagents or {})[params.parentToolUseId] or "subagent"
    if kind == "toolUse" then
      render_tool_use(chat, params.id or "?", who .. " › " .. (params.name or "?"), params.input)
    else
      render_tool_result(chat, params.toolUseId or "?", params.content or "", params.isError == true)
    end
    chat.last = { kind = kind }
  elseif kind == "toolUse" then
    close_thinking(chat)
    begin_content(chat)
    chat.last = { kind = "toolUse" }
    render_tool_use(chat, params.id or "?", params.name or "?", params.input)
  elseif kind == "toolResult" then
    close_thinking(chat)
    render_tool_result(chat, params.toolUseId or "?", params.content or "", params.isError == true)
    chat.new_answer = true
    chat.last = { kind = "toolResult" }
  elseif kind == "attachment" then
    close_thinking(chat)
    render_attachment(chat, params.path or "?", params.trigger, params.tokens)
    chat.last = { kind = "attachment" }
  elseif kind == "hook" then
    close_thinking(chat)
    render_hook(chat, params)
    chat.new_answer = true
    chat.last = { kind = "hook" }
  elseif kind == "usage" then
    chat.usage = params
    chat.new_answer = true
    pcall(function()
      require("claude_context.status").usage(chat.client_id, chat.session, params)
    end)
    winbar(chat)
  elseif kind == "compacted" then
    close_thinking(chat)
    w:blank()
    w:append(
      ("_— context compacted (%s): %s → %s tokens —_\n\n"):format(
        params.mode or "?",
        util.thousands(params.tokensBefore),
        util.thousands(params.tokensAfter)
      )
    )
    chat.new_answer = true
  elseif kind == "error" then
    if params.restart and chat.answer then
      close_thinking(chat)
      w:truncate(chat.answer)
      chat.last = nil
      chat.new_answer = false
    end
    if type(params.retry) == "table" then
      local r = params.retry
      w:set_transient(
        ("⟳ %s: trying again in %.1f s (attempt %d of %d)%s"):format(
          util.one_line(params.message or "error"),
          (r.delayMs or 0) / 1000,
          r.attempt or 0,
          r.of or 0,
          params.restart and "; the answer so far is discarded" or ""
        )
      )
    elseif params.restart then
      w:set_transient("⟳ the stream was cut: the answer starts again")
    else
      render_error(chat, params.message or "error", params.errorKind)
    end
  elseif kind == "done" then
    close_thinking(chat)
    w:clear_transient()
    local outcome = params.outcome
    if outcome == "cancelled" then
      w:blank()
      w:append("_(cancelled)_\n\n")
    elseif outcome == "failed" then
      w:blank()
      w:append("_(the answer failed)_\n\n")
    elseif params.stopReason == "max_tokens" then
      w:blank()
      w:append("_(stopped: the answer reached `chat.maxTokens`)_\n\n")
    end
    chat.turn = nil
    chat.answer = nil
    pcall(function()
      require("claude_context.permission").close_session(chat.session)
    end)
    w:flush()
    winbar(chat)
    pcall(function()
      require("claude_context.status").invalidate(nil)
      require("claude_context.status").refresh_current()
    end)
  end
end

-- Sending -----------------------------------------------------------------------------------------

--- The files `@path` mentions in `text` name (existing files only), as URIs.
---@param chat claude_context.ChatState
---@param text string
---@return string[]
function M.mentions(chat, text)
  local out, seen = {}, {}
  for raw in text:gmatch("@([^%s`'\"]+)") do
    local p = raw:gsub("[%.,;:!?%)%]]+$", "")
    if p:sub(1, 2) == "~/" then
      p = (util.home() or "~") .. p:sub(2)
    elseif p:sub(1, 1) ~= "/" then
      p = chat.root .. "/" .. p
    end
    p = vim.fs.normalize(p)
    local st = (vim.uv or vim.loop).fs_stat(p)
    if st and st.type == "file" and not seen[p] then
      seen[p] = true
      out[#out + 1] = vim.uri_from_fname(p)
    end
  end
  return out
end

--- Starts (or resumes, after a server restart) the session, then calls `k(ok)`.
---@param chat claude_context.ChatState
---@param client vim.lsp.Client
---@param k fun(ok: boolean)
local function ensure_session(chat, client, k)
  if chat.session and not chat.needs_resume then
    return k(true)
  end
  local method, params
  if chat.session then
    method, params = "chat/resume", { sessionId = chat.session, folder = vim.uri_from_fname(chat.root) }
  else
    method, params = "chat/new", { folder = vim.uri_from_fname(chat.root), mode = chat.mode }
  end
  client:request(method, params, function(err, result)
    if err or type(result) ~= "table" then
      render_error(chat, err and err.message or (method .. " gave no session"), nil)
      chat.w:flush()
      return k(false)
    end
    chat.session = result.sessionId
    chat.needs_resume = false
    if type(result.mode) == "string" then
      chat.mode = result.mode
    end
    if type(result.availableModes) == "table" then
      chat.modes = result.availableModes
    end
    winbar(chat)
    pcall(vim.cmd, "redrawstatus")
    k(true)
  end)
end

--- Sends `text` with `mentions` (URIs) in the chat's session.
---@param chat claude_context.ChatState
---@param text string
---@param mentions? string[]
function M.send(chat, text, mentions)
  if text:match("^%s*$") then
    return
  end
  local client = client_of(chat)
  if not client then
    util.notify("the server is not running: :ClaudeContext restart", vim.log.levels.ERROR)
    return
  end
  if chat.turn or chat.sending then
    util.notify("an answer is still being written: wait, or stop it with :ClaudeChatCancel", vim.log.levels.WARN)
    return
  end
  mentions = mentions or {}
  for _, u in ipairs(M.mentions(chat, text)) do
    if not vim.tbl_contains(mentions, u) then
      mentions[#mentions + 1] = u
    end
  end
  chat.sending = true
  winbar(chat)
  user_message(chat, text)
  chat.w:flush()
  ensure_session(chat, client, function(ok)
    if not ok then
      chat.sending = false
      winbar(chat)
      return
    end
    -- The server reads open buffers' text: send the changes Neovim is still holding back.
    pcall(function()
      require("vim.lsp._changetracking").flush(client)
    end)
    client:request("chat/send", { sessionId = chat.session, text = text, mentions = mentions }, function(err, result)
      chat.sending = false
      if err or type(result) ~= "table" then
        render_error(chat, err and err.message or "chat/send failed", nil)
        chat.w:flush()
        winbar(chat)
        return
      end
      chat.turn = result.turnId
      assistant_header(chat)
      winbar(chat)
    end)
  end)
end

--- Sends what the prompt buffer holds, and empties it.
---@param chat claude_context.ChatState
function M.send_prompt(chat)
  local text = table.concat(vim.api.nvim_buf_get_lines(chat.prompt, 0, -1, false), "\n")
  if text:match("^%s*$") then
    return
  end
  if chat.turn or chat.sending then
    util.notify("an answer is still being written: wait, or stop it with :ClaudeChatCancel", vim.log.levels.WARN)
    return
  end
  vim.api.nvim_buf_set_lines(chat.prompt, 0, -1, false, {})
  local mentions = vim.b[chat.prompt].claude_context_mentions or {}
  vim.b[chat.prompt].claude_context_mentions = nil
  M.send(chat, text, mentions)
end

-- Permission modes --------------------------------------------------------------------------------

--- The modes a chat offers before the server said (never bypass permissions).
local DEFAULT_MODES = {
  { id = "default", name = "Default", description = "Ask before anything that changes files or runs commands" },
  {
    id = "acceptEdits",
    name = "Accept edits",
    description = "Edits and common file commands inside the workspace run without asking",
  },
  { id = "plan", name = "Plan", description = "Read-only: explore and plan, change nothing" },
  { id = "dontAsk", name = "Don't ask", description = "Never ask: run what rules allow, refuse the rest" },
}

--- The permission mode of the chat of `client_id`'s project (the statusline shows it).
---@param client_id integer
---@return string?
function M.mode_of_client(client_id)
  for _, chat in pairs(chats) do
    if chat.client_id == client_id then
      return chat.mode
    end
  end
  return nil
end

--- Switches the chat's permission mode: the session's (`chat/setMode`), or, before there is
--- one, the mode the next session starts in.
---@param chat claude_context.ChatState
---@param mode string
function M.set_mode(chat, mode)
  local client = client_of(chat)
  if not chat.session or chat.needs_resume or not client then
    chat.mode = mode
    winbar(chat)
    pcall(vim.cmd, "redrawstatus")
    return
  end
  client:request("chat/setMode", { sessionId = chat.session, mode = mode }, function(err, result)
    if err or type(result) ~= "table" then
      util.notify("the mode was not changed: " .. (err and err.message or "no answer"), vim.log.levels.WARN)
      return
    end
    chat.mode = result.mode
    winbar(chat)
    pcall(vim.cmd, "redrawstatus")
  end)
end

--- `chat/modeChanged`: a session's mode changed.
---@param params table
function M.on_mode_changed(params)
  if type(params) ~= "table" or type(params.sessionId) ~= "string" then
    return
  end
  local chat = M.by_session(params.sessionId)
  if chat and type(params.mode) == "string" then
    chat.mode = params.mode
    winbar(chat)
    pcall(vim.cmd, "redrawstatus")
  end
end

--- `:ClaudeChatMode [mode]`: with a mode, switch to it; without, pick one (`vim.ui.select`).
---@param arg string
function M.mode_command(arg)
  local chat = M.current()
  if not chat then
    return
  end
  arg = vim.trim(arg or "")
  local modes = chat.modes or DEFAULT_MODES
  if arg ~= "" then
    M.set_mode(chat, arg)
    return
  end
  vim.ui.select(modes, {
    prompt = ("Permission mode (now %s)"):format(chat.mode or "default"),
    format_item = function(m)
      return ("%s — %s"):format(m.name, m.description)
    end,
  }, function(choice)
    if choice then
      M.set_mode(chat, choice.id)
    end
  end)
end

--- Switches the chat session's output style (`chat/setStyle`): Claude Code's output styles
--- (`Explanatory`, `Learning`, the project's and yours in `output-styles/`, plugins'). Needs a
--- session (the first message starts one; a new session starts with `outputStyle`).
---@param chat claude_context.ChatState
---@param style string? nil: pick one of the session's styles
function M.set_style(chat, style)
  local client = client_of(chat)
  if not chat.session or chat.needs_resume or not client then
    util.notify(
      "no chat session yet: send a message first (a new session starts with the outputStyle setting)",
      vim.log.levels.WARN
    )
    return
  end
  local function switch(name)
    client:request("chat/setStyle", { sessionId = chat.session, style = name }, function(err, result)
      if err or type(result) ~= "table" then
        util.notify("the output style was not changed: " .. (err and err.message or "no answer"), vim.log.levels.WARN)
        return
      end
      chat.style = result.style
      util.notify(("output style: %s (from the next message)"):format(result.style))
    end)
  end
  if style and style ~= "" then
    switch(style)
    return
  end
  client:request("chat/setStyle", { sessionId = chat.session }, function(err, result)
    if err or type(result) ~= "table" or type(result.available) ~= "table" then
      util.notify(
        "the output styles could not be listed: " .. (err and err.message or "no answer"),
        vim.log.levels.WARN
      )
      return
    end
    chat.style = result.style
    chat.styles = result.available
    vim.ui.select(result.available, { prompt = ("Output style (now %s)"):format(result.style) }, function(choice)
      if choice then
        switch(choice)
      end
    end)
  end)
end

--- `:ClaudeChatStyle [name]`: with a name, switch to it; without, pick one.
---@param arg string
function M.style_command(arg)
  local chat = M.current()
  if not chat then
    return
  end
  M.set_style(chat, vim.trim(arg or ""))
end

--- The style names `:ClaudeChatStyle` completes (those the last answer listed).
---@return string[]
function M.style_names()
  local chat
  pcall(function()
    chat = chat_of_buffer(vim.api.nvim_get_current_buf()) or select(2, next(chats))
  end)
  return (chat and chat.styles) or { "default", "Explanatory", "Learning" }
end

--- The mode names `:ClaudeChatMode` completes.
---@return string[]
function M.mode_names()
  local chat
  local ok = pcall(function()
    chat = chat_of_buffer(vim.api.nvim_get_current_buf()) or select(2, next(chats))
  end)
  local modes = (ok and chat and chat.modes) or DEFAULT_MODES
  local out = {}
  for _, m in ipairs(modes) do
    out[#out + 1] = m.id
  end
  return out
end

-- Commands ----------------------------------------------------------------------------------------

--- The chat of the current buffer's project (created on first use).
---@return claude_context.ChatState?
function M.current()
  local buf = vim.api.nvim_get_current_buf()
  local existing = chat_of_buffer(buf)
  if existing then
    return existing
  end
  local client = lsp().client_for(buf)
  if not client or not client.root_dir then
    util.notify(
      "no server for this buffer: open a file of a project (a folder with .git or CLAUDE.md) first; :checkhealth claude_context says more",
      vim.log.levels.WARN
    )
    return nil
  end
  return chats[client.root_dir] or create(client.root_dir, client)
end

---@class claude_context.ChatOpenOpts
---@field text? string send this
---@field selection? { path: string, first: integer, last: integer, lines: string[], filetype: string }

--- `:ClaudeChat [text]`: shows the chat; without text the cursor goes to the prompt, with text it
--- is sent and the cursor stays where it was.
---@param opts? claude_context.ChatOpenOpts
function M.open(opts)
  opts = opts or {}
  local chat = M.current()
  if not chat then
    return
  end
  local text = opts.text or ""
  local mentions = {}
  if opts.selection then
    local s = opts.selection
    local body = table.concat(s.lines, "\n")
    local f = fence(body)
    local quoted = ("From `%s`, lines %d-%d:\n\n%s%s\n%s\n%s"):format(
      rel(chat, s.path),
      s.first,
      s.last,
      f,
      s.filetype or "",
      body,
      f
    )
    mentions[#mentions + 1] = vim.uri_from_fname(s.path)
    if text:match("^%s*$") then
      local pwin = M.show(chat, true)
      local existing = vim.api.nvim_buf_get_lines(chat.prompt, 0, -1, false)
      local add = util.lines("\n" .. quoted)
      if #existing == 1 and existing[1] == "" then
        add = util.lines(quoted .. "\n\n")
      end
      vim.api.nvim_buf_set_lines(chat.prompt, #existing == 1 and existing[1] == "" and 0 or -1, -1, false, add)
      local ms = vim.b[chat.prompt].claude_context_mentions or {}
      ms[#ms + 1] = mentions[1]
      vim.b[chat.prompt].claude_context_mentions = ms
      if pwin then
        pcall(vim.api.nvim_win_set_cursor, pwin, { vim.api.nvim_buf_line_count(chat.prompt), 0 })
      end
      return
    end
    text = text .. "\n\n" .. quoted
  end
  if text:match("^%s*$") then
    M.show(chat, true)
    return
  end
  M.show(chat, false)
  M.send(chat, text, mentions)
end

---@param chat? claude_context.ChatState
function M.cancel(chat)
  chat = chat or M.current()
  if not chat or not chat.session then
    return
  end
  local client = client_of(chat)
  if not client then
    return
  end
  pcall(function()
    require("claude_context.permission").close_session(chat.session)
  end)
  client:request("chat/cancel", { sessionId = chat.session }, function(err, result)
    if err then
      util.notify("chat/cancel: " .. (err.message or "failed"), vim.log.levels.WARN)
    elseif type(result) == "table" and not result.cancelled then
      util.notify("no answer is running", vim.log.levels.INFO)
    end
  end)
end

--- `:ClaudeChatNew`: a new session, an empty transcript.
function M.new()
  local chat = M.current()
  if not chat then
    return
  end
  if chat.turn then
    M.cancel(chat)
  end
  chat.session = nil
  chat.needs_resume = false
  chat.turn = nil
  chat.sending = false
  chat.usage = nil
  chat.tools = {}
  chat.w:clear()
  M.show(chat, true)
  winbar(chat)
  pcall(function()
    require("claude_context.status").invalidate(nil)
    require("claude_context.status").refresh_current()
  end)
end

--- Renders a resumed history.
---@param chat claude_context.ChatState
---@param result table a `chat/resume` result
function M.render_history(chat, result)
  chat.w:clear()
  chat.tools = {}
  if result.continues then
    chat.w:append(
      ("_Continues Claude Code's session %s (read-only there): new messages go to session %s._\n\n"):format(
        result.continues,
        tostring(result.sessionId):sub(1, 8)
      )
    )
  end
  for _, warn in ipairs(result.warnings or {}) do
    chat.w:append("> " .. util.one_line(warn) .. "\n")
  end
  local in_claude = false
  for _, m in ipairs(result.messages or {}) do
    if m.role == "user" then
      for _, r in ipairs(m.toolResults or {}) do
        local content = type(r.content) == "string" and r.content ~= "" and r.content or nil
        render_tool_result(chat, r.toolUseId, content, r.isError == true)
      end
      if (m.text or "") ~= "" then
        user_message(chat, m.text)
        in_claude = false
      end
      for _, a in ipairs(m.attachments or {}) do
        if type(a) == "table" then
          render_attachment(chat, a.path, a.trigger, a.tokens)
        else
          render_attachment(chat, a, nil, nil)
        end
      end
      if m.interruption then
        chat.w:blank()
        chat.w:append("_[Request interrupted by user]_\n\n")
      end
    else
      if not in_claude then
        assistant_header(chat)
        in_claude = true
      end
      if (m.text or "") ~= "" then
        chat.w:blank()
        chat.w:append(m.text)
      end
      for _, t in ipairs(m.toolUses or {}) do
        render_tool_use(chat, t.id, t.name, t.input)
      end
    end
  end
  chat.w:blank()
  chat.w:flush()
  chat.answer = nil
end

--- `:ClaudeChatSessions`: pick a session (ours and Claude Code's) and resume it.
function M.sessions()
  local chat = M.current()
  if not chat then
    return
  end
  local client = client_of(chat)
  if not client then
    util.notify("the server is not running: :ClaudeContext restart", vim.log.levels.ERROR)
    return
  end
  client:request("chat/list", { folder = vim.uri_from_fname(chat.root) }, function(err, result)
    if err or type(result) ~= "table" then
      util.notify("chat/list: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
      return
    end
    local sessions = result.sessions or {}
    if #sessions == 0 then
      util.notify("no sessions in this project yet", vim.log.levels.INFO)
      return
    end
    vim.ui.select(sessions, {
      prompt = "Resume a chat session",
      kind = "claude_context.session",
      format_item = function(s)
        local title = util.one_line(s.title or s.firstPrompt or s.sessionId):sub(1, 80)
        local when = (s.updatedAt or s.startedAt or ""):gsub("T", " "):sub(1, 16)
        local tag = s.readOnly and " [Claude Code, read-only: continues in a new session]" or ""
        return ("%s  %s%s%s"):format(when, title, tag, s.running and " (running)" or "")
      end,
    }, function(choice)
      if not choice then
        return
      end
      M.resume(chat, choice.sessionId)
    end)
  end)
end

--- Resumes session `id` into the chat.
---@param chat claude_context.ChatState
---@param id string
---@param k? fun(ok: boolean)
function M.resume(chat, id, k)
  local client = client_of(chat)
  if not client then
    return k and k(false)
  end
  client:request("chat/resume", { sessionId = id, folder = vim.uri_from_fname(chat.root) }, function(err, result)
    if err or type(result) ~= "table" then
      util.notify("chat/resume: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
      return k and k(false)
    end
    chat.session = result.sessionId
    chat.needs_resume = false
    chat.turn = nil
    chat.usage = nil
    util.safe("rendering the session", M.render_history, chat, result)
    M.show(chat, true)
    winbar(chat)
    if k then
      k(true)
    end
  end)
end

--- The server stopped: a running answer ends here; the next message resumes the session.
---@param root string?
function M.on_server_exit(root)
  for r, chat in pairs(chats) do
    if root == nil or r == root then
      if chat.turn or chat.sending then
        chat.w:blank()
        chat.w:append("_(the server stopped; the answer is cut here)_\n\n")
        chat.w:flush()
      end
      chat.turn = nil
      chat.sending = false
      chat.needs_resume = chat.session ~= nil
      pcall(function()
        require("claude_context.permission").close_session(chat.session)
      end)
      winbar(chat)
    end
  end
end

--- Writes a line into the chat of `session` (compaction results).
---@param session string
---@param text string
function M.note(session, text)
  local chat = M.by_session(session)
  if chat then
    chat.w:blank()
    chat.w:append(text .. "\n\n")
    chat.w:flush()
  end
end

return M
