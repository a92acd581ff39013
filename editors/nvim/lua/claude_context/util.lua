--- Small helpers shared by the modules: notifications without repeats, numbers and paths for
--- people, JSON objects that stay objects, and safe wrappers that never let a Lua error reach
--- the user.

local M = {}

local said = {} ---@type table<string, boolean>

--- `vim.notify` with the plugin's prefix, scheduled (safe from any context).
---@param msg string
---@param level? integer
function M.notify(msg, level)
  vim.schedule(function()
    vim.notify("claude-context: " .. msg, level or vim.log.levels.INFO, { title = "claude-context" })
  end)
end

--- Like `notify`, once per `key` for the life of this Neovim (or until `forget(key)`).
---@param key string
---@param msg string
---@param level? integer
function M.notify_once(key, msg, level)
  if said[key] then
    return
  end
  said[key] = true
  M.notify(msg, level)
end

---@param key string
function M.forget(key)
  said[key] = nil
end

--- Calls `fn(...)`; an error is logged to the LSP log and shown once as a message, never thrown.
---@param what string what was being done, for the message
---@param fn function
---@return any
function M.safe(what, fn, ...)
  local ok, a, b = xpcall(fn, debug.traceback, ...)
  if ok then
    return a, b
  end
  pcall(function()
    require("vim.lsp.log").error("claude-context: " .. what .. ": " .. tostring(a))
  end)
  M.notify_once(
    "error:" .. what,
    ("%s failed (details in the LSP log, :checkhealth vim.lsp shows where): %s"):format(
      what,
      tostring(a):match("^[^\n]*")
    ),
    vim.log.levels.ERROR
  )
  return nil
end

--- `1234567` → `1,234,567`.
---@param n number?
---@return string
function M.thousands(n)
  if n == nil then
    return "?"
  end
  local s = tostring(math.floor(n + 0.5))
  local neg = s:sub(1, 1) == "-"
  if neg then
    s = s:sub(2)
  end
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  if out:sub(1, 1) == "," then
    out = out:sub(2)
  end
  return (neg and "-" or "") .. out
end

--- `1234` → `1.2k`, `200000` → `200k`, `1500000` → `1.5M`.
---@param n number?
---@return string
function M.short(n)
  if n == nil then
    return "?"
  end
  if n < 1000 then
    return tostring(math.floor(n + 0.5))
  elseif n < 1e6 then
    local v = n / 1000
    return (v >= 100 or v == math.floor(v)) and ("%dk"):format(math.floor(v + 0.5)) or ("%.1fk"):format(v)
  end
  local v = n / 1e6
  return v == math.floor(v) and ("%dM"):format(v) or ("%.1fM"):format(v)
end

--- Characters never shown raw (they would split or redraw a line): control characters, the
--- Unicode line separators and bidirectional controls. Escaped as `git status` does: `\t`, `\n`,
--- octal for the rest, the name in double quotes.
local unsafe_ascii = "[%z\1-\31\127]"
local unsafe_utf8 = {
  "\194[\128-\159]", -- C1 controls
  "\226\128[\168\169\170-\174]", -- U+2028, U+2029, U+202A..202E
  "\226\129[\166-\169]", -- U+2066..2069
  "\216\156", -- U+061C
  "\226\128[\142\143]", -- U+200E, U+200F
}
local named =
  { ["\7"] = "\\a", ["\8"] = "\\b", ["\t"] = "\\t", ["\n"] = "\\n", ["\11"] = "\\v", ["\12"] = "\\f", ["\r"] = "\\r" }

local function octal(s)
  return (s:gsub(".", function(c)
    return ("\\%03o"):format(c:byte())
  end))
end

--- A file name for people, quoted and escaped when it holds an unsafe character.
---@param s string
---@return string
function M.quote_name(s)
  local bad = s:find(unsafe_ascii)
  if not bad then
    for _, p in ipairs(unsafe_utf8) do
      if s:find(p) then
        bad = true
        break
      end
    end
  end
  if not bad then
    return s
  end
  local out = s:gsub(unsafe_ascii, function(c)
    return named[c] or octal(c)
  end)
  for _, p in ipairs(unsafe_utf8) do
    out = out:gsub(p, octal)
  end
  return '"' .. out .. '"'
end

--- A message for one line: the same escapes, without the quotes.
---@param s string
---@return string
function M.one_line(s)
  local out = tostring(s):gsub(unsafe_ascii, function(c)
    return named[c] or octal(c)
  end)
  return out
end

---@return string?
local function home()
  local h = os.getenv("HOME")
  if h and h ~= "" then
    return (h:gsub("/+$", ""))
  end
  return nil
end
M.home = home

--- A path for people, as `claude-context preview` prints it: relative to `base` below it,
--- `~/...` below the home directory, absolute otherwise.
---@param path string
---@param base string?
---@return string
function M.display_path(path, base)
  if base and base ~= "" then
    local b = base:gsub("/+$", "")
    if path:sub(1, #b + 1) == b .. "/" and #path > #b + 1 then
      return M.quote_name(path:sub(#b + 2))
    end
  end
  local h = home()
  if h and path:sub(1, #h + 1) == h .. "/" then
    return M.quote_name("~/" .. path:sub(#h + 2))
  end
  return M.quote_name(path)
end

--- `path` is `dir` or below it.
---@param path string
---@param dir string
---@return boolean
function M.under(path, dir)
  dir = dir:gsub("/+$", "")
  return path == dir or path:sub(1, #dir + 1) == dir .. "/"
end

--- Settings as a JSON object: an empty table is `{}` (not `[]`), except the one list setting.
---@param t any
---@param key? string
---@return any
function M.json_object(t, key)
  if type(t) ~= "table" then
    return t
  end
  if next(t) == nil then
    return key == "additionalDirectories" and {} or vim.empty_dict()
  end
  if vim.islist(t) then
    return t
  end
  local out = {}
  for k, v in pairs(t) do
    out[k] = M.json_object(v, k)
  end
  return out
end

--- Splits text into buffer lines (no line may hold a newline).
---@param s string
---@return string[]
function M.lines(s)
  return vim.split(s, "\n", { plain = true })
end

return M
