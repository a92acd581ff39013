-- Nothing typed is lost: a user typing in the chat's prompt when a permission question opens
-- answers it and goes on typing, and the words land in the prompt (Insert mode is given back).
-- Keys only reach a Neovim that runs its own input loop, so the user's Neovim here is a child
-- (`nvim --embed --headless`) driven by `nvim_input`, as a UI drives it; the plugin in it talks to the real
-- server and the fake model API started by this spec.
local H = require("helpers")

local root, fake, child

---@param code string Lua run in the child
---@param ... any its arguments (`...` there)
---@return any
local function lua(code, ...)
  return vim.rpcrequest(child, "nvim_exec_lua", code, { ... })
end

--- Waits until the child's `code` returns a true value.
local function child_wait(ms, code, what)
  H.wait(ms, function()
    return lua(code)
  end, what)
end

describe("typing around a permission question", function()
  setup(function()
    root = H.project({ ["CLAUDE.md"] = "# Notes\n", ["src/a.txt"] = "a\n" })
    fake = H.fake()
    local nvim = assert(vim.env.NVIM_BIN or vim.v.progpath, "NVIM_BIN (scripts/test sets it)")
    child = vim.fn.jobstart({ nvim, "--embed", "--headless", "--clean", "-n", "--cmd", "set rtp^=" .. H.plugin }, {
      rpc = true,
      env = { ANTHROPIC_API_KEY = "sk-ant-spec-fake-key", CLAUDE_CONTEXT_AUTO_MEMORY = "0" },
    })
    assert(child > 0, "could not start a child Neovim: " .. nvim)
    lua(
      [[
      local bin, url, file = ...
      vim.cmd.runtime("plugin/claude_context.lua")
      require("claude_context").setup({ cmd = { bin, "lsp" }, cmd_env = { ANTHROPIC_BASE_URL = url } })
      vim.cmd.edit(file)
    ]],
      H.bin,
      fake.url,
      root .. "/src/a.txt"
    )
    child_wait(
      20000,
      [[
      local c = vim.lsp.get_clients({ name = "claude_context" })[1]
      return c ~= nil and c.initialized
    ]],
      "the server to attach in the child"
    )
  end)

  teardown(function()
    pcall(vim.fn.jobstop, child)
    fake:stop()
  end)

  it("answers with a key and keeps typing in the prompt: the words after it are not commands", function()
    fake:push({
      {
        toolUses = {
          { id = "toolu_w", name = "Write", input = { file_path = root .. "/notes.md", content = "kept\n" } },
        },
      },
      { text = "Written." },
    })
    -- The user opens the chat's prompt, types a message and sends it without leaving Insert mode.
    lua([[vim.cmd("ClaudeChat")]])
    child_wait(
      5000,
      [[return vim.bo.filetype ~= nil and vim.api.nvim_get_current_buf() == require("claude_context.chat").current().prompt]],
      "the prompt to have the focus"
    )
    vim.rpcrequest(child, "nvim_input", "iWrite the notes<C-s>")
    child_wait(
      30000,
      [[
      local open = require("claude_context.permission").open_prompts()
      return #open == 1 and open[1].params.tool == "Write"
    ]],
      "the Write question"
    )
    -- The question's float has the focus, in Normal mode: 1 allows once; the user goes on typing.
    vim.rpcrequest(child, "nvim_input", "1")
    vim.rpcrequest(child, "nvim_input", "Yes, use reduce.")
    child_wait(
      30000,
      [[
      local chat = require("claude_context.chat").current()
      return table.concat(vim.api.nvim_buf_get_lines(chat.prompt, 0, -1, false), "\n") == "Yes, use reduce."
    ]],
      function()
        local ok, got = pcall(
          lua,
          [[
        local chat = require("claude_context.chat").current()
        return { mode = vim.fn.mode(), prompt = vim.api.nvim_buf_get_lines(chat.prompt, 0, -1, false), buf = vim.api.nvim_buf_get_name(0) }
      ]]
        )
        return "the typed words in the prompt; the child has " .. vim.inspect(ok and got or "no answer")
      end
    )
    assert.are.equal("i", lua([[return vim.fn.mode()]]))
    -- The answer was the one typed, and the tool ran.
    H.wait(30000, function()
      return vim.uv.fs_stat(root .. "/notes.md") ~= nil
    end, "the allowed Write")
    assert.are.equal("kept\n", H.read(root .. "/notes.md"))
  end)
end)
