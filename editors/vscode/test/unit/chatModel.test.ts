// The chat reducer over every event kind and the orders the server sends them in.
import assert from 'node:assert/strict';
import test from 'node:test';
import {
  type ChatAction,
  type ChatItem,
  type ChatState,
  answerText,
  initialState,
  openPermissions,
  reduce,
} from '../../src/core/chatModel';
import type { ChatEvent } from '../../src/protocol/generated';

const S = 'sess-1';
const T = 'turn-1';
type Ev = ChatEvent.Params;
type Body = Ev extends infer E ? (E extends Ev ? Omit<E, 'sessionId' | 'turnId'> : never) : never;
const ev = (e: Body, turnId = T, sessionId = S): ChatAction => ({ type: 'event', event: { sessionId, turnId, ...e } });
const usage = {
  inputTokens: 12,
  outputTokens: 9,
  cacheCreationInputTokens: 0,
  cacheReadInputTokens: 1500,
  contextTokens: 1521,
  window: 200000,
  percent: 0.8,
};

function run(
  actions: ChatAction[],
  from: ChatState = reduce(initialState(), { type: 'reset', sessionId: S }),
): ChatState {
  return actions.reduce(reduce, from);
}
const kinds = (s: ChatState) => s.items.map((i) => i.kind);
const assistants = (s: ChatState) =>
  s.items.filter((i): i is Extract<ChatItem, { kind: 'assistant' }> => i.kind === 'assistant');

