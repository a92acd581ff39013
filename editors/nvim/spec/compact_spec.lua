-- Compaction: :ClaudeCompact! (a dry run in a float, "would not reduce" said as such),
-- :ClaudeCompact micro and full, with $/progress through Neovim's own progress.
local H = require("helpers")

local root, fake, chat_mod
local E = H.chat_events(function()
  return root
end)
local done_count, wait_done = E.done_count, E.wait_done

local function float_text()
  local buf = vim.api.nvim_get_current_buf()
  assert.are.equal("claude_context_compact", vim.bo[buf].filetype)
  return H.text(buf)
end

local function run(cmd)
  local result, err
  local compact = require("claude_context.compact")
  local orig = compact.run
  compact.run = function(opts)
    opts.on_result = function(e, r)
      err, result = e, r
    end
    return orig(opts)
  end
  vim.cmd(cmd)
  compact.run = orig
  H.wait(30000, function()
    return result or err
  end, cmd)
  vim.wait(50)
  return result, err
end

describe("compaction", function()
  setup(function()
    local files = { ["CLAUDE.md"] = "# Big\n" }
    for i = 1, 3 do
      files[("src/big%d.txt"):format(i)] = string.rep(("line %d of a large file\n"):format(i), 1200)
    end
    root = H.project(files)
    fake = H.fake()
    H.setup(fake, { settings = { compaction = { keepRecent = 1 } } })
    vim.cmd.edit(root .. "/CLAUDE.md")
    H.client()
    chat_mod = require("claude_context.chat")
    E.start()
  end)

  teardown(function()
    fake:stop()
  end)

  it("says a dry run would not reduce a short conversation", function()
    fake:push({ { text = "Hi." } })
    vim.cmd("ClaudeChat hello")
    wait_done(1)
    vim.cmd("wincmd p")
    local r = run("ClaudeCompact! micro")
    assert.is_true(r.dryRun)
    local t = float_text()
    assert.matches("Compaction dry run (micro): nothing was changed", t, 1, true)
    assert.matches("would not reduce the context", t, 1, true)
    vim.cmd("close")
  end)

  it("shows what a dry run would clear, then clears it (micro) and summarises (full) with progress", function()
    local uses = {}
    for i = 1, 3 do
      uses[i] = { id = "toolu_r" .. i, name = "Read", input = { file_path = ("%s/src/big%d.txt"):format(root, i) } }
    end
    fake:push({ { text = "Reading.", toolUses = uses }, { text = "Read them all." } })
    vim.cmd("ClaudeChat read the three files")
    wait_done(2)
    local r = run("ClaudeCompact! micro")
    assert.are.equal("micro", r.mode)
    assert.are.equal(2, #r.cleared)
    local t = float_text()
    assert.matches("would run: clear old tool results", t, 1, true)
    assert.matches("toolu_r1", t, 1, true)
    assert.matches("toolu_r2", t, 1, true)
    assert.is_nil(t:find("toolu_r3", 1, true))
    assert.matches(("tokens: %s → ≈ "):format(require("claude_context.util").thousands(r.tokensBefore)), t, 1, true)
    vim.cmd("close")
    -- Nothing changed: the same dry run says the same.
    local again = run("ClaudeCompact! micro")
    assert.are.equal(2, #again.cleared)
    vim.cmd("close")
    r = run("ClaudeCompact micro")
    assert.are.equal("micro", r.mode)
    assert.is_false(r.dryRun)
    assert.matches("context compacted (micro): ", H.text(chat_mod.get(root).buf), 1, true)
    local after = run("ClaudeCompact! micro")
    assert.are.equal(0, #(after.cleared or {}))
    vim.cmd("close")
    -- A summary, with $/progress on our token through vim.lsp's progress.
    local progress = {}
    vim.api.nvim_create_autocmd("LspProgress", {
      callback = function(args)
        local p = args.data and args.data.params
        if p and tostring(p.token):find("claude_context/compact/", 1, true) then
          progress[#progress + 1] = p.value.kind
        end
      end,
    })
    -- A long answer, so that a summary frees more than the files it reads again.
    fake:push({ { text = string.rep("A long explanation of the three files. ", 5000), piece = 4000 } })
    local n = done_count()
    vim.cmd("ClaudeChat explain them at length")
    wait_done(n + 1)
    -- The summary keeps the last answer: make it a short one.
    fake:push({ { text = "Fine." } })
    vim.cmd("ClaudeChat thanks")
    wait_done(n + 2)
    fake:push({
      { text = "<summary>\n1. Primary Request and Intent:\n   The user asked to read the three files.\n</summary>" },
    })
    r = run("ClaudeCompact full keep the file names")
    assert.are.equal("full", r.mode, vim.inspect(r))
    assert.is_true(r.tokensAfter < r.tokensBefore)
    assert.are.same({ "begin", "end" }, { progress[1], progress[#progress] })
    local reqs = fake:requests()
    local body = vim.json.encode(reqs[#reqs].body)
    assert.matches("keep the file names", body, 1, true)
    assert.matches("context compacted (full): ", H.text(chat_mod.get(root).buf), 1, true)
  end)
end)
