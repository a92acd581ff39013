// The same agent through the SDK's 1.x `ClientSideConnection` (removed in SDK 2.0; clients
// pinned to 1.x still use it): one turn with two Writes, the first asked and allowed for the
// session, the second not asked again; the file the client holds unsaved lands through
// fs/write_text_file, the new one on disk.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp1 from "acp-sdk-1";
import { startAgent, startFake, tempWorld } from "./harness.mjs";

test("ClientSideConnection (SDK 1.x): a permission allowed for the session covers the next Write", async () => {
  const w = tempWorld({ "notes.md": "old\n" });
  const fake = await startFake();
  const notes = path.join(w.ws, "notes.md");
  const fresh = path.join(w.ws, "fresh.md");
  await fake.queue([
    { toolUses: [{ id: "toolu_r", name: "Read", input: { file_path: notes } }] },
    {
      blocks: [
        { toolUse: { id: "toolu_w1", name: "Write", input: { file_path: notes, content: "new\n" } } },
        { toolUse: { id: "toolu_w2", name: "Write", input: { file_path: fresh, content: "hi\n" } } },
      ],
    },
    { text: "Both written." },
  ]);
  const proc = startAgent(w, fake);
  const updates = [];
  const asked = [];
  const writes = [];
  const client = {
    async requestPermission(p) {
      asked.push(p);
      const o = p.options.find((o) => o.kind === "allow_always");
      return { outcome: { outcome: "selected", optionId: o.optionId } };
    },
    async sessionUpdate(p) {
      updates.push(p.update);
    },
    async readTextFile(p) {
      // The client holds notes.md with unsaved changes: the agent writes it through the client.
      // (A file it holds as on disk is written by the agent itself, confined to the workspace.)
      if (p.path === notes) return { content: "old, unsaved\n" };
      return { content: fs.readFileSync(p.path, "utf8") };
    },
    async writeTextFile(p) {
      writes.push(p);
      return {};
    },
  };
  try {
    const stream = acp1.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
    const conn = new acp1.ClientSideConnection(() => client, stream);
    const init = await conn.initialize({
      protocolVersion: acp1.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    });
    assert.equal(init.protocolVersion, 1);
    const { sessionId } = await conn.newSession({ cwd: w.ws, mcpServers: [] });
    const r = await conn.prompt({ sessionId, prompt: [{ type: "text", text: "rewrite notes" }] });
    assert.equal(r.stopReason, "end_turn", proc.stderrText);
    assert.equal(asked.length, 1, "the session answer covered the second Write");
    assert.equal(asked[0].toolCall.toolCallId, "toolu_w1");
    // The file the client holds unsaved went through it; the new file was written by the agent.
    assert.deepEqual(writes, [{ sessionId, path: notes, content: "new\n" }]);
    assert.equal(fs.readFileSync(notes, "utf8"), "old\n", "the client's write, not the disk");
    assert.equal(fs.readFileSync(fresh, "utf8"), "hi\n");
    assert.ok(updates.some((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "toolu_w2"));
  } finally {
    proc.kill();
    fake.close();
    w.cleanup();
  }
});
