// Protocol tests: the extension's client layer (ChatController, the generated types, the schema
// checks) against the real server and the fake Anthropic API.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { ChatController } from '../../src/core/chat';
import { answerText, type ChatItem, type ChatState } from '../../src/core/chatModel';
import { check } from '../../src/core/validate';
import { fromPreview } from '../../src/core/meter';
import { permissionWords } from '../../src/core/permission';
import { previewTree } from '../../src/core/previewTree';
import { ContextPreview, METHODS } from '../../src/protocol/generated';
import {
  missing,
  repo,
  silentLog,
  startFake,
  startServer,
  tempDir,
  until,
  workspace,
  type Fake,
  type Server,
} from './server';

const why = missing();
const required = process.env.CI === 'true' || process.env.CLAUDE_CONTEXT_E2E === '1';
const opts = { timeout: 60_000, skip: !required && why ? why : false };

const items = <K extends ChatItem['kind']>(s: ChatState, kind: K) =>
  s.items.filter((i): i is Extract<ChatItem, { kind: K }> => i.kind === kind);

async function setup(
  env: Record<string, string | undefined> = {},
): Promise<{ fake: Fake; server: Server; chat: ChatController; asked: string[] }> {
  if (why) throw new Error(why);
  const fake = await startFake();
  const folder = workspace();
  const server = await startServer({
    folder,
    env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: 'sk-ant-fake-proto', ...env },
  });
  const asked: string[] = [];
  const chat = new ChatController(server.conn, silentLog, { permissionAsked: (a) => asked.push(a.key) });
  chat.attach();
  return { fake, server, chat, asked };
}

async function teardown(t: { fake: Fake; server: Server; chat: ChatController }) {
  t.chat.dispose();
  await t.server.stop();
  t.fake.stop();
}

test('initialize: the server advertises every client → server method we have a type for', opts, async () => {
  const t = await setup();
  try {
    const advertised: string[] = t.server.initializeResult.capabilities.experimental.claudeContext.methods;
    const ours = METHODS.filter((m) => m.direction === 'clientToServer').map((m) => m.method);
    for (const m of ours) assert.ok(advertised.includes(m), `${m} advertised (${advertised.join(', ')})`);
  } finally {
    await teardown(t);
  }
});

test(
  'context/preview of an open file: fits the schema, the rule attaches, the tree and meter read it',
  opts,
  async () => {
    const t = await setup();
    try {
      const uri = await t.server.open('src/cart.ts');
      const r = await t.server.conn.sendRequest(ContextPreview.type, { textDocument: { uri } });
      const c = check(ContextPreview.resultSchema, r);
      assert.ok(c.ok, c.ok ? '' : c.error);
      const rule = r.files.find((f) => f.path.endsWith('typescript.md'))!;
      assert.equal(rule.status, 'attached');
      const tree = previewTree(r);
      assert.ok(JSON.stringify(tree).includes('typescript.md now applies (because of cart.ts)'));
      assert.match(fromPreview(r, 'x').text, /^[\d,]+ \/ 1M$/);
    } finally {
      await teardown(t);
    }
  },
);

test(
  'a chat turn: streamed text, a permission answered from the card, the edit, realistic usage, resume',
  opts,
  async () => {
    const t = await setup();
    try {
      const uri = await t.server.open('src/cart.ts');
      const file = `${t.server.folder}/src/cart.ts`;
      await t.fake.queue([
        {
          text: 'Changing it now.',
          piece: 3,
          toolUses: [
            {
              id: 'toolu_p1',
              name: 'Edit',
              input: { file_path: file, old_string: 'cart = 1', new_string: 'cart = 2' },
            },
          ],
        },
        { text: 'Done.' },
      ]);
      const turn = await t.chat.send('Set cart to 2', [uri]);
      assert.match(turn ?? '', /^turn-/);
      const card = await until(
        () => items(t.chat.state, 'permission').find((p) => p.state === 'open'),
        'the permission card',
      );
      assert.equal(card.tool, 'Edit');
      assert.match(card.sessionScope ?? '', /Edit/);
      assert.deepEqual(t.asked, [card.key]);
      assert.ok(t.chat.decide(card.key, 'allow'));
      await until(() => !t.chat.state.running, 'the end of the turn');
      const s = t.chat.state;
      assert.deepEqual(
        s.items.map((i) => i.kind),
        ['user', 'attachment', 'assistant', 'tool', 'permission', 'assistant'],
      );
      assert.deepEqual(items(s, 'assistant').map(answerText), ['Changing it now.', 'Done.']);
      assert.equal(items(s, 'tool')[0].result?.isError, false);
      assert.match(items(s, 'attachment')[0].path, /typescript\.md$/);
      assert.equal(t.server.edits.length, 1, 'the edit went to the editor as workspace/applyEdit');
      assert.ok(s.usage && s.usage.contextTokens > 1000 && s.usage.window === 1000000, JSON.stringify(s.usage));
      assert.equal(fs.readFileSync(file, 'utf8'), 'export const cart = 1;\n', 'the disk is untouched');

      // A second controller (a reloaded VS Code) resumes the same conversation.
      const again = new ChatController(t.server.conn, silentLog);
      await again.resume(s.sessionId!);
      assert.deepEqual(
        again.state.items
          .filter((i) => i.kind === 'user' || i.kind === 'assistant')
          .map((i) => (i.kind === 'user' ? i.text : answerText(i as any))),
        ['Set cart to 2', 'Changing it now.', 'Done.'],
      );
    } finally {
      await teardown(t);
    }
  },
);

