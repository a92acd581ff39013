// The test harness: the fake Anthropic API as a program, a temporary world (workspace, HOME,
// state folder), `claude-context acp` started in it, and an ACP client built on the official
// TypeScript SDK that keeps the files it "holds open" in memory (its unsaved buffers), records
// every update, permission prompt, read and write, and answers prompts by a policy.
//
// CLAUDE_CONTEXT_BIN and FAKE_ANTHROPIC_BIN name the binaries (tests/acp/run sets them to the
// release builds).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export const BIN = process.env.CLAUDE_CONTEXT_BIN;
export const FAKE = process.env.FAKE_ANTHROPIC_BIN;
if (!BIN || !FAKE) {
  throw new Error("set CLAUDE_CONTEXT_BIN and FAKE_ANTHROPIC_BIN (tests/acp/run does)");
}

/** A line of a child's stdout, as a promise. */
function firstLine(stream) {
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (d) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        stream.off("data", onData);
        resolve(buf.slice(0, nl));
      }
    };
    stream.setEncoding("utf8");
    stream.on("data", onData);
    stream.on("end", () => reject(new Error("the program ended before printing its line")));
  });
}

/** The fake Messages API (docs/fake-anthropic.md). */
export async function startFake() {
  const proc = spawn(FAKE, ["--watch-stdin"], { stdio: ["pipe", "pipe", "inherit"] });
  const { baseUrl } = JSON.parse(await firstLine(proc.stdout));
  const call = async (method, route, body) => {
    const r = await fetch(baseUrl + route, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!r.ok) throw new Error(`${method} ${route}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  return {
    baseUrl,
    queue: (replies) => call("POST", "/_fake/replies", replies),
    requests: () => call("GET", "/_fake/requests"),
    close: () => proc.kill(),
  };
}

/** A temporary world: a workspace `ws` and the HOME and state folders of the agent. */
export function tempWorld(files = {}) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "cc-acp-")));
  const ws = path.join(root, "ws");
  for (const [rel, text] of Object.entries(files)) {
    const p = path.join(ws, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
  }
  fs.mkdirSync(ws, { recursive: true });
  fs.mkdirSync(path.join(root, "home"), { recursive: true });
  return {
    root,
    ws,
    env: {
      PATH: process.env.PATH,
      HOME: path.join(root, "home"),
      XDG_STATE_HOME: path.join(root, "state"),
      XDG_CONFIG_HOME: path.join(root, "config"),
      // Tests script every reply; memory extraction would take one.
      CLAUDE_CONTEXT_AUTO_MEMORY: "0",
    },
    cleanup: () => fs.rmSync(root, { recursive: true, force: true }),
  };
}

/** `claude-context acp` in `world`, talking to `fake`. */
export function startAgent(
  world,
  fake,
  { args = [], env = {}, command = BIN, argv = ["acp", "--no-git", ...args] } = {},
) {
  const proc = spawn(command, argv, {
    cwd: world.ws,
    env: {
      ...world.env,
      ANTHROPIC_API_KEY: "sk-ant-api03-test-key-0123456789abcdefghij",
      ANTHROPIC_BASE_URL: fake?.baseUrl ?? "http://127.0.0.1:9",
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  proc.stderrText = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (d) => (proc.stderrText += d));
  // "close", not "exit": the exit code once everything the agent wrote to stdout and stderr has
  // been read ("exit" may come first, and a test reading stderrText then missed its last lines).
  proc.exited = new Promise((resolve) => proc.on("close", (code) => resolve(code)));
  return proc;
}

/**
 * An ACP client over the SDK's app API; `permission(params)` picks an option kind, `cancelled`,
 * or `hold` (no answer until the agent cancels the request).
 */
export class TestClient {
  constructor({ buffers = {}, permission = () => "allow_once", fsCaps = true } = {}) {
    this.buffers = new Map(Object.entries(buffers));
    this.permission = permission;
    this.fsCaps = fsCaps;
    this.updates = [];
    this.permissions = [];
    /** Permission prompts held open ("hold") that the agent's `$/cancel_request` closed. */
    this.closed = [];
    this.reads = [];
    this.writes = [];
    this.waiters = [];
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  /**
   * Waits until `pred()` holds (checked after every message, and every `pollMs` when given), or
   * fails after `ms`.
   */
  until(pred, what, ms = 60000, pollMs = 0) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const v = pred();
        if (v) {
          this.waiters = this.waiters.filter((w) => w !== check);
          clearTimeout(timer);
          clearInterval(poll);
          resolve(v);
        }
      };
      // A condition no message changes (a file the agent writes) is polled as well.
      const poll = pollMs > 0 ? setInterval(check, pollMs) : null;
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        clearInterval(poll);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      this.waiters.push(check);
      check();
    });
  }

  app() {
    const m = acp.methods.client;
    return acp
      .client({ name: "claude-context-tests" })
      .onNotification(m.session.update, ({ params }) => {
        this.updates.push(params);
        this.wake();
      })
      .onRequest(m.session.requestPermission, ({ params, signal }) => {
        this.permissions.push(params);
        this.wake();
        const kind = this.permission(params);
        if (kind === "cancelled") return { outcome: { outcome: "cancelled" } };
        if (kind === "hold") {
          // A person who has not answered yet: the prompt stays open until the agent gives the
          // request up (`$/cancel_request`), then closes with the `cancelled` outcome.
          return new Promise((resolve) => {
            const close = () => {
              this.closed.push({ params, reason: signal.reason });
              this.wake();
              resolve({ outcome: { outcome: "cancelled" } });
            };
            if (signal.aborted) close();
            else signal.addEventListener("abort", close, { once: true });
          });
        }
        const option = params.options.find((o) => o.kind === kind);
        return { outcome: { outcome: "selected", optionId: option.optionId } };
      })
      .onRequest(m.fs.readTextFile, ({ params }) => {
        this.reads.push(params);
        if (this.buffers.has(params.path)) return { content: this.buffers.get(params.path) };
        try {
          return { content: fs.readFileSync(params.path, "utf8") };
        } catch (e) {
          throw acp.RequestError.resourceNotFound(params.path);
        }
      })
      .onRequest(m.fs.writeTextFile, ({ params }) => {
        // The client holds the file: the write lands in its buffer, the disk is left alone.
        this.writes.push(params);
        this.buffers.set(params.path, params.content);
        this.wake();
        return {};
      });
  }

  /** Connects to a started agent; returns the SDK's context for calling it. */
  connect(proc) {
    const stream = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
    this.conn = this.app().connect(stream);
    return this.conn.agent;
  }

  async initialize(agent) {
    return agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: this.fsCaps, writeTextFile: this.fsCaps },
        terminal: false,
      },
      clientInfo: { name: "claude-context-tests", version: "1" },
    });
  }

  /** The updates of `sessionId`, as their `update` objects. */
  of(sessionId) {
    return this.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
  }
}

/** The text of every agent message chunk of `updates`, joined. */
export function answerText(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
    .map((u) => u.content.text)
    .join("");
}

export const methods = acp.methods;
export { acp };
