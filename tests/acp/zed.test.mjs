// The README's Zed configuration, as a user pastes it: its `agent_servers` JSON is parsed and the
// command it names is run as Zed runs it (`claude-context` found on PATH, its args, its env added
// to the environment), then driven through a session and a turn.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BIN, TestClient, answerText, methods, startAgent, startFake, tempWorld } from "./harness.mjs";

const README = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../README.md");

/** The first ```json block of the README's "### Zed" section. */
function zedConfig() {
  const text = fs.readFileSync(README, "utf8");
  const section = text.slice(text.indexOf("### Zed"));
  const m = section.match(/```json\n([\s\S]*?)\n```/);
  assert.ok(m, "the Zed section has a JSON block");
  return JSON.parse(m[1]);
}

test("the README's Zed agent_servers entry starts a working agent", async () => {
  const config = zedConfig();
  const entry = config.agent_servers["claude-context"];
  assert.equal(entry.type, "custom");
  assert.equal(entry.command, "claude-context", "found on PATH, as the README says");
  const w = tempWorld({ "CLAUDE.md": "Be brief.\n" });
  const fake = await startFake();
  await fake.queue([{ text: "Hello from Zed's agent." }]);
  const proc = startAgent(w, fake, {
    command: entry.command,
    argv: entry.args,
    env: { ...entry.env, PATH: `${path.dirname(BIN)}:${process.env.PATH}` },
  });
  try {
    const client = new TestClient();
    const agent = client.connect(proc);
    const init = await client.initialize(agent);
    assert.equal(init.agentInfo.name, "claude-context");
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: w.ws, mcpServers: [] });
    const r = await agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    assert.equal(r.stopReason, "end_turn", proc.stderrText);
    assert.equal(answerText(client.of(sessionId)), "Hello from Zed's agent.");
    const [request] = await fake.requests();
    assert.match(JSON.stringify(request.body.messages[0]), /Be brief\./, "the project's CLAUDE.md");
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});
