-- The claude-context language server for `vim.lsp.config` / `vim.lsp.enable` (Neovim 0.11).
-- Built from the options of require("claude_context").setup(); your own
-- vim.lsp.config("claude_context", { ... }) calls take precedence over it.
return require("claude_context.lsp").config()