test(
  "a project's hooks: the guard's denial is a hook item after the call; the preview lists the hooks and runs them only on request",
  opts,
  async () => {
    if (why) throw new Error(why);
    const fake = await startFake();
    const folder = workspace();
    fs.writeFileSync(
      path.join(folder, '.claude/settings.json'),
      JSON.stringify({
        hooks: {
          SessionStart: [{ hooks: [{ type: 'command', command: 'echo SPRINT-42' }] }],
          PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo "no rm here" >&2; exit 2' }] }],
        },
      }),
    );
    // The folder is trusted, as Claude Code records it.
    const home = tempDir('cc-proto-home-');
    fs.writeFileSync(
      path.join(home, '.claude.json'),
      JSON.stringify({ projects: { [folder]: { hasTrustDialogAccepted: true } } }),
    );
    const server = await startServer({
      folder,
      home,
      env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: 'sk-ant-fake-proto' },
    });
    const chat = new ChatController(server.conn, silentLog);
    chat.attach();
    try {
      const uri = await server.open('src/cart.ts');
      const listed = await server.conn.sendRequest(ContextPreview.type, { textDocument: { uri } });
      assert.ok(check(ContextPreview.resultSchema, listed).ok);
      assert.deepEqual(
        listed.hooks?.hooks.map((h) => [h.event, h.status, h.command]),
        [
          ['SessionStart', 'runs', 'echo SPRINT-42'],
          ['PreToolUse', 'runs', 'echo "no rm here" >&2; exit 2'],
        ],
      );
      assert.equal(listed.hooks?.run, undefined, 'never run unasked');
      const ran = await server.conn.sendRequest(ContextPreview.type, { textDocument: { uri }, runHooks: true });
      assert.ok(check(ContextPreview.resultSchema, ran).ok);
      assert.equal(ran.hooks?.run?.texts[0].text, 'SessionStart:startup hook success: SPRINT-42');
      assert.ok(JSON.stringify(previewTree(ran)).includes("One run's output"));

      await fake.queue([
        { toolUses: [{ id: 'toolu_rm', name: 'Bash', input: { command: 'rm -rf build' } }] },
        { text: 'Not deleted.' },
      ]);
      await chat.send('Clean the build', []);
      await until(() => !chat.state.running, 'the end of the turn');
      const kinds = chat.state.items.map((i) => i.kind);
      assert.ok(kinds.includes('hook'), kinds.join(', '));
      const denied = items(chat.state, 'hook').find((h) => h.event === 'PreToolUse')!;
      assert.equal(denied.outcome, 'denied');
      assert.equal(denied.text, 'PreToolUse:Bash hook error: [echo "no rm here" >&2; exit 2]: no rm here\n');
      assert.equal(items(chat.state, 'tool')[0].result?.isError, true);
    } finally {
      chat.dispose();
      await server.stop();
      fake.stop();
    }
  },
);

test('stop while a permission is open: the server cancels the prompt and the card closes', opts, async () => {
  const t = await setup();
  try {
    await t.fake.queue([
      { text: 'Running it.', toolUses: [{ id: 'toolu_b', name: 'Bash', input: { command: 'echo hi' } }] },
    ]);
    await t.chat.send('run echo');
    const card = await until(() => items(t.chat.state, 'permission').find((p) => p.state === 'open'), 'the card');
    assert.match(card.sessionScope ?? '', /echo hi/);
    assert.equal(await t.chat.cancel(), true);
    await until(() => !t.chat.state.running, 'the end of the turn');
    assert.equal(items(t.chat.state, 'permission')[0].state, 'cancelled');
    assert.equal(t.chat.isPending(card.key), false);
    assert.equal(t.chat.decide(card.key, 'allow'), false, 'a late click does nothing');
  } finally {
    await teardown(t);
  }
});

