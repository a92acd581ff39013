-- luacheck for the plugin, its specs and its benchmark (editors/nvim/scripts/test runs it).
std = "luajit"
globals = { "vim" }
-- Line length is left to review: LuaCATS annotations and messages run long.
max_line_length = false
-- Handlers and callbacks keep the parameters of the signature they implement.
unused_args = false
files["spec/**/*.lua"] = { std = "+busted" }
