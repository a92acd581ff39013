// Finds the server: the `claudeContext.server.path` setting, then the binary bundled in the
// extension, then `claude-context` on PATH. Each candidate must answer `--version` as
// `claude-context …`; otherwise the caller gets a message that names the fix.
// No `vscode` import: the protocol tests use it too.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export type Found = { ok: true; path: string; source: 'setting' | 'bundled' | 'PATH'; version: string };
export type NotFound = { ok: false; message: string };

const BINARY = process.platform === 'win32' ? 'claude-context.exe' : 'claude-context';

function version(file: string): Promise<{ ok: true; version: string } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    execFile(file, ['--version'], { timeout: 10_000, maxBuffer: 64 * 1024 }, (err, stdout) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return resolve({ ok: false, why: 'it does not exist' });
        if (code === 'EACCES') return resolve({ ok: false, why: 'it is not executable' });
        return resolve({ ok: false, why: `running it with --version failed (${err.message.split('\n')[0]})` });
      }
      const out = stdout.trim();
      if (!/^claude-context \S+/.test(out)) {
        return resolve({
          ok: false,
          why: `it is not claude-context (--version printed ${JSON.stringify(out.slice(0, 80))})`,
        });
      }
      resolve({ ok: true, version: out.split(/\s+/)[1] });
    });
  });
}

function onPath(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, BINARY);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

export async function findServer(
  setting: string | null | undefined,
  extensionPath: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Found | NotFound> {
  if (setting && setting.trim()) {
    const file = setting.replace(/^~(?=\/)/, env.HOME ?? '~');
    const v = await version(file);
    if (v.ok) return { ok: true, path: file, source: 'setting', version: v.version };
    return {
      ok: false,
      message: `claudeContext.server.path is ${file}, but ${v.why}. Set it to the claude-context binary, or clear it to use the one bundled with the extension.`,
    };
  }
  const bundled = path.join(extensionPath, 'server', BINARY);
  if (fs.existsSync(bundled)) {
    const v = await version(bundled);
    if (v.ok) return { ok: true, path: bundled, source: 'bundled', version: v.version };
    return {
      ok: false,
      message: `The claude-context binary bundled with the extension (${bundled}) cannot run: ${v.why}. Reinstall the extension for this platform, or set claudeContext.server.path to a claude-context binary.`,
    };
  }
  const found = onPath(env);
  if (found) {
    const v = await version(found);
    if (v.ok) return { ok: true, path: found, source: 'PATH', version: v.version };
    return {
      ok: false,
      message: `${found} (found on PATH) cannot be used: ${v.why}. Set claudeContext.server.path to a claude-context binary.`,
    };
  }
  return {
    ok: false,
    message:
      'claude-context was not found: this extension has no bundled binary for this platform and none is on PATH. Install it (cargo install --locked --path server in the repository) or set claudeContext.server.path to the binary.',
  };
}
