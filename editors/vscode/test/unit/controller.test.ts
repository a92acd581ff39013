// The chat controller with an in-memory connection: what it does with bad server messages,
// permission prompts and replicas.
import assert from 'node:assert/strict';
import test from 'node:test';
import { CancellationTokenSource, ResponseError } from 'vscode-jsonrpc';
import { ChatController, type Conn, type Update } from '../../src/core/chat';
import { reduce, type ChatState } from '../../src/core/chatModel';

class FakeConn implements Conn {
  notifications = new Map<string, (p: unknown) => void>();
  requests = new Map<string, (p: unknown, t: unknown) => unknown>();
  sent: { method: string; params: unknown }[] = [];
  answers: Record<string, (p: any) => unknown> = {
    'chat/new': () => ({ sessionId: 'S', cwd: '/w', transcript: '/t/S.jsonl' }),
    'chat/send': () => ({ turnId: 'T' }),
    'chat/cancel': () => ({ cancelled: true, turnId: 'T' }),
  };
  sendRequest(type: any, params: any): Promise<any> {
    this.sent.push({ method: type.method, params });
    try {
      return Promise.resolve(this.answers[type.method](params));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }
  onNotification(type: any, h: any) {
    this.notifications.set(type.method, h);
    return { dispose: () => this.notifications.delete(type.method) };
  }
  onRequest(type: any, h: any) {
    this.requests.set(type.method, h);
    return { dispose: () => this.requests.delete(type.method) };
  }
  event(p: unknown) {
    this.notifications.get('chat/event')!(p);
  }
}

function setup() {
  const conn = new FakeConn();
  const log: string[] = [];
  const asked: string[] = [];
  const chat = new ChatController(
    conn,
    { info: (m) => log.push(m), warn: (m) => log.push(m), error: (m) => log.push(m) },
    { permissionAsked: (a) => asked.push(a.params.summary) },
  );
  chat.attach();
  return { conn, chat, log, asked };
}

test('a chat/event that does not fit its schema is logged and dropped, never thrown', async () => {
  const { conn, chat, log } = setup();
  await chat.send('hi');
  const before = chat.state;
  for (const bad of [
    { sessionId: 'S', turnId: 'T', kind: 'text', index: 'zero', text: 'x' },
    { sessionId: 'S', turnId: 'T', kind: 'teleport' },
    { sessionId: 'S', kind: 'done', outcome: 'completed' },
    null,
    'garbage',
  ]) {
    assert.doesNotThrow(() => conn.event(bad));
  }
  assert.equal(chat.state, before);
  assert.equal(log.filter((l) => /does not fit its schema/.test(l)).length, 5);
  assert.match(log[0], /index/);
  conn.event({ sessionId: 'S', turnId: 'T', kind: 'text', index: 0, text: 'fine' });
  assert.notEqual(chat.state, before);
});

test('a chat/permission that does not fit its schema is denied, and nothing is shown', async () => {
  const { conn, chat, log } = setup();
  await chat.send('hi');
  const r = await conn.requests.get('chat/permission')!(
    { sessionId: 'S', tool: 'Bash' },
    new CancellationTokenSource().token,
  );
  assert.deepEqual(r, { decision: 'deny' });
  assert.ok(!chat.state.items.some((i) => i.kind === 'permission'));
  assert.match(log.join('\n'), /chat\/permission does not fit/);
});

test('a permission prompt resolves with the decision; the hook can show a notification', async () => {
  const { conn, chat, asked } = setup();
  await chat.send('hi');
  const p = conn.requests.get('chat/permission')!(
    {
      sessionId: 'S',
      tool: 'Bash',
      input: { command: 'ls' },
      summary: 'Bash: ls',
      sessionScope: 'this exact command for this session: ls',
    },
    new CancellationTokenSource().token,
  ) as Promise<unknown>;
  assert.deepEqual(asked, ['Bash: ls']);
  const card = chat.state.items.find((i) => i.kind === 'permission')!;
  assert.ok(card.kind === 'permission' && chat.decide(card.key, 'allowSession'));
  assert.deepEqual(await p, { decision: 'allowSession' });
  assert.equal(chat.decide(card.key, 'deny'), false, 'a second answer (the notification after the card) is ignored');
});

test('the server cancelling the prompt closes the card and answers deny', async () => {
  const { conn, chat } = setup();
  await chat.send('hi');
  const cts = new CancellationTokenSource();
  const p = conn.requests.get('chat/permission')!(
    { sessionId: 'S', tool: 'Edit', input: {}, summary: 'Edit a', sessionScope: 's' },
    cts.token,
  ) as Promise<unknown>;
  cts.cancel();
  assert.deepEqual(await p, { decision: 'deny' });
  const card = chat.state.items.find((i) => i.kind === 'permission');
  assert.equal(card?.kind === 'permission' && card.state, 'cancelled');
});

test('a send the server refuses (no key) becomes an error item with the server message', async () => {
  const { conn, chat } = setup();
  conn.answers['chat/send'] = () => {
    throw new ResponseError(
      -32803,
      'no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway) in the environment of the editor or the shell',
    );
  };
  await chat.send('hi');
  const e = chat.state.items.at(-1)!;
  assert.equal(e.kind, 'error');
  assert.match(e.kind === 'error' ? e.message : '', /set ANTHROPIC_API_KEY/);
  assert.equal(chat.state.running, null);
});

test('replicas get a snapshot then every action in order, and rebuild the same state', async () => {
  const { conn, chat } = setup();
  let replica: ChatState | null = null;
  let seq = -1;
  const sub = chat.subscribe((u: Update) => {
    if (u.kind === 'snapshot') {
      replica = JSON.parse(JSON.stringify(u.state));
      seq = u.seq;
    } else {
      assert.equal(u.seq, seq + 1, 'no gap');
      seq = u.seq;
      replica = reduce(replica!, u.action);
    }
  });
  await chat.send('hello');
  conn.event({ sessionId: 'S', turnId: 'T', kind: 'text', index: 0, text: 'a' });
  conn.event({ sessionId: 'S', turnId: 'T', kind: 'done', outcome: 'completed' });
  assert.deepEqual(JSON.parse(JSON.stringify(replica)), JSON.parse(JSON.stringify(chat.state)));
  sub.dispose();
});

test('events of other sessions are not this chat', async () => {
  const { conn, chat } = setup();
  await chat.send('hi');
  const before = chat.state;
  conn.event({ sessionId: 'OTHER', turnId: 'T', kind: 'text', index: 0, text: 'x' });
  assert.equal(chat.state, before);
});