test('a subagent is one item: its tool calls nest under the Agent call, then its end and report', () => {
  const s = run([
    { type: 'userSend', text: 'review', mentions: [] },
    ev({
      kind: 'toolUse',
      id: 'toolu_a',
      name: 'Agent',
      input: { subagent_type: 'reviewer', description: 'review', prompt: 'p' },
    }),
    ev({
      kind: 'subagentStart',
      toolUseId: 'toolu_a',
      agentId: 'a1',
      agentType: 'reviewer',
      description: 'review',
      model: 'claude-sonnet-5-5',
    }),
    ev({
      kind: 'toolUse',
      id: 'toolu_r',
      name: 'Read',
      input: { file_path: '/w/README.md' },
      parentToolUseId: 'toolu_a',
    }),
    ev({ kind: 'toolResult', toolUseId: 'toolu_r', content: 'readme', isError: false, parentToolUseId: 'toolu_a' }),
    ev({ kind: 'subagentEnd', toolUseId: 'toolu_a', agentId: 'a1', outcome: 'completed', toolUses: 1, durationMs: 5 }),
    ev({ kind: 'toolResult', toolUseId: 'toolu_a', content: '[Subagent hand-back] …', isError: false }),
    ev({ kind: 'text', index: 0, text: 'Reviewed.' }),
    ev({ kind: 'done', outcome: 'completed' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'tool', 'assistant']);
  const tool = s.items[1] as Extract<ChatItem, { kind: 'tool' }>;
  assert.equal(tool.subagent?.state, 'completed');
  assert.equal(tool.subagent?.agentType, 'reviewer');
  assert.equal(tool.subagent?.toolUses, 1);
  assert.deepEqual(tool.children, [
    {
      toolUseId: 'toolu_r',
      name: 'Read',
      input: { file_path: '/w/README.md' },
      result: { content: 'readme', isError: false },
    },
  ]);
  assert.deepEqual(tool.result, { content: '[Subagent hand-back] …', isError: false });
});

test('a plain turn: user, streamed text, usage, done', () => {
  const s = run([
    { type: 'userSend', text: 'hi', mentions: [] },
    { type: 'sendAccepted', turnId: T },
    ev({ kind: 'text', index: 0, text: 'Hel' }),
    ev({ kind: 'text', index: 0, text: 'lo!' }),
    ev({ kind: 'usage', ...usage }),
    ev({ kind: 'done', outcome: 'completed', stopReason: 'end_turn' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'assistant']);
  assert.equal(answerText(assistants(s)[0]), 'Hello!');
  assert.equal(s.running, null);
  assert.deepEqual(s.usage, usage);
});

test('events before chat/send answered adopt the turn', () => {
  const s = run([{ type: 'userSend', text: 'hi', mentions: [] }, ev({ kind: 'text', index: 0, text: 'a' })]);
  assert.deepEqual(s.running, { turnId: T });
});

test('thinking and text blocks of one answer stay apart, by index', () => {
  const s = run([
    { type: 'userSend', text: 'q', mentions: [] },
    ev({ kind: 'thinking', index: 0, text: 'let me ' }),
    ev({ kind: 'thinking', index: 0, text: 'think' }),
    ev({ kind: 'text', index: 1, text: 'Answer' }),
  ]);
  const a = assistants(s)[0];
  assert.deepEqual(a.blocks, [
    { type: 'thinking', index: 0, text: 'let me think' },
    { type: 'text', index: 1, text: 'Answer' },
  ]);
});

test('tool calls: use then result, two answers around them, attachments between', () => {
  const s = run([
    { type: 'userSend', text: 'read it', mentions: [] },
    ev({ kind: 'attachment', path: '/w/.claude/rules/ts.md', trigger: '/w/src/a.ts', tokens: 31 }),
    ev({ kind: 'text', index: 0, text: 'Reading.' }),
    ev({ kind: 'toolUse', id: 'toolu_1', name: 'Read', input: { file_path: '/w/src/a.ts' } }),
    ev({ kind: 'usage', ...usage }),
    ev({ kind: 'toolResult', toolUseId: 'toolu_1', content: '1\tx', isError: false }),
    ev({ kind: 'attachment', path: '/w/src/CLAUDE.md', trigger: '/w/src/a.ts', tokens: 5 }),
    ev({ kind: 'text', index: 0, text: 'It is x.' }),
    ev({ kind: 'done', outcome: 'completed' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'attachment', 'assistant', 'tool', 'attachment', 'assistant']);
  const tool = s.items[3] as Extract<ChatItem, { kind: 'tool' }>;
  assert.deepEqual(tool.result, { content: '1\tx', isError: false });
  assert.deepEqual(assistants(s).map(answerText), ['Reading.', 'It is x.']);
});

test('a retry notice is transient: the next text clears it, nothing is added to the log', () => {
  const before = run([
    { type: 'userSend', text: 'q', mentions: [] },
    { type: 'sendAccepted', turnId: T },
  ]);
  const retrying = run(
    [
      ev({
        kind: 'error',
        message: '529 overloaded_error: Overloaded',
        errorKind: 'overloaded',
        retry: { attempt: 2, of: 5, delayMs: 640 },
      }),
    ],
    before,
  );
  assert.equal(retrying.retry?.attempt, 2);
  assert.deepEqual(kinds(retrying), ['user']);
  const after = run([ev({ kind: 'text', index: 0, text: 'ok' })], retrying);
  assert.equal(after.retry, null);
  const done = run(
    [
      ev({ kind: 'error', message: 'x', errorKind: 'server', retry: { attempt: 3, of: 5, delayMs: 1 } }),
      ev({ kind: 'done', outcome: 'completed' }),
    ],
    after,
  );
  assert.equal(done.retry, null);
});

test('restart discards the partial answer (text and tool calls of it) and renders the one that follows', () => {
  const s = run([
    { type: 'userSend', text: 'q', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'The first ans' }),
    ev({
      kind: 'error',
      message: 'stream cut',
      errorKind: 'connection',
      restart: true,
      retry: { attempt: 2, of: 5, delayMs: 100 },
    }),
    ev({ kind: 'text', index: 0, text: 'The whole answer.' }),
    ev({ kind: 'done', outcome: 'completed' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'assistant']);
  assert.equal(answerText(assistants(s)[0]), 'The whole answer.');
});

test('restart after a completed tool round keeps that round', () => {
  const s = run([
    { type: 'userSend', text: 'q', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'Reading.' }),
    ev({ kind: 'toolUse', id: 't1', name: 'Read', input: {} }),
    ev({ kind: 'usage', ...usage }),
    ev({ kind: 'toolResult', toolUseId: 't1', content: 'x', isError: false }),
    ev({ kind: 'text', index: 0, text: 'partial' }),
    ev({ kind: 'error', message: 'cut', errorKind: 'connection', restart: true }),
    ev({ kind: 'text', index: 0, text: 'Final.' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'assistant', 'tool', 'assistant']);
  assert.deepEqual(assistants(s).map(answerText), ['Reading.', 'Final.']);
});

test('an error without retry shows the API message with the prompt to retry; failed done adds nothing more', () => {
  const s = run([
    { type: 'userSend', text: 'do it', mentions: [] },
    ev({ kind: 'error', message: 'invalid_request_error: prompt is too long', errorKind: 'rejected', status: 400 }),
    ev({ kind: 'done', outcome: 'failed' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'error']);
  const e = s.items[1] as Extract<ChatItem, { kind: 'error' }>;
  assert.equal(e.message, 'invalid_request_error: prompt is too long');
  assert.equal(e.status, 400);
  assert.equal(e.retryText, 'do it');
  assert.equal(s.running, null);
});

test('a failed done without an error event still says the turn failed', () => {
  const s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'par' }),
    ev({ kind: 'done', outcome: 'failed' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'assistant', 'error']);
  assert.equal(assistants(s)[0].ended, 'failed');
});

test('cancel: the partial answer stays, marked; open permission cards close', () => {
  const s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'Working on' }),
    {
      type: 'permissionOpen',
      key: 'p1',
      params: {
        sessionId: S,
        tool: 'Bash',
        input: { command: 'ls' },
        summary: 'Bash: ls',
        sessionScope: 'this exact command for this session: ls',
      },
    },
    ev({ kind: 'done', outcome: 'cancelled' }),
  ]);
  assert.equal(assistants(s)[0].ended, 'cancelled');
  assert.equal(answerText(assistants(s)[0]), 'Working on');
  assert.equal(openPermissions(s).length, 0);
  assert.equal(
    (s.items.find((i) => i.kind === 'permission') as Extract<ChatItem, { kind: 'permission' }>).state,
    'cancelled',
  );
});

test('cancel before any answer says it stopped', () => {
  const s = run([{ type: 'userSend', text: 'x', mentions: [] }, ev({ kind: 'done', outcome: 'cancelled' })]);
  assert.deepEqual(kinds(s), ['user', 'notice']);
});

test('permission cards: open, decided, and the server cancelling one', () => {
  const params = {
    sessionId: S,
    tool: 'Edit',
    input: { file_path: '/w/a.ts' },
    summary: 'Edit a.ts',
    sessionScope: 'every Edit inside the workspace for this session',
  };
  let s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    { type: 'permissionOpen', key: 'p1', params },
    { type: 'permissionOpen', key: 'p2', params },
  ]);
  assert.equal(openPermissions(s).length, 2);
  s = run(
    [
      { type: 'permissionClosed', key: 'p1', state: 'allowSession' },
      { type: 'permissionClosed', key: 'p2', state: 'cancelled' },
    ],
    s,
  );
  const cards = s.items.filter((i): i is Extract<ChatItem, { kind: 'permission' }> => i.kind === 'permission');
  assert.deepEqual(
    cards.map((c) => c.state),
    ['allowSession', 'cancelled'],
  );
  // A late answer for a closed card changes nothing.
  const again = reduce(s, { type: 'permissionClosed', key: 'p1', state: 'deny' });
  assert.equal(again, s);
});

test('compacted events are shown', () => {
  const s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'compacted', tokensBefore: 151230, tokensAfter: 9412, mode: 'full' }),
  ]);
  assert.deepEqual(s.items[1], { kind: 'compacted', id: 2, mode: 'full', tokensBefore: 151230, tokensAfter: 9412 });
});

