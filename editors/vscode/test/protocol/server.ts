// Starts the real server (`claude-context lsp`) on a git workspace with the fake Anthropic API,
// connected through vscode-jsonrpc: the same `Conn` the extension's client layer uses.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { initializationOptions } from '../../src/core/trust';

export const repo = path.resolve(process.cwd(), '../..');
export const binary = process.env.CLAUDE_CONTEXT_BIN ?? path.join(repo, 'target/release/claude-context');
export const fakeBinary = process.env.FAKE_ANTHROPIC ?? path.join(repo, 'target/release/fake-anthropic');

export function missing(): string | null {
  if (!fs.existsSync(binary)) return `${binary} not found (cargo build --release)`;
  if (!fs.existsSync(fakeBinary)) return `${fakeBinary} not found (cargo build --release -p fake-anthropic)`;
  return null;
}

export interface Fake {
  baseUrl: string;
  queue(replies: unknown): Promise<void>;
  requests(): Promise<{ body: any; headers: Record<string, string> }[]>;
  stop(): void;
}

export async function startFake(): Promise<Fake> {
  const child = spawn(fakeBinary, ['--watch-stdin'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (c) => reject(new Error(`fake-anthropic exited ${c}`)));
  });
  const { baseUrl } = JSON.parse(line);
  return {
    baseUrl,
    async queue(replies) {
      const r = await fetch(`${baseUrl}/_fake/replies`, {
        method: 'POST',
        body: JSON.stringify(replies),
        headers: { 'content-type': 'application/json' },
      });
      if (!r.ok) throw new Error(`queue: ${r.status} ${await r.text()}`);
    },
    async requests() {
      return (await fetch(`${baseUrl}/_fake/requests`)).json();
    },
    stop() {
      child.stdin.end();
      child.kill();
    },
  };
}

/** The temporary folders this test process made: removed when it exits (a passing run leaves nothing in /tmp). */
const made: string[] = [];
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A new temporary folder (`prefix` then random characters), removed when the test process exits. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function workspace(): string {
  const dir = tempDir('cc-proto-ws-');
  const w = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  };
  w('CLAUDE.md', '# Shop\n\nUse pnpm.\n');
  w('.claude/rules/typescript.md', '---\npaths:\n  - "src/**/*.ts"\n---\nTypeScript: strict mode.\n');
  w('src/cart.ts', 'export const cart = 1;\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@e.x', '-c', 'user.name=t', ...args], { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-qm', 'init');
  return fs.realpathSync(dir);
}

export interface Server {
  conn: MessageConnection;
  child: ChildProcess;
  initializeResult: any;
  /** `workspace/applyEdit` requests the server sent (answered applied). */
  edits: any[];
  logs: string[];
  folder: string;
  home: string;
  open(rel: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * `claude-context lsp` as the extension starts it. `trusted`: VS Code's workspace trust, sent as
 * the extension sends it (`initializationOptions`, beside the settings); default a trusted
 * workspace.
 */
export async function startServer(opts: {
  folder: string;
  home?: string;
  env?: Record<string, string | undefined>;
  settings?: object;
  trusted?: boolean;
}): Promise<Server> {
  const home = opts.home ?? tempDir('cc-proto-home-');
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({
    ...process.env,
    HOME: home,
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    CLAUDE_CONTEXT_AUTO_MEMORY: '0',
    CLAUDE_CONTEXT_MANAGED_DIR: path.join(home, 'managed'),
    ANTHROPIC_AUTH_TOKEN: undefined,
    ...opts.env,
  })) {
    if (v !== undefined) env[k] = v;
  }
  const child = spawn(binary, ['lsp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const logs: string[] = [];
  child.stderr.on('data', (d) => logs.push(String(d)));
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const edits: any[] = [];
  const settings = { chat: { autoMemory: false }, ...(opts.settings ?? {}) };
  conn.onRequest('workspace/configuration', (p: any) => p.items.map(() => settings));
  conn.onRequest('client/registerCapability', () => null);
  conn.onRequest('client/unregisterCapability', () => null);
  conn.onRequest('window/workDoneProgress/create', () => null);
  conn.onRequest('workspace/applyEdit', (p: any) => {
    edits.push(p);
    return { applied: true };
  });
  conn.onNotification('window/logMessage', (p: any) => void logs.push(p.message));
  conn.onNotification('window/showMessage', (p: any) => void logs.push(`showMessage: ${p.message}`));
  conn.listen();
  const uri = (rel: string) => `file://${path.join(opts.folder, rel)}`;
  const initializeResult = await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: `file://${opts.folder}`,
    workspaceFolders: [{ uri: `file://${opts.folder}`, name: path.basename(opts.folder) }],
    capabilities: {
      workspace: {
        applyEdit: true,
        configuration: true,
        workspaceFolders: true,
        didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true },
      },
      window: { workDoneProgress: true },
      general: { positionEncodings: ['utf-16'] },
    },
    initializationOptions: initializationOptions(settings, opts.trusted ?? true),
  });
  await conn.sendNotification('initialized', {});
  let version = 0;
  return {
    conn,
    child,
    initializeResult,
    edits,
    logs,
    folder: opts.folder,
    home,
    async open(rel) {
      const u = uri(rel);
      await conn.sendNotification('textDocument/didOpen', {
        textDocument: {
          uri: u,
          languageId: 'typescript',
          version: ++version,
          text: fs.readFileSync(path.join(opts.folder, rel), 'utf8'),
        },
      });
      return u;
    },
    async stop() {
      if (child.exitCode === null) {
        try {
          await Promise.race([conn.sendRequest('shutdown', null), new Promise((r) => setTimeout(r, 5000))]);
          await conn.sendNotification('exit');
        } catch {
          // already gone
        }
      }
      conn.dispose();
      await new Promise((r) =>
        child.exitCode !== null
          ? r(null)
          : (child.once('exit', r), setTimeout(() => (child.kill('SIGKILL'), r(null)), 3000)),
      );
    },
  };
}

export const silentLog = {
  lines: [] as string[],
  info(m: string) {
    this.lines.push(`info ${m}`);
  },
  warn(m: string) {
    this.lines.push(`warn ${m}`);
  },
  error(m: string) {
    this.lines.push(`error ${m}`);
  },
};

export async function until<T>(
  f: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeout = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
