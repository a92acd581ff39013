// `claude-context acp` driven by the official ACP TypeScript SDK (its current app API, the
// successor of `ClientSideConnection`, which SDK 2.0 removed: legacy.test.mjs drives that one)
// against the fake Anthropic API: what an ACP editor sees, and what the model is sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  BIN,
  TestClient,
  answerText,
  methods,
  startAgent,
  startFake,
  tempWorld,
} from "./harness.mjs";

const RULE = "---\npaths: [\"src/**/*.ts\"]\n---\nUse tabs in TypeScript files.\n";

/** A world with a conditional rule for src/**.ts and src/a.ts on disk. */
function world() {
  return tempWorld({
    "CLAUDE.md": "Project instructions.\n",
    ".claude/rules/ts.md": RULE,
    "src/a.ts": "let x = 1;\n",
  });
}

async function session(client, agent, ws) {
  await client.initialize(agent);
  const s = await agent.request(methods.agent.session.new, { cwd: ws, mcpServers: [] });
  await client.until(
    () => client.of(s.sessionId).some((u) => u.sessionUpdate === "available_commands_update"),
    "the available commands",
  );
  return s.sessionId;
}

function prompt(agent, sessionId, text) {
  return agent.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text }],
  });
}

test("initialize negotiates version 1 and says what the agent does", async () => {
  const w = world();
  const fake = await startFake();
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const init = await client.initialize(agent);
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.equal(init.agentCapabilities.promptCapabilities.image, true);
    assert.equal(init.agentInfo.name, "claude-context");
    // MCP servers offered in session/new: stdio, and the remote transports the agent speaks.
    assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
    assert.deepEqual(init.authMethods, [], "a key is in the environment: nothing to do");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("without a key: an auth method that says how, and sessions refused with -32000", async () => {
  const w = world();
  const proc = startAgent(w, null, { env: { ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "" } });
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const init = await client.initialize(agent);
    assert.equal(init.authMethods.length, 1);
    assert.match(init.authMethods[0].description, /ANTHROPIC_API_KEY/);
    await assert.rejects(
      agent.request(methods.agent.session.new, { cwd: w.ws, mcpServers: [] }),
      (e) => e.code === -32000 && /ANTHROPIC_API_KEY/.test(e.message),
    );
  } finally {
    proc.kill();
    w.cleanup();
  }
});

test("a turn: Read of an unsaved buffer, the rule it attaches, an Edit through fs/write_text_file after a permission, a plan", async () => {
  const w = world();
  const fake = await startFake();
  const a = path.join(w.ws, "src/a.ts");
  const unsaved = "let x = 1;\nlet y = 2; // unsaved\n";
  await fake.queue([
    { text: "Reading.", toolUses: [{ id: "toolu_read", name: "Read", input: { file_path: a } }] },
    {
      blocks: [
        {
          toolUse: {
            id: "toolu_todo",
            name: "TodoWrite",
            input: {
              todos: [
                { content: "Make y const", status: "in_progress", activeForm: "Making y const" },
                { content: "Say so", status: "pending", activeForm: "Saying so" },
              ],
            },
          },
        },
        {
          toolUse: {
            id: "toolu_edit",
            name: "Edit",
            input: { file_path: a, old_string: "let y = 2;", new_string: "const y = 2;" },
          },
        },
      ],
    },
    { text: "Done: y is const." },
  ]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient({ buffers: { [a]: unsaved } });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    const answer = await prompt(agent, sid, "make y const in src/a.ts");
    assert.equal(answer.stopReason, "end_turn", proc.stderrText);
    const ups = client.of(sid);

    // The Read: a read call on the file, its result the client's unsaved text.
    const read = ups.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "toolu_read");
    assert.equal(read.kind, "read");
    assert.deepEqual(read.locations, [{ path: a }]);
    assert.ok(client.reads.some((r) => r.path === a && r.sessionId === sid));
    const readDone = ups.find(
      (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "toolu_read" && u.status,
    );
    assert.equal(readDone.status, "completed");
    assert.match(JSON.stringify(readDone.content), /unsaved/);

    // The rule the Read made apply, shown, and in the next request's bytes after the result.
    const attached = ups.find(
      (u) => u.sessionUpdate === "tool_call" && /now applies/.test(u.title ?? ""),
    );
    assert.equal(attached.title, "rule .claude/rules/ts.md now applies (because of src/a.ts)");
    assert.deepEqual(attached.locations, [{ path: path.join(w.ws, ".claude/rules/ts.md") }]);
    const requests = await fake.requests();
    assert.equal(requests.length, 3);
    const second = JSON.stringify(requests[1].body.messages.at(-1));
    const result = second.indexOf("toolu_read");
    const rule = second.indexOf("Use tabs in TypeScript files.");
    assert.ok(result >= 0 && rule > result, `the rule follows the Read's result: ${second}`);
    assert.ok(
      !JSON.stringify(requests[0].body).includes("Use tabs in TypeScript"),
      "the rule was not there before the Read",
    );

    // The plan from TodoWrite.
    const plan = ups.find((u) => u.sessionUpdate === "plan");
    assert.deepEqual(
      plan.entries.map((e) => [e.content, e.status]),
      [
        ["Make y const", "in_progress"],
        ["Say so", "pending"],
      ],
    );

    // The Edit: asked first, for the call the client shows, with the session's own scope.
    const edit = ups.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "toolu_edit");
    assert.equal(edit.kind, "edit");
    assert.deepEqual(edit.content, [
      { type: "diff", path: a, oldText: "let y = 2;", newText: "const y = 2;" },
    ]);
    assert.equal(client.permissions.length, 1, "only the Edit asks");
    const ask = client.permissions[0];
    assert.equal(ask.toolCall.toolCallId, "toolu_edit");
    assert.deepEqual(
      ask.options.map((o) => o.kind),
      ["allow_once", "allow_always", "reject_once"],
    );
    assert.equal(
      ask.options[1].name,
      "Allow every Edit inside the workspace for this session",
    );
    // It landed in the client's buffer; the disk is untouched.
    assert.deepEqual(client.writes, [
      { sessionId: sid, path: a, content: "let x = 1;\nconst y = 2; // unsaved\n" },
    ]);
    assert.equal(fs.readFileSync(a, "utf8"), "let x = 1;\n");
    const editDone = ups.find(
      (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "toolu_edit" && u.status === "completed",
    );
    assert.ok(editDone, "the Edit completed");
    assert.equal(answerText(ups), "Reading.Done: y is const.");
    // The default model's window (claude-opus-5-5, server/src/models.rs).
    assert.ok(ups.some((u) => u.sessionUpdate === "usage_update" && u.size === 1000000 && u.used > 0));

    // /context: the preview as a message, the attached rule in it.
    const before = client.of(sid).length;
    const ctx = await prompt(agent, sid, "/context");
    assert.equal(ctx.stopReason, "end_turn");
    const shown = answerText(client.of(sid).slice(before));
    assert.match(shown, /\*\*Context: [\d,]+ of 1,000,000 tokens/);
    assert.match(shown, /`\.claude\/rules\/ts\.md` applies because of `src\/a\.ts`/);
    assert.match(shown, /`CLAUDE\.md` \| project \| loaded/);
    assert.equal((await fake.requests()).length, 3, "/context calls no model");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

/** A 1×1 PNG, whole, base64. */
const PNG_1X1 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

test("an image in a prompt reaches the model before the text; a bad one refuses the prompt, which goes on", async () => {
  const w = world();
  const fake = await startFake();
  await fake.queue([{ text: "A single pixel." }]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    // GIF bytes declared as PNG: -32602 with the reason, nothing sent.
    await assert.rejects(
      agent.request(methods.agent.session.prompt, {
        sessionId: sid,
        prompt: [
          { type: "text", text: "look" },
          { type: "image", mimeType: "image/png", data: "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==" },
        ],
      }),
      (e) => e.code === -32602 && /prompt\[1\]: the image is declared image\/png but its bytes are image\/gif/.test(e.message),
    );
    assert.equal((await fake.requests()).length, 0, "nothing sent");
    const answer = await agent.request(methods.agent.session.prompt, {
      sessionId: sid,
      prompt: [
        { type: "image", mimeType: "image/png", data: PNG_1X1 },
        { type: "text", text: "what is this?" },
      ],
    });
    assert.equal(answer.stopReason, "end_turn");
    const content = (await fake.requests())[0].body.messages.at(-1).content;
    const at = content.findIndex((b) => b.type === "image");
    assert.deepEqual(content[at], { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1X1 } });
    assert.equal(content[at + 1].text, "what is this?");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("a rejected Bash runs nothing, ends the turn, and the model is told with the next message", async () => {
  const w = world();
  const fake = await startFake();
  await fake.queue([
    { toolUses: [{ id: "toolu_bash", name: "Bash", input: { command: "touch ran.txt" } }] },
    { text: "Understood." },
  ]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient({ permission: () => "reject_once" });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    const answer = await prompt(agent, sid, "touch a file");
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(client.permissions[0].toolCall.toolCallId, "toolu_bash");
    // A command's session answer covers that exact command text only.
    assert.equal(
      client.permissions[0].options[1].name,
      "Allow this exact command for this session: touch ran.txt",
    );
    assert.ok(!fs.existsSync(path.join(w.ws, "ran.txt")), "nothing ran");
    const failed = client
      .of(sid)
      .find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "toolu_bash" && u.status);
    assert.equal(failed.status, "failed");
    // The rejection ended the turn: no request after it until the user writes.
    assert.equal((await fake.requests()).length, 1);
    assert.equal((await prompt(agent, sid, "what now?")).stopReason, "end_turn");
    const requests = await fake.requests();
    const results = requests[1].body.messages.at(-2).content;
    assert.equal(results[0].type, "tool_result");
    assert.equal(results[0].is_error, true);
    assert.match(JSON.stringify(results[0].content), /The user doesn't want to proceed with this tool use\./);
    assert.equal(results[1].text, "[Request interrupted by user for tool use]\n");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("session/cancel mid-stream: stop reason cancelled, the partial answer kept for the next request", async () => {
  const w = world();
  const fake = await startFake();
  const long = "word ".repeat(400);
  await fake.queue([{ text: long, piece: 5, paceMs: 20 }, { text: "Resumed." }]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    const turn = prompt(agent, sid, "write a lot");
    await client.until(
      () => answerText(client.of(sid)).length >= 25,
      "the answer to start streaming",
    );
    await agent.notify(methods.agent.session.cancel, { sessionId: sid });
    const answer = await turn;
    assert.equal(answer.stopReason, "cancelled");
    const partial = answerText(client.of(sid));
    assert.ok(partial.length < long.length, "stopped before the end");
    const next = await prompt(agent, sid, "go on");
    assert.equal(next.stopReason, "end_turn");
    const requests = await fake.requests();
    const sent = JSON.stringify(requests[1].body.messages);
    assert.ok(sent.includes(partial.trim().slice(0, 20)), "the partial answer is in the history");
    assert.ok(sent.includes("[Request interrupted by user]"));
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("session/cancel while a permission is pending: the agent cancels the prompt with $/cancel_request {requestId}, and the client's prompt closes", async () => {
  const w = world();
  const fake = await startFake();
  await fake.queue([
    { toolUses: [{ id: "toolu_bash", name: "Bash", input: { command: "touch ran.txt" } }] },
    { text: "Never sent." },
  ]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient({ permission: () => "hold" });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    const turn = prompt(agent, sid, "touch a file");
    await client.until(() => client.permissions.length === 1, "the permission prompt");
    assert.equal(client.permissions[0].toolCall.toolCallId, "toolu_bash");
    await agent.notify(methods.agent.session.cancel, { sessionId: sid });
    assert.equal((await turn).stopReason, "cancelled");
    // The SDK aborts a handler's signal only for `$/cancel_request` with the schema's
    // `requestId`: the held prompt settles.
    await client.until(() => client.closed.length === 1, "the pending permission prompt to close", 20000);
    assert.equal(client.closed[0].reason?.code, -32800, String(client.closed[0].reason));
    assert.ok(!fs.existsSync(path.join(w.ws, "ran.txt")), "nothing ran");
    assert.equal((await fake.requests()).length, 1, "no request after the cancel");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("session/load in a new process replays the conversation, then goes on with it", async () => {
  const w = world();
  const fake = await startFake();
  const a = path.join(w.ws, "src/a.ts");
  await fake.queue([
    { text: "Let me look.", toolUses: [{ id: "toolu_r1", name: "Read", input: { file_path: a } }] },
    { text: "It sets x." },
    { text: "Still here." },
  ]);
  let proc = startAgent(w, fake);
  let sid;
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    sid = await session(client, agent, w.ws);
    assert.equal((await prompt(agent, sid, "what does a.ts do?")).stopReason, "end_turn");
  } finally {
    proc.stdin.end();
    assert.equal(await proc.exited, 0, "the end of the input ends the agent cleanly");
  }
  proc = startAgent(w, fake);
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    await client.initialize(agent);
    const loaded = await agent.request(methods.agent.session.load, {
      sessionId: sid,
      cwd: w.ws,
      mcpServers: [],
    });
    assert.ok(loaded !== undefined);
    // Every update of the replay came before the answer.
    const ups = client.of(sid);
    const kinds = ups.map((u) => u.sessionUpdate);
    assert.deepEqual(kinds.slice(0, 2), ["user_message_chunk", "agent_message_chunk"]);
    assert.equal(ups[0].content.text, "what does a.ts do?");
    assert.ok(
      ups.some((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "toolu_r1" && u.kind === "read"),
    );
    assert.ok(
      ups.some(
        (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "toolu_r1" && u.status === "completed",
      ),
    );
    assert.ok(ups.some((u) => u.sessionUpdate === "tool_call" && /ts\.md applies/.test(u.title ?? "")));
    assert.equal(answerText(ups), "Let me look.It sets x.");
    assert.equal((await prompt(agent, sid, "and now?")).stopReason, "end_turn");
    const requests = await fake.requests();
    const sent = JSON.stringify(requests[2].body.messages);
    assert.ok(sent.includes("what does a.ts do?") && sent.includes("It sets x."), sent);
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("/compact [focus] summarises with the focus and keeps the user's words", async () => {
  const w = world();
  const fake = await startFake();
  // An answer long enough that a summary frees most of the conversation.
  await fake.queue([
    { text: "First answer. " + "detail ".repeat(6000), piece: 4096 },
    { text: "Second answer." },
    {
      text:
        "<analysis>x</analysis><summary>1. Primary Request and Intent: talk.\n6. All user messages:\n- hello there\n</summary>",
    },
    { text: "After the summary." },
  ]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    assert.equal((await prompt(agent, sid, "hello there")).stopReason, "end_turn");
    assert.equal((await prompt(agent, sid, "and again")).stopReason, "end_turn");
    const before = client.of(sid).length;
    const done = await prompt(agent, sid, "/compact the greeting");
    assert.equal(done.stopReason, "end_turn", proc.stderrText);
    const said = answerText(client.of(sid).slice(before));
    assert.match(said, /^Compacted the conversation: about \d+ → \d+ tokens; 2 of your messages kept/);
    const requests = await fake.requests();
    assert.match(JSON.stringify(requests[2].body), /the greeting/, "the focus went to the summary");
    assert.equal((await prompt(agent, sid, "next")).stopReason, "end_turn");
    const after = JSON.stringify((await fake.requests())[3].body.messages);
    assert.ok(after.includes("hello there"), "the user's message survived");
    assert.ok(!after.includes("First answer."), "the history is the summary now");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("a repository that approves its own server: nothing runs before trust, and the question comes inside the first prompt", async () => {
  const w = tempWorld({
    "CLAUDE.md": "Project instructions.\n",
    ".claude/settings.local.json": '{"enableAllProjectMcpServers": true}',
  });
  // A server that would leave a marker if it ever started; committed with the approval, as a
  // clone brings them.
  const marker = path.join(w.ws, "started");
  fs.writeFileSync(
    path.join(w.ws, ".mcp.json"),
    JSON.stringify({ mcpServers: { evil: { command: "sh", args: ["-c", `echo started >> '${marker}'; exec cat`] } } }),
  );
  const git = (...args) =>
    execFileSync("git", ["-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd: w.ws, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-qm", "the repository approves its own server");
  const fake = await startFake();
  await fake.queue([{ text: "Hello." }]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient({ permission: () => "reject_always" });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    // Between turns: no question (an editor would not show it), nothing started.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(client.permissions.length, 0, "asked between turns");
    assert.ok(!fs.existsSync(marker), "the repository's server ran before trust");
    const answer = await prompt(agent, sid, "hello");
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(client.permissions.length, 1);
    const q = client.permissions[0];
    assert.equal(q.toolCall.title, `Accessing workspace: ${w.ws}`);
    assert.deepEqual(
      q.options.map((o) => [o.name, o.kind]),
      [
        ["Yes, I trust this folder", "allow_always"],
        ["No, don't trust this folder", "reject_always"],
      ],
    );
    assert.match(JSON.stringify(q.toolCall.content), /Quick safety check: Is this a project you created or one you trust\?/);
    assert.ok(!fs.existsSync(marker), "said no: nothing starts");
    const requests = await fake.requests();
    assert.equal(requests.length, 1);
    assert.ok(!JSON.stringify(requests[0].body).includes("mcp__evil"));
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("a Read through the client says what the client returned; --no-client-files keeps reads and writes in the agent", async () => {
  const w = world();
  const fake = await startFake();
  const a = path.join(w.ws, "src/a.ts");
  const theirs = "let x = 1;\nlet y = 2; // the client's text\n";
  const readA = (id) => ({ toolUses: [{ id, name: "Read", input: { file_path: a } }] });
  await fake.queue([readA("toolu_r1"), { text: "Read." }]);
  let proc = startAgent(w, fake);
  try {
    const client = new TestClient({ buffers: { [a]: theirs } });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    assert.equal((await prompt(agent, sid, "read a.ts")).stopReason, "end_turn", proc.stderrText);
    const result = JSON.stringify((await fake.requests())[1].body.messages.at(-1));
    assert.match(result, /the client's text/);
    // No promise ACP clients keep: codecompanion.nvim answers from the disk.
    assert.match(result, /read from the text the ACP client returned for it \(fs\/read_text_file\), which differs from the file on disk/);
    assert.ok(!/unsaved changes/.test(result), result);
  } finally {
    proc.kill();
  }
  await fake.queue([
    readA("toolu_r2"),
    { toolUses: [{ id: "toolu_e2", name: "Edit", input: { file_path: a, old_string: "let x = 1;", new_string: "const x = 1;" } }] },
    { text: "Edited." },
  ]);
  proc = startAgent(w, fake, { args: ["--no-client-files"] });
  try {
    const client = new TestClient({ buffers: { [a]: theirs } });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    assert.equal((await prompt(agent, sid, "make x const")).stopReason, "end_turn", proc.stderrText);
    assert.deepEqual(client.reads, [], "no fs/read_text_file");
    assert.deepEqual(client.writes, [], "no fs/write_text_file");
    const requests = await fake.requests();
    const result = JSON.stringify(requests.at(-2).body.messages.at(-1));
    assert.match(result, /let x = 1;/);
    assert.ok(!/the client's text/.test(result), "the disk's text, not the client's");
    // The agent's own confined write, after the permission.
    assert.equal(client.permissions.at(-1).toolCall.toolCallId, "toolu_e2");
    assert.equal(fs.readFileSync(a, "utf8"), "const x = 1;\n");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("stderr stays empty by default (a failing MCP server, a noisy hook); --log info brings the lines back", async () => {
  const w = world();
  // The user's own server (no approval needed), which fails with a message on its stderr.
  fs.writeFileSync(
    path.join(w.env.HOME, ".claude.json"),
    JSON.stringify({ mcpServers: { broken: { command: "sh", args: ["-c", "echo broken-server-says >&2; exit 3"] } } }),
  );
  fs.mkdirSync(path.join(w.env.HOME, ".claude"), { recursive: true });
  fs.writeFileSync(
    path.join(w.env.HOME, ".claude/settings.json"),
    JSON.stringify({
      hooks: {
        UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo hook-noise >&2; exit 1" }] }],
      },
    }),
  );
  // Hooks run in a trusted folder only.
  execFileSync(BIN, ["trust", "--cwd", w.ws, "--yes"], { env: w.env, stdio: "ignore" });
  const fake = await startFake();
  // What the agent keeps of each server's connection (`mcp/*.json` in its state folder): the
  // failure is written there after it is logged.
  const kept = () =>
    fs.existsSync(path.join(w.root, "state"))
      ? fs
          .readdirSync(path.join(w.root, "state"), { recursive: true })
          .map((f) => path.join(w.root, "state", f))
          .filter((f) => path.basename(path.dirname(f)) === "mcp" && f.endsWith(".json"))
      : [];
  const run = async (args) => {
    for (const f of kept()) fs.rmSync(f);
    await fake.queue([{ text: "Hello." }]);
    const proc = startAgent(w, fake, { args });
    const client = new TestClient();
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    assert.equal((await prompt(agent, sid, "hello")).stopReason, "end_turn", proc.stderrText);
    assert.ok(
      client.of(sid).some((u) => u.sessionUpdate === "tool_call" && /UserPromptSubmit hook/.test(u.title ?? "")),
      "the hook ran",
    );
    await client.until(
      () => kept().some((f) => fs.readFileSync(f, "utf8").includes("broken")),
      "the server's failure",
      30000,
      250,
    );
    proc.stdin.end();
    assert.equal(await proc.exited, 0);
    return proc.stderrText;
  };
  try {
    assert.equal(await run([]), "", "nothing on stderr by default");
    const loud = await run(["--log", "info"]);
    assert.match(loud, /MCP server broken failed .*broken-server-says/, loud);
  } finally {
    fake.close();
    w.cleanup();
  }
});

test("a client that shows only requests arriving inside a turn: a project server's approval comes inside the first prompt, which ends", async () => {
  const w = world();
  fs.writeFileSync(
    path.join(w.ws, ".mcp.json"),
    JSON.stringify({ mcpServers: { demo: { command: "sh", args: ["-c", "exit 3"] } } }),
  );
  execFileSync(BIN, ["trust", "--cwd", w.ws, "--yes"], { env: w.env, stdio: "ignore" });
  const fake = await startFake();
  await fake.queue([{ text: "Hello." }]);
  const proc = startAgent(w, fake);
  try {
    // codecompanion.nvim: a request between turns is never shown, so never answered.
    let inTurn = false;
    const arrived = [];
    const client = new TestClient({
      permission: (p) => {
        arrived.push([p.toolCall.title, inTurn]);
        return inTurn ? "reject_once" : "hold";
      },
    });
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    inTurn = true;
    const answer = await prompt(agent, sid, "hello");
    inTurn = false;
    assert.equal(answer.stopReason, "end_turn", proc.stderrText);
    assert.deepEqual(arrived, [["New MCP server found in this project: demo", true]]);
    assert.ok(!JSON.stringify((await fake.requests())[0].body).includes("mcp__demo"));
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

/** The Python MCP SDK `.ci/run` installs (the demo server imports it), or null. */
function pythonMcp() {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(process.env.HOME ?? "", ".cache");
  const dir = path.join(cache, "claude-context-ci", "python-mcp");
  try {
    execFileSync("python3", ["-c", "import mcp"], { env: { ...process.env, PYTHONPATH: dir }, stdio: "ignore" });
    return dir;
  } catch {
    return null;
  }
}

test("an MCP server offered in session/new: its approval comes inside the first prompt, then its tools reach the model", async (t) => {
  const sdk = pythonMcp();
  if (sdk === null) {
    t.skip("needs the Python MCP SDK for tests/data/mcp/demo_server.py: run .ci/run (it installs it under ~/.cache/claude-context-ci/python-mcp)");
    return;
  }
  const w = world();
  execFileSync(BIN, ["trust", "--cwd", w.ws, "--yes"], { env: w.env, stdio: "ignore" });
  const demo = path.resolve(import.meta.dirname, "../data/mcp/demo_server.py");
  const fake = await startFake();
  await fake.queue([
    { toolUses: [{ id: "toolu_s", name: "ToolSearch", input: { query: "select:mcp__demo__add" } }] },
    { toolUses: [{ id: "toolu_a", name: "mcp__demo__add", input: { a: 2, b: 3 } }] },
    { text: "5." },
  ]);
  const proc = startAgent(w, fake);
  try {
    // An editor that shows (and answers) only what arrives during session/prompt.
    let inTurn = false;
    const arrived = [];
    const client = new TestClient({
      permission: (p) => {
        arrived.push([p.toolCall.title, inTurn]);
        return inTurn ? "allow_once" : "hold";
      },
    });
    const agent = client.connect(proc);
    await client.initialize(agent);
    const mcpServers = [
      { name: "demo", command: "/usr/bin/env", args: ["python3", demo], env: [{ name: "PYTHONPATH", value: sdk }] },
    ];
    const s = await agent.request(methods.agent.session.new, { cwd: w.ws, mcpServers });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.deepEqual(arrived, [], "asked between turns");
    inTurn = true;
    const answer = await prompt(agent, s.sessionId, "add 2 and 3");
    inTurn = false;
    assert.equal(answer.stopReason, "end_turn", proc.stderrText);
    // The server's approval, then the call's permission: both inside the turn.
    assert.equal(arrived.length, 2, JSON.stringify(arrived));
    assert.deepEqual(arrived[0], ["New MCP server offered by the editor: demo", true]);
    assert.equal(client.permissions[1].toolCall.toolCallId, "toolu_a");
    assert.ok(arrived.every(([, inside]) => inside));
    const q = client.permissions[0];
    assert.deepEqual(
      q.options.map((o) => o.name),
      ["Use this MCP server", "Continue without using this MCP server"],
    );
    assert.match(JSON.stringify(q.toolCall.content), /It runs ` \/usr\/bin\/env python3 /);
    const requests = await fake.requests();
    assert.equal(requests.length, 3);
    assert.match(JSON.stringify(requests[0].body.system), /mcp__demo__add/);
    assert.match(JSON.stringify(requests[2].body.messages.at(-1)), /\{\\"result\\":5\}/);
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});

test("skills and commands are slash commands: every one the user may type offered with its description and hint, /name args runs it", async () => {
  const w = tempWorld({
    "CLAUDE.md": "Project instructions.\n",
    ".claude/skills/greet/SKILL.md":
      "---\ndescription: Greets someone warmly\nargument-hint: <name>\n---\nSay hello to $ARGUMENTS from ${CLAUDE_SKILL_DIR}.\n",
    ".claude/skills/deploy/SKILL.md":
      "---\ndescription: Deploys (for the user only)\ndisable-model-invocation: true\n---\nDeploy now.\n",
    ".claude/skills/internal/SKILL.md":
      "---\ndescription: Only for the model\nuser-invocable: false\n---\nInternal.\n",
    ".claude/commands/review.md": "---\ndescription: Reviews the diff\n---\nReview the diff.\n",
  });
  execFileSync(BIN, ["trust", "--cwd", w.ws, "--yes"], { env: w.env, stdio: "ignore" });
  const fake = await startFake();
  await fake.queue([{ text: "Hello, Alice!" }]);
  const proc = startAgent(w, fake);
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const sid = await session(client, agent, w.ws);
    const offered = client.of(sid).find((u) => u.sessionUpdate === "available_commands_update");
    const byName = Object.fromEntries(offered.availableCommands.map((c) => [c.name, c]));
    assert.deepEqual(
      Object.keys(byName).sort(),
      ["compact", "context", "deploy", "greet", "review"],
      JSON.stringify(offered),
    );
    assert.equal(byName.greet.description, "Greets someone warmly");
    assert.deepEqual(byName.greet.input, { hint: "<name>" });
    assert.equal(byName.review.description, "Reviews the diff");

    const answer = await prompt(agent, sid, "/greet Alice");
    assert.equal(answer.stopReason, "end_turn", proc.stderrText);
    const requests = await fake.requests();
    assert.equal(requests.length, 1);
    const sent = JSON.stringify(requests[0].body.messages.at(-1));
    assert.ok(sent.includes("<command-name>/greet</command-name>"), sent);
    assert.ok(sent.includes("<command-args>Alice</command-args>"), sent);
    const dir = path.join(w.ws, ".claude/skills/greet");
    assert.ok(sent.includes(`Base directory for this skill: ${dir}`), sent);
    assert.ok(sent.includes(`Say hello to Alice from ${dir}.`), sent);
    assert.equal(answerText(client.of(sid)), "Hello, Alice!");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});