test("a hook's denial is shown like a tool result, after the call it stopped", () => {
  const s = run([
    { type: 'userSend', text: 'clean', mentions: [] },
    { type: 'sendAccepted', turnId: T },
    ev({ kind: 'toolUse', id: 'toolu_1', name: 'Bash', input: { command: 'rm -rf build' } }),
    ev({
      kind: 'hook',
      event: 'PreToolUse',
      outcome: 'denied',
      text: 'PreToolUse:Bash hook error: [guard]: no rm\n',
      toolUseId: 'toolu_1',
    }),
    ev({
      kind: 'toolResult',
      toolUseId: 'toolu_1',
      content: 'PreToolUse:Bash hook error: [guard]: no rm\n',
      isError: true,
    }),
    ev({
      kind: 'hook',
      event: 'Stop',
      outcome: 'feedback',
      text: 'Stop hook feedback:\nRun the tests.',
      command: 'checklist.sh',
    }),
    ev({ kind: 'text', index: 0, text: 'Running them.' }),
    ev({ kind: 'done', outcome: 'completed', stopReason: 'end_turn' }),
  ]);
  assert.deepEqual(kinds(s), ['user', 'tool', 'hook', 'hook', 'assistant']);
  assert.deepEqual(s.items[2], {
    kind: 'hook',
    id: 3,
    event: 'PreToolUse',
    outcome: 'denied',
    text: 'PreToolUse:Bash hook error: [guard]: no rm\n',
    command: null,
    toolUseId: 'toolu_1',
  });
  const stop = s.items[3] as Extract<ChatItem, { kind: 'hook' }>;
  assert.equal(stop.command, 'checklist.sh');
  // A blocked prompt ends the turn with the hook's words, no answer.
  const b = run([
    { type: 'userSend', text: 'hello', mentions: [] },
    { type: 'sendAccepted', turnId: T },
    ev({ kind: 'hook', event: 'UserPromptSubmit', outcome: 'blocked', text: 'Operation stopped by hook: not now' }),
    ev({ kind: 'done', outcome: 'completed' }),
  ]);
  assert.deepEqual(kinds(b), ['user', 'hook']);
  assert.equal(b.running, null);
});