test(
  'a Write of a file that makes programs run code: the card carries the warning and no session choice',
  opts,
  async () => {
    const t = await setup();
    try {
      await t.fake.queue([
        {
          text: 'Adding it.',
          toolUses: [{ id: 'toolu_g', name: 'Write', input: { file_path: '.gitattributes', content: '* filter=x\n' } }],
        },
        { text: 'Done.' },
      ]);
      await t.chat.send('add a filter');
      const card = await until(() => items(t.chat.state, 'permission').find((p) => p.state === 'open'), 'the card');
      assert.equal(card.sessionScope, undefined, 'such a change can only be allowed once');
      assert.match(card.warning ?? '', /run/);
      assert.ok(t.chat.decide(card.key, 'deny'));
      await until(() => !t.chat.state.running, 'the end of the turn');
    } finally {
      await teardown(t);
    }
  },
);

test("an API error shows the API's own message; retry sends the prompt again and completes", opts, async () => {
  const t = await setup();
  try {
    await t.fake.queue([
      {
        status: 400,
        error: { type: 'invalid_request_error', message: 'prompt is too long: 250000 tokens > 200000 maximum' },
      },
      { text: 'Fine now.' },
    ]);
    await t.chat.send('hello');
    await until(() => !t.chat.state.running, 'the end of the turn');
    const err = items(t.chat.state, 'error')[0];
    assert.match(err.message, /prompt is too long: 250000 tokens > 200000 maximum/);
    assert.equal(err.retryText, 'hello');
    await t.chat.send(err.retryText);
    await until(() => !t.chat.state.running, 'the retried turn');
    assert.equal(answerText(items(t.chat.state, 'assistant').at(-1)!), 'Fine now.');
  } finally {
    await teardown(t);
  }
});

test('a 529 is retried: the notice is transient and the answer arrives', opts, async () => {
  const t = await setup();
  try {
    await t.fake.queue([{ status: 529 }, { text: 'Here.' }]);
    const seen: string[] = [];
    t.chat.subscribe((u) => {
      if (u.kind === 'action' && t.chat.state.retry) seen.push(t.chat.state.retry.errorKind);
    });
    await t.chat.send('hi');
    await until(() => !t.chat.state.running, 'the end of the turn');
    assert.ok(seen.includes('overloaded'), `a retry notice was shown (${seen.join(', ')})`);
    assert.equal(t.chat.state.retry, null);
    assert.deepEqual(
      t.chat.state.items.map((i) => i.kind),
      ['user', 'assistant'],
    );
  } finally {
    await teardown(t);
  }
});

test('no API key: the chat says which variable to set', opts, async () => {
  const t = await setup({ ANTHROPIC_API_KEY: undefined });
  try {
    await t.chat.send('hi');
    await until(() => !t.chat.state.running && items(t.chat.state, 'error').length, 'the error');
    assert.match(items(t.chat.state, 'error')[0].message, /ANTHROPIC_API_KEY/);
  } finally {
    await teardown(t);
  }
});

test('the server crashes: a new one resumes the session from its transcript', opts, async () => {
  const t = await setup();
  try {
    await t.fake.queue([{ text: 'First answer.' }, { text: 'Never finished', paceMs: 200, piece: 2 }]);
    await t.chat.send('one');
    await until(() => !t.chat.state.running, 'the first turn');
    await t.chat.send('two');
    await until(() => items(t.chat.state, 'assistant').length === 2, 'the second answer streaming');
    t.server.child.kill('SIGKILL');
    await new Promise((r) => t.server.child.once('exit', r));
    const second = await startServer({
      folder: t.server.folder,
      home: t.server.home,
      env: { ANTHROPIC_BASE_URL: t.fake.baseUrl, ANTHROPIC_API_KEY: 'k' },
    });
    try {
      t.chat.attach(second.conn);
      await t.chat.serverRestarted();
      const s = t.chat.state;
      assert.equal(s.running, null);
      assert.deepEqual(
        items(s, 'user').map((u) => u.text),
        ['one', 'two'],
      );
      assert.equal(answerText(items(s, 'assistant')[0]), 'First answer.');
      assert.match(items(s, 'notice').at(-1)!.text, /resumed/);
      await t.fake.queue([{ text: 'Back.' }]);
      await t.chat.send('three');
      await until(() => !t.chat.state.running, 'a turn after the restart');
      assert.equal(answerText(items(t.chat.state, 'assistant').at(-1)!), 'Back.');
    } finally {
      await second.stop();
    }
  } finally {
    t.chat.dispose();
    t.fake.stop();
  }
});

