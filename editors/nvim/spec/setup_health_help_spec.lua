-- setup() loads nothing until a file opens; options of the wrong type are reported, not thrown;
-- :checkhealth claude_context; the help file's tags (generated here with :helptags).
local H = require("helpers")

describe("setup", function()
  it("defines the commands and loads neither vim.lsp nor the plugin until a file opens", function()
    for _, c in ipairs({
      "ClaudeContext",
      "ClaudeChat",
      "ClaudeChatCancel",
      "ClaudeChatNew",
      "ClaudeChatSessions",
      "ClaudeChatMode",
      "ClaudeChatStyle",
      "ClaudeCompact",
    }) do
      assert.are.equal(2, vim.fn.exists(":" .. c), c)
    end
    assert.is_nil(package.loaded["vim.lsp"])
    H.setup(nil)
    assert.is_nil(package.loaded["vim.lsp"])
    assert.is_nil(package.loaded["claude_context.lsp"])
    assert.is_nil(package.loaded["claude_context.chat"])
    assert.are.equal("", require("claude_context").status())
    local root = H.project({ ["CLAUDE.md"] = "# P\n", ["a.lua"] = "return 1\n" })
    vim.cmd.edit(root .. "/a.lua")
    local c = H.client()
    assert.are.equal(root, c.root_dir)
    assert.is_not_nil(package.loaded["claude_context.lsp"])
    -- Neovim 0.11's gaps, fixed in what the server is told.
    assert.is_true(c.capabilities.workspace.didChangeWatchedFiles.dynamicRegistration)
    assert.is_true(c.capabilities.workspace.applyEdit)
    H.wait(10000, function()
      local regs = c.dynamic_capabilities.capabilities["workspace/didChangeWatchedFiles"]
      return regs and #regs > 0
    end, "the server's watcher registration")
  end)

  it("applies new settings to the running server at once", function()
    local c = vim.lsp.get_clients({ name = "claude_context" })[1]
    local buf = vim.api.nvim_get_current_buf()
    local before = H.request(c, "context/preview", { textDocument = { uri = vim.uri_from_bufnr(buf) } })
    assert.are.equal(1000000, before.totals.window)
    H.setup(nil, { settings = { window = 100000 } })
    H.wait(10000, function()
      local r = H.request(c, "context/preview", { textDocument = { uri = vim.uri_from_bufnr(buf) } })
      return r.totals.window == 100000
    end, "the new window")
    assert.are.same({ claudeContext = { window = 100000 } }, c.settings)
  end)

  it("reports options of the wrong type and keeps the defaults", function()
    local notes = {}
    local orig = vim.notify
    vim.notify = function(msg)
      notes[#notes + 1] = msg
    end
    local ok = pcall(require("claude_context").setup, { cmd = "claude-context", bogus = true, chat = 3 })
    vim.wait(100, function()
      return #notes > 0
    end)
    vim.notify = orig
    assert.is_true(ok)
    local all = table.concat(notes, "\n")
    assert.matches("option cmd: expected a table, got string", all, 1, true)
    assert.matches('unknown option "bogus"', all, 1, true)
    assert.matches("option chat: expected a table, got number", all, 1, true)
    assert.are.same({ "claude-context", "lsp" }, require("claude_context.config").options.cmd)
    H.setup(nil)
  end)
end)

describe(":checkhealth claude_context", function()
  it("reports the version, the program, the server, watched files, applyEdit and the key (never its value)", function()
    vim.env.ANTHROPIC_API_KEY = "sk-ant-secret-value-do-not-print"
    vim.cmd("checkhealth claude_context")
    local text = H.text(vim.api.nvim_get_current_buf())
    assert.matches("OK Neovim 0.11", text, 1, true)
    assert.matches("claude%-context [%d.]+", text)
    assert.matches("buffer attached", text, 1, true)
    assert.matches("watched files: on, [1-9]%d* patterns? registered", text)
    assert.matches("applyEdit: on; the pending didChange is sent before each answer", text, 1, true)
    assert.matches("ANTHROPIC_API_KEY is set", text, 1, true)
    assert.is_nil(text:find("secret-value", 1, true))
    assert.is_nil(text:find("ERROR", 1, true), text)
    vim.cmd("tabclose")
  end)
end)

describe("the help file", function()
  it("has tags for every command and function, and every link resolves", function()
    local dir = H.tmpdir()
    vim.fn.mkdir(dir .. "/doc", "p")
    H.write(dir .. "/doc/claude-context.txt", H.read(H.plugin .. "/doc/claude-context.txt"))
    vim.cmd("helptags " .. vim.fn.fnameescape(dir .. "/doc"))
    local tags = {}
    for line in io.lines(dir .. "/doc/tags") do
      tags[line:match("^[^\t]+")] = true
    end
    for _, t in ipairs({
      "claude-context.txt",
      ":ClaudeContext",
      ":ClaudeChat",
      ":ClaudeChatCancel",
      ":ClaudeChatNew",
      ":ClaudeChatSessions",
      ":ClaudeChatMode",
      ":ClaudeChatStyle",
      ":ClaudeCompact",
      "claude_context.setup()",
      "claude_context.status()",
      "claude_context.status_info()",
      "claude-context-options",
      "claude-context-chat-keys",
      "claude-context-troubleshooting",
    }) do
      assert.is_true(tags[t] ~= nil, "no tag " .. t)
    end
    -- Every command the plugin defines is documented.
    for name in pairs(vim.api.nvim_get_commands({})) do
      if name:match("^Claude") then
        assert.is_true(tags[":" .. name] ~= nil, ":" .. name .. " has no tag")
      end
    end
    -- Every |link| is a tag of this file or of Neovim's help.
    local nvim_tags = {}
    for line in io.lines(vim.env.VIMRUNTIME .. "/doc/tags") do
      nvim_tags[line:match("^[^\t]+")] = true
    end
    vim.opt.runtimepath:append(dir)
    local text = H.read(dir .. "/doc/claude-context.txt")
    for link in text:gmatch("|([^|%s]+)|") do
      assert.is_true(tags[link] or nvim_tags[link] or false, "dangling link |" .. link .. "|")
    end
    local ok = pcall(vim.cmd, "help :ClaudeCompact")
    assert.is_true(ok)
    assert.matches("claude%-context%.txt$", vim.api.nvim_buf_get_name(0))
    vim.cmd("helpclose")
  end)
end)
