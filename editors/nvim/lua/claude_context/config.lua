--- Options of `require("claude_context").setup()`: their defaults, their types (LuaCATS), and
--- the merge of what the user gave over the defaults. Loaded by `setup()`: keep it cheap (no
--- `vim.lsp`, no `vim.fn` calls at load time).

---@class claude_context.Settings
--- The `claudeContext` settings section sent to the server (`initializationOptions`,
--- `workspace/configuration`, `workspace/didChangeConfiguration`). Every key is optional; the
--- server's defaults apply to the rest. See docs/protocol.md#settings.
---@field rules? { activateFromOpenFiles?: boolean }
---@field git? { enabled?: boolean, refreshSeconds?: integer }
---@field diagnostics? { enabled?: boolean, unmatchedGlobs?: boolean }
---@field codeLens? { enabled?: boolean }
---@field hover? { sourceFiles?: boolean, includePreviewLines?: integer, globExamples?: integer }
---@field model? string
---@field window? integer
---@field memoryDir? string
---@field chat? { provider?: "anthropic"|"openai", baseUrl?: string, keyVariable?: string, maxTokens?: integer, maxTries?: integer, idleTimeoutSeconds?: integer, autoMemory?: boolean }
---@field compaction? { autoCompact?: boolean, autoCompactPercent?: integer, keepRecent?: integer, gapMinutes?: integer, apiContextEditing?: boolean }
---@field additionalDirectories? string[]

---@class claude_context.ChatOptions
---@field position? "right"|"left"|"bottom"|"tab" Where `:ClaudeChat` opens the chat. Default `"right"`.
---@field width? number Width of a side chat: columns (> 1) or a fraction of the editor (≤ 1). Default `0.4`.
---@field height? number Height of a bottom chat, like `width`. Default `0.4`.
---@field prompt_height? integer Lines of the prompt window under the transcript. Default `4`.
---@field flush_ms? integer How often streamed text is written to the buffer, in ms. Default `30`.
---@field notify_on_permission? boolean `vim.notify` when a tool asks for permission while the chat is not visible. Default `true`.
---@field diff? boolean Review an `Edit` or `Write` in a diff tab before allowing it (`a` allow once, `s` for the session, `r`/`q` deny). Default `true`.
---@field diff_min_lines? integer Edits touching fewer lines keep the compact question. Default `4`.
---@field keymaps? claude_context.ChatKeymaps

---@class claude_context.ChatKeymaps
--- Buffer-local keys of the chat's prompt and transcript. `false` turns one off.
---@field send? string|false Send the prompt (normal and insert mode). Default `"<C-s>"`.
---@field send_normal? string|false Send the prompt (normal mode). Default `"<CR>"`.
---@field cancel? string|false Stop the running answer (normal mode). Default `"<C-c>"`.
---@field close? string|false Hide the chat windows (normal mode, transcript). Default `"q"`.

---@class claude_context.StatusOptions
---@field prefix? string Put before the figures. Default `"✻ "`.

---@class claude_context.Options
---@field cmd? string[] The server command. Default `{ "claude-context", "lsp" }` (found on `PATH`).
---@field cmd_env? table<string,string> Extra environment for the server (e.g. `ANTHROPIC_BASE_URL`). Never put a key here: set it in the environment Neovim starts from.
---@field root_markers? string[] What marks a project, searched upward from the file. Default `{ ".git", "CLAUDE.md" }`: the nearest `.git`, else the outermost folder below `$HOME` holding a `CLAUDE.md`.
---@field settings? claude_context.Settings The `claudeContext` settings; calling `setup()` again applies them to running servers.
---@field watch_files? boolean Let the server watch files (`workspace/didChangeWatchedFiles` dynamic registration, off in Neovim 0.11 on Linux). Default `true`.
---@field codelens? boolean Show the server's code lens on instruction files and refresh it when the context changes. Default `true`.
---@field chat? claude_context.ChatOptions
---@field status? claude_context.StatusOptions
---@field float? { border?: string|string[], width?: number, height?: number } The `:ClaudeContext` float. Defaults: `border = "rounded"`, `width = 0.8`, `height = 0.8`.

local M = {}

---@type claude_context.Options
M.defaults = {
  cmd = { "claude-context", "lsp" },
  cmd_env = {},
  root_markers = { ".git", "CLAUDE.md" },
  settings = {},
  watch_files = true,
  codelens = true,
  chat = {
    position = "right",
    width = 0.4,
    height = 0.4,
    prompt_height = 4,
    flush_ms = 30,
    notify_on_permission = true,
    diff = true,
    diff_min_lines = 4,
    keymaps = { send = "<C-s>", send_normal = "<CR>", cancel = "<C-c>", close = "q" },
  },
  status = { prefix = "✻ " },
  float = { border = "rounded", width = 0.8, height = 0.8 },
}

---@type claude_context.Options
M.options = M.defaults

--- Lists are replaced, not merged index by index (`cmd = { "/opt/cc" }` must not keep `"lsp"`).
---@param base table
---@param over table
---@return table
local function merge(base, over)
  local out = {}
  for k, v in pairs(base) do
    out[k] = v
  end
  for k, v in pairs(over) do
    local b = out[k]
    if type(v) == "table" and type(b) == "table" and not vim.islist(v) and not vim.islist(b) then
      out[k] = merge(b, v)
    else
      out[k] = v
    end
  end
  return out
end

local kinds = {
  cmd = "table",
  cmd_env = "table",
  root_markers = "table",
  settings = "table",
  watch_files = "boolean",
  codelens = "boolean",
  chat = "table",
  status = "table",
  float = "table",
}

--- Merges `opts` over the defaults. A wrong type is reported (one message naming the option)
--- and the option keeps its default: setup never throws.
---@param opts? claude_context.Options
---@return claude_context.Options options
---@return string[] problems
function M.resolve(opts)
  local problems = {}
  local clean = {}
  if opts ~= nil and type(opts) ~= "table" then
    problems[#problems + 1] = ("setup() takes a table, got %s"):format(type(opts))
    opts = {}
  end
  for k, v in pairs(opts or {}) do
    local want = kinds[k]
    if want == nil then
      problems[#problems + 1] = ("unknown option %q"):format(tostring(k))
    elseif type(v) ~= want then
      problems[#problems + 1] = ("option %s: expected a %s, got %s"):format(k, want, type(v))
    else
      clean[k] = v
    end
  end
  if clean.cmd and (type(clean.cmd[1]) ~= "string" or clean.cmd[1] == "") then
    problems[#problems + 1] = "option cmd: expected a list of strings, the program first"
    clean.cmd = nil
  end
  return merge(M.defaults, clean), problems
end

return M