test(
  'compaction: a dry run says what would go and changes nothing; a micro run clears; "would not reduce" said as such',
  opts,
  async () => {
    const { compactSummary, dryRunReport } = await import('../../src/core/compactReport');
    if (why) throw new Error(why);
    const fake = await startFake();
    const folder = workspace();
    const server = await startServer({
      folder,
      env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: 'k' },
      settings: { compaction: { keepRecent: 1 } },
    });
    const chat = new ChatController(server.conn, silentLog);
    chat.attach();
    try {
      await chat.newSession();
      const nothing = await chat.compact({ mode: 'micro', dryRun: true });
      assert.match(dryRunReport(nothing), /would not reduce/);
      const big = 'x'.repeat(6000);
      fs.writeFileSync(`${folder}/big.txt`, big);
      await fake.queue([
        { toolUses: [{ id: 'toolu_r1', name: 'Read', input: { file_path: `${folder}/big.txt` } }] },
        { text: 'Read it.' },
        { toolUses: [{ id: 'toolu_r2', name: 'Read', input: { file_path: `${folder}/src/cart.ts` } }] },
        { text: 'Read that too.' },
      ]);
      await chat.send('read big.txt');
      await until(() => !chat.state.running, 'turn 1');
      await chat.send('read cart.ts');
      await until(() => !chat.state.running, 'turn 2');
      const dry = await chat.compact({ mode: 'micro', dryRun: true });
      assert.equal(dry.dryRun, true);
      assert.deepEqual(
        dry.cleared.map((c) => c.toolUseId),
        ['toolu_r1'],
      );
      assert.ok(dry.tokensAfter < dry.tokensBefore, JSON.stringify(dry));
      const report = dryRunReport(dry);
      assert.match(report, /\| Read \| toolu_r1 \|/);
      assert.match(report, /saves: [\d,]+ tokens/);
      assert.match(compactSummary(dry), /^1 old tool result would be cleared: [\d,]+ → [\d,]+ tokens\.$/);
      const again = await chat.compact({ mode: 'micro', dryRun: true });
      assert.deepEqual(
        again.cleared.map((c) => c.toolUseId),
        ['toolu_r1'],
        'the dry run changed nothing',
      );
      const ran = await chat.compact({ mode: 'micro' });
      assert.equal(ran.dryRun, false);
      assert.match(compactSummary(ran), /^1 old tool result cleared/);
      const after = await chat.compact({ mode: 'micro', dryRun: true });
      assert.match(dryRunReport(after), /would not reduce/);
    } finally {
      chat.dispose();
      await server.stop();
      fake.stop();
    }
  },
);

/** The PYTHONPATH under which python3 imports PyPI `mcp` ('' : its own), or undefined. */
function pythonMcp(): string | undefined {
  const cache = path.join(
    process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
    'claude-context-ci',
    'python-mcp',
  );
  for (const p of ['', cache]) {
    const r = spawnSync('python3', ['-c', 'import mcp'], {
      env: { ...process.env, ...(p ? { PYTHONPATH: p } : {}) },
      stdio: 'ignore',
    });
    if (r.status === 0) return p;
  }
  return undefined;
}

const pythonpath = pythonMcp();
test(
  "a project's MCP server: asked in Claude Code's words before the first request, remembered",
  {
    ...opts,
    skip:
      opts.skip ||
      (pythonpath === undefined
        ? 'needs python3 with PyPI mcp (installed by .ci/run into the CI cache folder)'
        : false),
  },
  async () => {
    // The first request waits for the server however long Python takes to start (a loaded machine).
    const t = await setup({ MCP_CONNECTION_NONBLOCKING: '0' });
    try {
      const demo = path.join(repo, 'tests/data/mcp/demo_server.py');
      assert.ok(fs.existsSync(demo), demo);
      const entry = { command: 'python3', args: [demo], ...(pythonpath ? { env: { PYTHONPATH: pythonpath } } : {}) };
      fs.writeFileSync(`${t.server.folder}/.mcp.json`, JSON.stringify({ mcpServers: { demo: entry } }));
      await t.fake.queue([{ text: 'Ready.' }]);
      await t.chat.send('hello', []);
      const card = await until(
        () => items(t.chat.state, 'permission').find((p) => p.state === 'open'),
        'the server question',
      );
      assert.equal(card.tool, 'mcpServer');
      assert.equal((await t.fake.requests()).length, 0, 'the first request waits for the answer');
      assert.deepEqual(permissionWords(card), {
        title: 'New MCP server found in this project: demo',
        allow: 'Use this MCP server',
        allowSession: 'Use this and all future MCP servers in this project',
        deny: 'Continue without using this MCP server',
      });
      assert.match(card.warning ?? '', /MCP servers may execute code/);
      assert.ok(t.chat.decide(card.key, 'allow'));
      await until(() => !t.chat.state.running, 'the end of the turn');
      const settings = JSON.parse(fs.readFileSync(`${t.server.folder}/.claude/settings.local.json`, 'utf8'));
      assert.deepEqual(settings.enabledMcpjsonServers, ['demo']);
      const first = JSON.stringify((await t.fake.requests())[0].body);
      assert.ok(first.includes('mcp__demo__add'), "the model is told of the server's tools");
    } finally {
      await teardown(t);
    }
  },
);

