--- `:ClaudeCompact [micro|full|auto] [focus…]` compacts the chat session now; `:ClaudeCompact!`
--- is a dry run shown in a float (what would be cleared or summarised, the tokens before and
--- after). While a summary is written the server reports `$/progress` on our token, which
--- Neovim shows through `vim.lsp.status()` (and the `LspProgress` event).

local util = require("claude_context.util")

local M = {}

local modes = { auto = true, micro = true, full = true }
local counter = 0

--- The lines of a dry run's float.
---@param r table a `compact/run` result
---@param asked string the mode asked
---@return string[]
function M.dry_run_lines(r, asked)
  local lines = { ("Compaction dry run (%s): nothing was changed"):format(asked), "" }
  local before, after = r.tokensBefore or 0, r.tokensAfter or 0
  local what = ({
    none = "nothing: no tier applies",
    micro = "clear old tool results (masking)",
    full = ("summarise %d messages"):format(r.summarisedMessages or 0),
  })[r.mode] or tostring(r.mode)
  lines[#lines + 1] = "  would run: " .. what
  if r.mode == "none" or after >= before then
    lines[#lines + 1] = ("  would not reduce the context: %s tokens now, ≈ %s after"):format(
      util.thousands(before),
      util.thousands(after)
    )
  else
    local saved = before - after
    lines[#lines + 1] = ("  tokens: %s → ≈ %s  (−%s, −%d%%)"):format(
      util.thousands(before),
      util.thousands(after),
      util.thousands(saved),
      before > 0 and math.floor(saved * 100 / before + 0.5) or 0
    )
  end
  local cleared = r.cleared or {}
  if #cleared > 0 then
    lines[#lines + 1] = ""
    lines[#lines + 1] = ("Tool results that would be cleared (%d, oldest first)"):format(#cleared)
    for _, c in ipairs(cleared) do
      lines[#lines + 1] = ("  %-6s %-28s %8s tokens"):format(
        c.tool or "?",
        c.toolUseId or "?",
        util.thousands(c.tokens)
      )
    end
  end
  if r.mode == "full" then
    lines[#lines + 1] = ""
    lines[#lines + 1] = ("Your messages kept verbatim: %d"):format(r.preservedUserMessages or 0)
    local files = r.reinjectedFiles or {}
    if #files > 0 then
      lines[#lines + 1] = "Files that would be read again:"
      for _, f in ipairs(files) do
        lines[#lines + 1] = "  " .. util.display_path(f, nil)
      end
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "q closes · :ClaudeCompact runs it"
  return lines
end

---@param lines string[]
local function float(lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "claude_context_compact"
  local w = 40
  for _, l in ipairs(lines) do
    w = math.max(w, vim.fn.strdisplaywidth(l) + 2)
  end
  w = math.min(w, vim.o.columns - 4)
  local h = math.min(#lines, vim.o.lines - 4)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = w,
    height = h,
    row = math.floor((vim.o.lines - h) / 2),
    col = math.floor((vim.o.columns - w) / 2),
    border = require("claude_context.config").options.float.border,
    title = " claude-context: compaction ",
    style = "minimal",
  })
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, function()
      pcall(vim.api.nvim_win_close, win, true)
    end, { buffer = buf, nowait = true })
  end
  return win
end

---@class claude_context.CompactOpts
---@field mode? "auto"|"micro"|"full"
---@field focus? string
---@field dry_run? boolean
---@field on_result? fun(err: table?, result: table?)

--- Compacts the chat session of the current project.
---@param opts claude_context.CompactOpts
function M.run(opts)
  local chat_mod = require("claude_context.chat")
  local chat = chat_mod.current()
  if not chat then
    return
  end
  if not chat.session or chat.needs_resume then
    util.notify(
      "no chat session to compact in this project: :ClaudeChat starts one, :ClaudeChatSessions resumes one",
      vim.log.levels.WARN
    )
    return
  end
  local client = vim.lsp.get_client_by_id(chat.client_id)
  if not client then
    util.notify("the server is not running: :ClaudeContext restart", vim.log.levels.ERROR)
    return
  end
  local mode = opts.mode or "auto"
  counter = counter + 1
  local params = {
    sessionId = chat.session,
    mode = mode,
    dryRun = opts.dry_run == true,
    workDoneToken = ("claude_context/compact/%d"):format(counter),
  }
  if opts.focus and opts.focus ~= "" then
    params.instructions = opts.focus
  end
  client:request("compact/run", params, function(err, result)
    if opts.on_result then
      opts.on_result(err, result)
    end
    if err or type(result) ~= "table" then
      util.notify(
        "compaction failed: " .. (err and util.one_line(err.message or "") or "no answer"),
        vim.log.levels.ERROR
      )
      return
    end
    if result.dryRun then
      float(M.dry_run_lines(result, mode))
      return
    end
    local msg
    if result.mode == "none" then
      msg = ("nothing to compact (%s tokens)"):format(util.thousands(result.tokensBefore))
    else
      msg = ("context compacted (%s): %s → %s tokens"):format(
        result.mode,
        util.thousands(result.tokensBefore),
        util.thousands(result.tokensAfter)
      )
    end
    chat_mod.note(chat.session, "_— " .. msg .. " —_")
    util.notify(msg)
    pcall(function()
      require("claude_context.status").invalidate(nil)
      require("claude_context.status").refresh_current()
    end)
  end)
end

--- `:ClaudeCompact[!] [mode] [focus…]`.
---@param args { fargs: string[], bang: boolean }
function M.command(args)
  local fargs = vim.deepcopy(args.fargs or {})
  local mode
  if fargs[1] and modes[fargs[1]] then
    mode = table.remove(fargs, 1)
  end
  M.run({ mode = mode, focus = table.concat(fargs, " "), dry_run = args.bang })
end

return M
