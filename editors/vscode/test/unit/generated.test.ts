// The generated protocol types and settings stay in step with the server's schemas.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import * as P from '../../src/protocol/generated';

const root = process.cwd();
const schemas = path.resolve(root, '../../schemas');
const gen = (env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['scripts/gen.mjs', '--check'], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });

test('src/protocol/generated.ts and package.json settings match schemas/ (npm run gen)', () => {
  const r = gen();
  assert.equal(r.status, 0, r.stderr);
});

test('the check fails when a schema changes without regeneration', () => {
  for (const [file, edit] of [
    ['chat-send.params.schema.json', (s: any) => (s.properties.effort = { type: 'string' })],
    [
      'settings.schema.json',
      (s: any) => (s.properties.newSetting = { type: 'boolean', default: true, description: 'x' }),
    ],
  ] as const) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-schemas-'));
    try {
      for (const f of fs.readdirSync(schemas)) fs.copyFileSync(path.join(schemas, f), path.join(dir, f));
      const s = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
      edit(s);
      fs.writeFileSync(path.join(dir, file), JSON.stringify(s));
      const r = gen({ CLAUDE_CONTEXT_SCHEMAS: dir });
      assert.equal(r.status, 1, `${file}: ${r.stderr}`);
      assert.match(r.stderr, /out of date with \.\.\/\.\.\/schemas|run `npm run gen`/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('every schema has its typed method, with the right kind and direction', () => {
  const files = fs.readdirSync(schemas).filter((f) => f !== 'settings.schema.json');
  const methods = new Set(files.map((f) => f.replace(/\.(params|result)\.schema\.json$/, '').replace('-', '/')));
  assert.deepEqual(new Set(P.METHODS.map((m) => m.method)), methods);
  assert.equal(P.ContextPreview.type.method, 'context/preview');
  assert.equal(P.ChatSend.type.method, 'chat/send');
  assert.equal(P.ChatEvent.type.method, 'chat/event');
  const by = Object.fromEntries(P.METHODS.map((m) => [m.method, m]));
  assert.deepEqual(by['chat/event'], { method: 'chat/event', kind: 'notification', direction: 'serverToClient' });
  assert.deepEqual(by['context/changed'], {
    method: 'context/changed',
    kind: 'notification',
    direction: 'serverToClient',
  });
  assert.deepEqual(by['chat/permission'], { method: 'chat/permission', kind: 'request', direction: 'serverToClient' });
  assert.deepEqual(by['compact/run'], { method: 'compact/run', kind: 'request', direction: 'clientToServer' });
  // Types the code relies on, checked by the compiler when this file is bundled and typechecked.
  const e: P.ChatEvent.Params = {
    sessionId: 's',
    turnId: 't',
    kind: 'usage',
    inputTokens: 1,
    outputTokens: 1,
    cacheCreationInputTokens: 0,
    cacheReadInputTokens: 0,
    contextTokens: 2,
    window: 10,
    percent: 20,
  };
  assert.equal(e.kind, 'usage');
});

test('every setting of docs/protocol.md is contributed as claudeContext.*, the key-routing ones machine-scoped', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const props = pkg.contributes.configuration.properties as Record<string, { scope?: string; default?: unknown }>;
  const doc = fs.readFileSync(path.resolve(root, '../../docs/protocol.md'), 'utf8');
  const table = doc.slice(doc.indexOf('| setting | default |'));
  const keys = [...table.matchAll(/^\| `([a-zA-Z.]+)` \|/gm)].map((m) => m[1]);
  assert.ok(keys.length >= 20, `settings table found (${keys.length})`);
  for (const k of keys) assert.ok(props[`claudeContext.${k}`], `claudeContext.${k} contributed`);
  for (const k of ['chat.baseUrl', 'chat.keyVariable', 'memoryDir', 'server.path'])
    assert.equal(props[`claudeContext.${k}`].scope, 'machine', k);
  const machine = Object.entries(props)
    .filter(([, v]) => v.scope === 'machine')
    .map(([k]) => k)
    .sort();
  assert.deepEqual(machine, [
    'claudeContext.chat.baseUrl',
    'claudeContext.chat.keyVariable',
    'claudeContext.memoryDir',
    'claudeContext.server.path',
  ]);
  // Unset: the server uses the model's own window (1M for the default claude-opus-5-5).
  assert.equal(props['claudeContext.window'].default, null);
  assert.ok(!Object.keys(props).some((k) => /key$/i.test(k) && !k.endsWith('keyVariable')), 'no setting holds a key');
});