test(
  'Restricted Mode: untrusted without a question, nothing of the repository starts; granting trust starts it',
  opts,
  async () => {
    if (why) throw new Error(why);
    const fake = await startFake();
    const folder = workspace();
    // A repository that approves its own server, committed: the server would leave a marker.
    const marker = path.join(folder, 'started');
    fs.writeFileSync(
      path.join(folder, '.mcp.json'),
      JSON.stringify({
        mcpServers: { evil: { command: 'sh', args: ['-c', `echo started >> '${marker}'; exec cat`] } },
      }),
    );
    fs.mkdirSync(path.join(folder, '.claude'), { recursive: true });
    fs.writeFileSync(path.join(folder, '.claude/settings.local.json'), '{"enableAllProjectMcpServers": true}');
    const server = await startServer({
      folder,
      trusted: false,
      env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: 'sk-ant-fake-proto' },
    });
    const asked: string[] = [];
    const chat = new ChatController(server.conn, silentLog, { permissionAsked: (a) => asked.push(a.key) });
    chat.attach();
    try {
      await fake.queue([{ text: 'Hi.' }]);
      await chat.send('hello', []);
      await until(() => !chat.state.running, 'the end of the turn');
      assert.deepEqual(items(chat.state, 'permission'), [], 'no question: VS Code answered');
      assert.ok(!fs.existsSync(marker), 'the repository ran before trust');
      const p: any = await server.conn.sendRequest(ContextPreview.type, {});
      assert.equal(p.trust.state, 'notTrusted');
      assert.equal(p.trust.source, 'editor');
      assert.equal(p.mcp.servers[0].status, 'not trusted');
      // Trust granted: the session starts the server, the preview follows.
      await server.conn.sendNotification('trust/changed', { trusted: true });
      await until(() => fs.existsSync(marker), 'the server starting once trusted');
      const q: any = await server.conn.sendRequest(ContextPreview.type, {});
      assert.equal(q.trust.state, 'trusted');
    } finally {
      chat.dispose();
      await server.stop();
      fake.stop();
    }
  },
);

test(
  'the permission mode: chosen before the session, switched with chat/setMode, plan refuses an edit',
  opts,
  async () => {
    const t = await setup();
    try {
      const file = `${t.server.folder}/src/cart.ts`;
      await t.fake.queue([
        {
          text: 'Planning.',
          toolUses: [
            {
              id: 'toolu_m1',
              name: 'Edit',
              input: { file_path: file, old_string: 'cart = 1', new_string: 'cart = 2' },
            },
          ],
        },
        { text: 'The plan.' },
      ]);
      // Chosen in the picker before there is a session: the session starts in it.
      assert.equal(await t.chat.setMode('acceptEdits'), true);
      await t.chat.newSession();
      assert.equal(t.chat.state.mode, 'acceptEdits');
      assert.ok(t.chat.state.modes.some((m) => m.id === 'plan'));
      // Switched: the server answers, then says so (chat/modeChanged); the picker follows.
      assert.equal(await t.chat.setMode('plan'), true);
      assert.equal(t.chat.state.mode, 'plan');
      assert.equal(await t.chat.setMode('bogus'), false, 'an unknown mode is refused');
      assert.equal(t.chat.state.mode, 'plan');
      await t.chat.send('Set cart to 2');
      await until(() => !t.chat.state.running, 'the end of the turn');
      const tool = items(t.chat.state, 'tool')[0];
      assert.equal(tool.result?.isError, true);
      assert.equal(tool.result?.content, `Cannot write to ${file} while in plan mode.`);
      assert.equal(items(t.chat.state, 'permission').length, 0, 'nobody was asked');
      assert.equal(fs.readFileSync(file, 'utf8'), 'export const cart = 1;\n');
    } finally {
      await teardown(t);
    }
  },
);
