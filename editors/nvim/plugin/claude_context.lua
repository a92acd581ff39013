-- claude-context: commands only. Everything else loads on first use (`lua/claude_context/`).
if vim.g.loaded_claude_context then
  return
end
vim.g.loaded_claude_context = 1

local function run(what, fn)
  return function(args)
    local ok, err = xpcall(fn, debug.traceback, args)
    if not ok then
      pcall(function()
        require("vim.lsp.log").error("claude-context: " .. what .. ": " .. tostring(err))
      end)
      vim.notify(
        ("claude-context: %s failed (details in the LSP log, :checkhealth vim.lsp shows where): %s"):format(
          what,
          tostring(err):match("^[^\n]*")
        ),
        vim.log.levels.ERROR
      )
    end
  end
end

local command = vim.api.nvim_create_user_command

command(
  "ClaudeContext",
  run(":ClaudeContext", function(args)
    require("claude_context.commands").context(args)
  end),
  {
    nargs = "?",
    desc = "claude-context: the context of the next request (restart: restart the server; new: a new session's context)",
    complete = function()
      return { "restart", "new" }
    end,
  }
)

command(
  "ClaudeChat",
  run(":ClaudeChat", function(args)
    require("claude_context.commands").chat(args)
  end),
  { nargs = "*", range = true, desc = "claude-context: open the chat; with text, send it" }
)

command(
  "ClaudeChatCancel",
  run(":ClaudeChatCancel", function()
    require("claude_context.commands").cancel()
  end),
  { desc = "claude-context: stop the running answer" }
)

command(
  "ClaudeChatNew",
  run(":ClaudeChatNew", function()
    require("claude_context.commands").new()
  end),
  { desc = "claude-context: start a new chat session" }
)

command(
  "ClaudeChatSessions",
  run(":ClaudeChatSessions", function()
    require("claude_context.commands").sessions()
  end),
  { desc = "claude-context: resume a chat session (ours or Claude Code's)" }
)

command(
  "ClaudeChatMode",
  run(":ClaudeChatMode", function(args)
    require("claude_context.commands").mode(args)
  end),
  {
    nargs = "?",
    desc = "claude-context: the chat's permission mode (default, acceptEdits, plan, dontAsk; none: pick one)",
    complete = function()
      local ok, names = pcall(function()
        return require("claude_context.chat").mode_names()
      end)
      return ok and names or { "default", "acceptEdits", "plan", "dontAsk" }
    end,
  }
)

command(
  "ClaudeChatStyle",
  run(":ClaudeChatStyle", function(args)
    require("claude_context.commands").style(args)
  end),
  {
    nargs = "?",
    desc = "claude-context: the chat session's output style (Explanatory, Learning, yours; none: pick one)",
    complete = function()
      local ok, names = pcall(function()
        return require("claude_context.chat").style_names()
      end)
      return ok and names or { "default", "Explanatory", "Learning" }
    end,
  }
)

command(
  "ClaudeCompact",
  run(":ClaudeCompact", function(args)
    require("claude_context.commands").compact(args)
  end),
  {
    nargs = "*",
    bang = true,
    desc = "claude-context: compact the chat session ([micro|full|auto] [focus…]; ! for a dry run)",
    complete = function(_, line)
      if line:match("^%S+%s+%S*$") then
        return { "auto", "micro", "full" }
      end
      return {}
    end,
  }
)
