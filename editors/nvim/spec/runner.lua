-- Runs one spec file with Debian's busted inside Neovim: `nvim -l spec/runner.lua FILE`.
-- LUA_PATH / LUA_CPATH must point at Debian's Lua 5.1 folders (scripts/test sets them).
-- --no-auto-insulate: busted's insulation would unload Neovim's own vim.lsp modules.
local here = vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2)))
local file = assert(arg[1], "usage: nvim -l spec/runner.lua SPEC_FILE")
vim.opt.runtimepath:prepend(vim.fs.dirname(here))
vim.cmd("filetype on")
vim.cmd.runtime("plugin/claude_context.lua")
package.path = here .. "/?.lua;" .. package.path
_G.arg = { [0] = "busted", "--no-auto-insulate", "-o", here .. "/output.lua", file }
require("busted.runner")({ standalone = false })