test('events of another session are ignored', () => {
  const s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'no' }, T, 'other'),
  ]);
  assert.deepEqual(kinds(s), ['user']);
});

test('a send refused by the server (no API key) says why, with retry', () => {
  const s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    {
      type: 'sendFailed',
      message: 'No API key: set ANTHROPIC_API_KEY in the environment VS Code was started from.',
      retryText: 'x',
    },
  ]);
  assert.equal(s.running, null);
  const e = s.items[1] as Extract<ChatItem, { kind: 'error' }>;
  assert.match(e.message, /ANTHROPIC_API_KEY/);
});

test('the server going away ends the turn and keeps what arrived', () => {
  const s = run([
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'half' }),
    { type: 'interrupted', text: 'The server stopped.' },
  ]);
  assert.equal(s.running, null);
  assert.equal(assistants(s)[0].ended, 'interrupted');
  assert.deepEqual(kinds(s), ['user', 'assistant', 'notice']);
});

test('history from chat/resume renders users, answers, tools with their results, attachments and interruptions', () => {
  const s = reduce(initialState(), {
    type: 'history',
    sessionId: S,
    warnings: ['line 9 torn'],
    continues: null,
    messages: [
      {
        role: 'user',
        text: 'What does cart.ts export?',
        attachments: [{ path: '/w/.claude/rules/ts.md', trigger: '/w/cart.ts', tokens: 12 }],
      },
      {
        role: 'assistant',
        text: 'Reading.',
        toolUses: [{ id: 't1', name: 'Read', input: { file_path: '/w/cart.ts' } }],
      },
      { role: 'user', text: '', toolResults: [{ toolUseId: 't1', isError: false, content: 'export const cart = 1;' }] },
      { role: 'assistant', text: 'It exports `cart`.' },
      { role: 'user', text: '[Request interrupted by user]', interruption: true },
    ],
  });
  assert.deepEqual(kinds(s), ['attachment', 'user', 'assistant', 'tool', 'assistant', 'notice']);
  assert.deepEqual((s.items[3] as Extract<ChatItem, { kind: 'tool' }>).result, {
    content: 'export const cart = 1;',
    isError: false,
  });
  assert.deepEqual(s.items[0], {
    kind: 'attachment',
    path: '/w/.claude/rules/ts.md',
    trigger: '/w/cart.ts',
    tokens: 12,
    id: s.items[0].id,
  });
  assert.deepEqual(s.warnings, ['line 9 torn']);
});

test('the reducer never mutates: every intermediate state is intact, unchanged items keep identity', () => {
  const actions: ChatAction[] = [
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'a' }),
    ev({ kind: 'toolUse', id: 't', name: 'Bash', input: { command: 'ls' } }),
    ev({ kind: 'toolResult', toolUseId: 't', content: 'ok', isError: false }),
    ev({ kind: 'text', index: 0, text: 'b' }),
    ev({ kind: 'done', outcome: 'completed' }),
  ];
  const states: string[] = [];
  let s = reduce(initialState(), { type: 'reset', sessionId: S });
  const snapshots: ChatState[] = [];
  for (const a of actions) {
    snapshots.push(s);
    states.push(JSON.stringify(s));
    s = reduce(s, a);
  }
  snapshots.forEach((snap, i) => assert.equal(JSON.stringify(snap), states[i]));
  const userBefore = snapshots[2].items[0];
  assert.equal(s.items[0], userBefore);
});

