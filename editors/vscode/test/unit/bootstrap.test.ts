// Finding the server: the setting, then the bundled binary, then PATH; a message naming the fix.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { after } from 'node:test';
import { findServer } from '../../src/bootstrap';

function script(dir: string, name: string, body: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const f = path.join(dir, name);
  fs.writeFileSync(f, `#!/bin/sh\n${body}\n`);
  fs.chmodSync(f, 0o755);
  return f;
}

const made: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-boot-'));
  made.push(dir);
  return dir;
};
after(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

test('the setting wins, then the bundled binary, then PATH', async () => {
  const d = tmp();
  const setting = script(path.join(d, 'custom'), 'claude-context', 'echo "claude-context 9.9.9"');
  const ext = path.join(d, 'ext');
  script(path.join(ext, 'server'), 'claude-context', 'echo "claude-context 1.0.0"');
  const onPath = path.join(d, 'bin');
  script(onPath, 'claude-context', 'echo "claude-context 0.5.0"');
  const env = { PATH: onPath };
  assert.deepEqual(await findServer(setting, ext, env), {
    ok: true,
    path: setting,
    source: 'setting',
    version: '9.9.9',
  });
  assert.deepEqual(await findServer(null, ext, env), {
    ok: true,
    path: path.join(ext, 'server', 'claude-context'),
    source: 'bundled',
    version: '1.0.0',
  });
  assert.deepEqual(await findServer('', path.join(d, 'no-ext'), env), {
    ok: true,
    path: path.join(onPath, 'claude-context'),
    source: 'PATH',
    version: '0.5.0',
  });
});

test('a wrong or missing binary gives a message that names the fix', async () => {
  const d = tmp();
  const wrong = script(d, 'not-it', 'echo "Python 3.11"');
  const r1 = await findServer(wrong, d, { PATH: '' });
  assert.equal(r1.ok, false);
  assert.match(
    !r1.ok ? r1.message : '',
    /claudeContext\.server\.path is .*not-it, but it is not claude-context \(--version printed "Python 3\.11"\)\. Set it to the claude-context binary/,
  );
  const r2 = await findServer(path.join(d, 'nope'), d, { PATH: '' });
  assert.match(!r2.ok ? r2.message : '', /but it does not exist/);
  const r3 = await findServer(undefined, d, { PATH: '' });
  assert.match(!r3.ok ? r3.message : '', /not found.*set claudeContext\.server\.path/);
  const failing = script(path.join(d, 'ext2', 'server'), 'claude-context', 'exit 3');
  const r4 = await findServer(undefined, path.join(d, 'ext2'), { PATH: '' });
  assert.match(
    !r4.ok ? r4.message : '',
    new RegExp(`bundled with the extension \\(${failing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\) cannot run`),
  );
});
