-- The plugin's benchmark (not a test): run it and read the figures.
--   CLAUDE_CONTEXT_BIN=... FAKE_ANTHROPIC_BIN=... nvim --headless -l bench/bench.lua
-- (editors/nvim/scripts/bench sets the environment.)
--
-- 1. setup() at startup: a fresh Neovim per sample, the time of `require("claude_context").setup()`
--    (and of sourcing plugin/claude_context.lua), without and with vim.lsp already loaded.
-- 2. A burst of 2,000 deltas streamed by the real server from the fake model API into the chat
--    buffer: the time from the last delta handled to the buffer holding all of it, and the
--    longest main-loop block while it streams (a 1 ms libuv timer's largest lateness), for the
--    coalescing writer and, side by side, for one buffer write per delta (the baseline).
local here = vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p")))
local plugin = vim.fs.dirname(here)
vim.opt.runtimepath:prepend(plugin)
vim.cmd("filetype on")
vim.cmd.runtime("plugin/claude_context.lua")
package.path = plugin .. "/spec/?.lua;" .. package.path
local uv = vim.uv or vim.loop

local function stats(xs)
  table.sort(xs)
  local sum = 0
  for _, x in ipairs(xs) do
    sum = sum + x
  end
  return ("median %.3f ms, min %.3f, max %.3f (n=%d)"):format(xs[math.ceil(#xs / 2)], xs[1], xs[#xs], #xs)
end

-- 1. setup() ----------------------------------------------------------------------------------
local function startup(preload_lsp)
  local out = vim.fn.tempname()
  local samples_setup, samples_plugin = {}, {}
  for _ = 1, 15 do
    local code = ([[
local t0 = vim.uv.hrtime()
vim.cmd.runtime("plugin/claude_context.lua")
local t1 = vim.uv.hrtime()
%s
local t2 = vim.uv.hrtime()
require("claude_context").setup({ cmd = { %q, "lsp" } })
local t3 = vim.uv.hrtime()
local f = io.open(%q, "a")
f:write(("%%f %%f\n"):format((t1 - t0) / 1e6, (t3 - t2) / 1e6))
f:close()
vim.cmd("qa!")
]]):format(
      preload_lsp and "local _ = vim.lsp.config" or "",
      os.getenv("CLAUDE_CONTEXT_BIN") or "claude-context",
      out
    )
    local script = vim.fn.tempname() .. ".lua"
    local f = assert(io.open(script, "w"))
    f:write(code)
    f:close()
    vim
      .system({ vim.v.progpath, "--clean", "--headless", "--cmd", "set rtp^=" .. plugin, "-c", "luafile " .. script })
      :wait(20000)
  end
  for line in io.lines(out) do
    local p, s = line:match("([%d.]+) ([%d.]+)")
    samples_plugin[#samples_plugin + 1] = tonumber(p)
    samples_setup[#samples_setup + 1] = tonumber(s)
  end
  return samples_plugin, samples_setup
end

local p1, s1 = startup(false)
print("setup() at startup (vim.lsp not loaded):       " .. stats(s1))
print("plugin/claude_context.lua sourced:              " .. stats(p1))
local _, s2 = startup(true)
print("setup() with vim.lsp already loaded (enables): " .. stats(s2))

-- 2. 2,000 deltas -----------------------------------------------------------------------------
local H = require("helpers")
local root = H.project({ ["CLAUDE.md"] = "# Bench\n", ["a.txt"] = "a\n" })
local fake = H.fake()
H.setup(fake)
vim.cmd.edit(root .. "/a.txt")
H.client()
local chat_mod = require("claude_context.chat")

local function burst(label, per_delta)
  local text = {}
  for i = 1, 2000 do
    text[i] = ("d%06d "):format(i) -- 8 bytes: one delta
  end
  local body = table.concat(text)
  fake:push({ { text = body, piece = 8 } })
  local chat = chat_mod.get(root) or chat_mod.current()
  local orig_event = chat_mod.on_event
  -- The server may merge deltas that reached it together: count the text, not the events.
  local last_delta, events, received, done = nil, 0, 0, false
  local prev, worst = uv.hrtime(), 0
  local function cpu()
    local r = uv.getrusage()
    return (r.utime.sec + r.stime.sec) * 1e3 + (r.utime.usec + r.stime.usec) / 1e3
  end
  local prev_cpu, worst_cpu = cpu(), 0
  chat_mod.on_event = function(params, ctx)
    if params.kind == "text" then
      events = events + 1
      received = received + #(params.text or "")
      if events == 1 then
        worst = 0 -- count the blocks while it streams, not the chat's opening
        worst_cpu = 0
        prev = uv.hrtime()
        prev_cpu = cpu()
      end
    end
    local r = orig_event(params, ctx)
    if params.kind == "text" then
      last_delta = uv.hrtime()
      if per_delta then
        chat.w:flush()
      end
    elseif params.kind == "done" then
      done = true
    end
    return r
  end
  -- The time the buffer first holds the whole answer: checked right after each write.
  local holds_all_at
  chat.w.on_flush = function()
    if not holds_all_at and last_delta and received >= #body then
      local lines = vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)
      if table.concat(lines, "\n"):find(body, 1, true) then
        holds_all_at = uv.hrtime()
      end
    end
  end
  -- Main-loop blocks: a 1 ms timer's lateness.
  local timer = assert(uv.new_timer())
  timer:start(1, 1, function()
    local now = uv.hrtime()
    local late = (now - prev) / 1e6 - 1
    local c = cpu()
    if late > worst and not holds_all_at then
      worst = late
    end
    if c - prev_cpu > worst_cpu and not holds_all_at then
      worst_cpu = c - prev_cpu
    end
    prev = now
    prev_cpu = c
  end)
  local started = uv.hrtime()
  vim.cmd("ClaudeChat go")
  vim.wait(60000, function()
    return done and holds_all_at ~= nil
  end, 1)
  timer:stop()
  timer:close()
  chat_mod.on_event = orig_event
  chat.w.on_flush = nil
  local total = (uv.hrtime() - started) / 1e6
  print(
    ("%s: 2000 deltas as %d events in %.0f ms; last delta → buffer holds all: %.1f ms; longest main-loop block: %.1f ms wall, %.1f ms CPU"):format(
      label,
      events,
      total,
      holds_all_at and last_delta and (holds_all_at - last_delta) / 1e6 or -1,
      worst,
      worst_cpu
    )
  )
end

-- The real stream ends with `usage` and `done`, which write at once. The timer's own path: the
-- writer alone, 2,000 deltas appended from 2,000 separate loop iterations, no `done`.
do
  local buf = vim.api.nvim_create_buf(false, true)
  local w = require("claude_context.writer").new(buf, 30)
  local i, last, written = 0, nil, nil
  w.on_flush = function()
    if i == 2000 and not written then
      written = uv.hrtime()
    end
  end
  local function step()
    i = i + 1
    w:append(("d%06d "):format(i))
    if i < 2000 then
      vim.schedule(step)
    else
      last = uv.hrtime()
    end
  end
  vim.schedule(step)
  vim.wait(10000, function()
    return written ~= nil
  end, 1)
  print(("writer alone (timer path): last delta → buffer holds all: %.1f ms"):format((written - last) / 1e6))
end

burst("coalesced (flush every 30 ms)", false)
vim.cmd("ClaudeChatNew")
vim.cmd("wincmd p")
burst("baseline (one write per delta)", true)
vim.cmd("ClaudeChatNew")
vim.cmd("wincmd p")
burst("coalesced, again", false)
fake:stop()
vim.cmd("qa!")