test('a replica fed the same actions from a snapshot converges with the host', () => {
  const actions: ChatAction[] = [
    { type: 'userSend', text: 'x', mentions: [] },
    ev({ kind: 'text', index: 0, text: 'part one ' }),
    ev({ kind: 'text', index: 0, text: 'part two' }),
    ev({ kind: 'toolUse', id: 't', name: 'Edit', input: {} }),
    {
      type: 'permissionOpen',
      key: 'k',
      params: { sessionId: S, tool: 'Edit', input: {}, summary: 's', sessionScope: 'scope' },
    },
    { type: 'permissionClosed', key: 'k', state: 'allow' },
    ev({ kind: 'toolResult', toolUseId: 't', content: 'done', isError: false }),
    ev({ kind: 'done', outcome: 'completed' }),
  ];
  const host = run(actions);
  for (let cut = 0; cut <= actions.length; cut++) {
    const snapshot = JSON.parse(JSON.stringify(run(actions.slice(0, cut)))) as ChatState;
    const replica = actions.slice(cut).reduce(reduce, snapshot);
    assert.deepEqual(replica, JSON.parse(JSON.stringify(host)), `cut at ${cut}`);
  }
});

test('coalescing consecutive deltas of a block gives the same state, whatever the batch cut', async () => {
  const { coalesce } = await import('../../src/core/chatModel');
  const actions: ChatAction[] = [{ type: 'userSend', text: 'x', mentions: [] }];
  for (let i = 0; i < 50; i++) actions.push(ev({ kind: 'text', index: 0, text: `w${i} ` }));
  actions.push(ev({ kind: 'thinking', index: 1, text: 'hmm' }), ev({ kind: 'thinking', index: 1, text: '…' }));
  actions.push(
    ev({ kind: 'toolUse', id: 't', name: 'Read', input: {} }),
    ev({ kind: 'text', index: 2, text: 'a' }),
    ev({ kind: 'text', index: 2, text: 'b' }),
  );
  actions.push(
    ev({ kind: 'error', message: 'cut', errorKind: 'connection', restart: true }),
    ev({ kind: 'text', index: 0, text: 'again' }),
    ev({ kind: 'text', index: 0, text: '!' }),
  );
  actions.push(ev({ kind: 'done', outcome: 'completed' }));
  const whole = run(actions);
  for (const size of [1, 3, 7, 16, actions.length]) {
    let s = run([]);
    for (let i = 0; i < actions.length; i += size) s = coalesce(actions.slice(i, i + size)).reduce(reduce, s);
    assert.deepEqual(s, whole, `batches of ${size}`);
  }
  assert.ok(coalesce(actions).length < 15, `a burst crosses as few actions (${coalesce(actions).length})`);
});

test('the permission mode: the picker keeps it across a new session, the server sets what runs', () => {
  let s = reduce(initialState(), { type: 'mode', mode: 'plan' });
  assert.equal(s.mode, 'plan');
  assert.deepEqual(
    s.modes.map((m) => m.id),
    ['default', 'acceptEdits', 'plan', 'dontAsk'],
    'no bypass before the server says',
  );
  s = reduce(s, { type: 'reset', sessionId: S });
  assert.equal(s.mode, 'plan', 'the session starts in the chosen mode');
  const modes = [...s.modes, { id: 'bypassPermissions', name: 'Bypass permissions', description: 'x' }];
  s = reduce(s, { type: 'mode', mode: 'acceptEdits', modes });
  assert.equal(s.mode, 'acceptEdits');
  assert.equal(s.modes.length, 5);
  // A permission card keeps the server's reason.
  s = reduce(s, {
    type: 'permissionOpen',
    key: 'k',
    params: {
      sessionId: S,
      tool: 'Bash',
      input: { command: 'mkdir d' },
      summary: 'Bash: mkdir d',
      reason: "mkdir in '/p/d' needs approval.",
    },
  });
  const card = openPermissions(s)[0];
  assert.equal(card.reason, "mkdir in '/p/d' needs approval.");
});
