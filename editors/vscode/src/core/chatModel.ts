// The conversation of one chat session, as a pure reducer over actions.
//
// The extension host owns the state: every `chat/event` of the server, every message the user
// sends and every permission prompt becomes an action reduced here. A webview is a replica: it
// receives the state once (on load) and then the same actions in order, and runs this same reducer,
// so hiding, moving or reloading it loses nothing. Nothing here touches VS Code or the DOM.

import type { ChatEvent, ChatResume, ChatPermission } from '../protocol/generated';
import type { ChatImage } from './images';

export type Decision = ChatPermission.Result['decision'];
export type UsageReport = ChatEvent.UsageReport;

export interface AnswerBlock {
  type: 'text' | 'thinking';
  index: number;
  text: string;
}

/** A subagent run by an `Agent` call (`subagentStart` … `subagentEnd`). */
export interface SubagentInfo {
  agentId: string;
  agentType: string;
  description: string;
  model: string;
  /** `running`, then the `subagentEnd` outcome (`completed`, `cancelled`, `failed`). */
  state: string;
  toolUses?: number;
  durationMs?: number;
}

/** One of a subagent's tool calls. */
export interface SubTool {
  toolUseId: string;
  name: string;
  input: unknown;
  result?: { content: string; isError: boolean };
}

export type ChatItem =
  | {
      kind: 'user';
      id: number;
      text: string;
      mentions: string[];
      /** Images sent with the message, in order (present only when there are some). */
      images?: ChatImage[];
    }
  | {
      kind: 'assistant';
      id: number;
      turnId: string | null;
      blocks: AnswerBlock[];
      /** How the turn that wrote it ended, when not completed. */
      ended?: 'cancelled' | 'failed' | 'interrupted';
    }
  | {
      kind: 'tool';
      id: number;
      toolUseId: string;
      name: string;
      input: unknown;
      result?: { content: string; isError: boolean };
      /** An `Agent` call that started a subagent: its type, title, model and state. */
      subagent?: SubagentInfo;
      /** The subagent's own tool calls, in order (events with `parentToolUseId` = this call). */
      children?: SubTool[];
    }
  | { kind: 'attachment'; id: number; path: string; trigger: string; tokens: number }
  | {
      kind: 'hook';
      id: number;
      /** `PreToolUse`, `Stop`, … */
      event: string;
      /** `blocked`, `denied`, `allowed`, `asked`, `feedback`, `context`, `stopped`, `message`, `error`, `timeout`. */
      outcome: string;
      /** What the model got, or what the user is told. */
      text: string;
      /** The hook's command, in full. */
      command?: string | null;
      toolUseId?: string | null;
    }
  | { kind: 'compacted'; id: number; mode: string; tokensBefore: number; tokensAfter: number }
  | {
      kind: 'error';
      id: number;
      message: string;
      errorKind: string;
      status?: number | null;
      /** The user text to send again for "Retry" (the turn's prompt), if any. */
      retryText?: string;
      /** The images to send again with it. */
      retryImages?: ChatImage[];
    }
  | { kind: 'notice'; id: number; text: string }
  | {
      kind: 'permission';
      id: number;
      /** The host's key for the pending server request. */
      key: string;
      tool: string;
      summary: string;
      /** What "allow for the session" covers; absent when the call can only be allowed once. */
      sessionScope?: string;
      /** What the file can make run, when the server warns. */
      warning?: string;
      /** The server's own words for the answers (a project's MCP server), when it sends them. */
      choices?: { allow: string; allowSession?: string | null; deny: string };
      /** Why the user is asked (an ask rule and its file, the command checker's words). */
      reason?: string;
      input: unknown;
      state: 'open' | Decision | 'cancelled';
    };

export interface RetryNotice {
  message: string;
  errorKind: string;
  attempt: number;
  of: number;
  delayMs: number;
}

/** A permission mode the session may switch to (`chat/new`'s `availableModes`). */
export interface ModeChoice {
  id: string;
  name: string;
  description: string;
}

/** The modes a session offers before the server said (no session yet): never bypass. */
export const DEFAULT_MODES: ModeChoice[] = [
  { id: 'default', name: 'Default', description: 'Ask before anything that changes files or runs commands' },
  {
    id: 'acceptEdits',
    name: 'Accept edits',
    description: 'Edits and common file commands inside the workspace run without asking',
  },
  { id: 'plan', name: 'Plan', description: 'Read-only: explore and plan, change nothing' },
  { id: 'dontAsk', name: "Don't ask", description: 'Never ask: run what rules allow, refuse the rest' },
];

export interface ChatState {
  sessionId: string | null;
  /** The session's permission mode (or the one the next session starts in). */
  mode: string;
  /** What the mode picker offers. */
  modes: ModeChoice[];
  cwd?: string;
  transcript?: string;
  /** The reference CLI session this one continues. */
  continues?: string | null;
  items: ChatItem[];
  /** A turn is running (`turnId` null until `chat/send` answered). */
  running: { turnId: string | null } | null;
  /** A transient "retrying" notice, cleared by the next content or the end of the turn. */
  retry: RetryNotice | null;
  /** The last `usage` event: the API's own figures. */
  usage: UsageReport | null;
  /** Where the answer being streamed starts in `items` (for `restart`), or null between answers. */
  answerStart: number | null;
  /** The assistant item receiving text of the answer being streamed. */
  answerItem: number | null;
  warnings: string[];
  nextId: number;
}

export type ChatAction =
  | { type: 'reset'; sessionId: string | null; cwd?: string; transcript?: string }
  | {
      type: 'history';
      sessionId: string;
      messages: ChatResume.HistoryEntry[];
      warnings: string[];
      continues?: string | null;
      transcript?: string;
    }
  | { type: 'userSend'; text: string; mentions: string[]; images?: ChatImage[] }
  | { type: 'sendAccepted'; turnId: string }
  | { type: 'sendFailed'; message: string; errorKind?: string; retryText?: string; retryImages?: ChatImage[] }
  | { type: 'event'; event: ChatEvent.Params }
  | { type: 'permissionOpen'; key: string; params: ChatPermission.Params }
  | { type: 'permissionClosed'; key: string; state: Decision | 'cancelled' }
  | { type: 'interrupted'; text: string }
  | { type: 'notice'; text: string }
  | { type: 'mode'; mode: string; modes?: ModeChoice[] };

export function initialState(sessionId: string | null = null): ChatState {
  return {
    sessionId,
    mode: 'default',
    modes: DEFAULT_MODES,
    items: [],
    running: null,
    retry: null,
    usage: null,
    answerStart: null,
    answerItem: null,
    warnings: [],
    nextId: 1,
  };
}

/** Applies one action. Never mutates `state`; unchanged parts are shared. */
export function reduce(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case 'reset':
      // A new session keeps the mode the picker shows until the server says (`mode`).
      return {
        ...initialState(action.sessionId),
        mode: state.mode,
        modes: state.modes,
        cwd: action.cwd,
        transcript: action.transcript,
      };
    case 'history':
      return { ...fromHistory(action), mode: state.mode, modes: state.modes };
    case 'mode':
      return { ...state, mode: action.mode, modes: action.modes && action.modes.length ? action.modes : state.modes };
    case 'userSend': {
      const s = push(state, {
        kind: 'user',
        text: action.text,
        mentions: action.mentions,
        ...(action.images && action.images.length ? { images: action.images } : {}),
      });
      return { ...s, running: { turnId: null }, retry: null, answerStart: null, answerItem: null };
    }
    case 'sendAccepted':
      if (!state.running) return state;
      return { ...state, running: { turnId: action.turnId } };
    case 'sendFailed': {
      const s = push(state, {
        kind: 'error',
        message: action.message,
        errorKind: action.errorKind ?? 'request',
        retryText: action.retryText,
        ...(action.retryImages && action.retryImages.length ? { retryImages: action.retryImages } : {}),
      });
      return { ...s, running: null, retry: null, answerStart: null, answerItem: null };
    }
    case 'event':
      return onEvent(state, action.event);
    case 'permissionOpen':
      return push(state, {
        kind: 'permission',
        key: action.key,
        tool: action.params.tool,
        summary: action.params.summary,
        // Present only when sent, so a snapshot (JSON) of the state equals the state.
        ...(action.params.sessionScope ? { sessionScope: action.params.sessionScope } : {}),
        ...(action.params.warning ? { warning: action.params.warning } : {}),
        ...(action.params.choices ? { choices: action.params.choices } : {}),
        ...(action.params.reason ? { reason: action.params.reason } : {}),
        input: action.params.input,
        state: 'open',
      });
    case 'permissionClosed':
      return mapItems(state, (it) =>
        it.kind === 'permission' && it.key === action.key && it.state === 'open' ? { ...it, state: action.state } : it,
      );
    case 'interrupted': {
      // The server went away mid-turn: the turn is over, what had arrived stays.
      let s = closeOpenPermissions(state);
      if (s.running) {
        s = markAnswerEnded(s, 'interrupted');
        s = push(s, { kind: 'notice', text: action.text });
      }
      return { ...s, running: null, retry: null, answerStart: null, answerItem: null };
    }
    case 'notice':
      return push(state, { kind: 'notice', text: action.text });
  }
}

function onEvent(state: ChatState, ev: ChatEvent.Params): ChatState {
  if (state.sessionId && ev.sessionId !== state.sessionId) return state;
  let s = state;
  if (s.running && s.running.turnId === null) s = { ...s, running: { turnId: ev.turnId } };
  switch (ev.kind) {
    case 'text':
    case 'thinking': {
      s = openAnswer(s, ev.turnId, true);
      const id = s.answerItem!;
      return mapItems(
        { ...s, retry: null },
        (it) => {
          if (it.id !== id || it.kind !== 'assistant') return it;
          const at = it.blocks.findIndex((b) => b.type === ev.kind && b.index === ev.index);
          const blocks = it.blocks.slice();
          if (at < 0) blocks.push({ type: ev.kind, index: ev.index, text: ev.text });
          else blocks[at] = { ...blocks[at], text: blocks[at].text + ev.text };
          return { ...it, blocks };
        },
        id,
      );
    }
    case 'toolUse': {
      if (ev.parentToolUseId) {
        const parent = ev.parentToolUseId;
        const child: SubTool = { toolUseId: ev.id, name: ev.name, input: ev.input };
        return mapItems(s, (it) =>
          it.kind === 'tool' && it.toolUseId === parent ? { ...it, children: [...(it.children ?? []), child] } : it,
        );
      }
      s = openAnswer(s, ev.turnId, false);
      return push({ ...s, retry: null }, { kind: 'tool', toolUseId: ev.id, name: ev.name, input: ev.input });
    }
    case 'subagentStart': {
      const info: SubagentInfo = {
        agentId: ev.agentId,
        agentType: ev.agentType,
        description: ev.description,
        model: ev.model,
        state: 'running',
      };
      return mapItems(s, (it) =>
        it.kind === 'tool' && it.toolUseId === ev.toolUseId ? { ...it, subagent: info } : it,
      );
    }
    case 'subagentEnd':
      return mapItems(s, (it) =>
        it.kind === 'tool' && it.toolUseId === ev.toolUseId && it.subagent
          ? { ...it, subagent: { ...it.subagent, state: ev.outcome, toolUses: ev.toolUses, durationMs: ev.durationMs } }
          : it,
      );
    case 'toolResult': {
      if (ev.parentToolUseId) {
        const parent = ev.parentToolUseId;
        const result = { content: ev.content, isError: ev.isError };
        return mapItems(s, (it) =>
          it.kind === 'tool' && it.toolUseId === parent
            ? { ...it, children: (it.children ?? []).map((c) => (c.toolUseId === ev.toolUseId ? { ...c, result } : c)) }
            : it,
        );
      }
      s = closeAnswer(s);
      let found = false;
      s = mapItems(s, (it) => {
        if (it.kind === 'tool' && it.toolUseId === ev.toolUseId && !found) {
          found = true;
          return { ...it, result: { content: ev.content, isError: ev.isError } };
        }
        return it;
      });
      if (!found)
        s = push(s, {
          kind: 'tool',
          toolUseId: ev.toolUseId,
          name: '?',
          input: null,
          result: { content: ev.content, isError: ev.isError },
        });
      return s;
    }
    case 'attachment':
      return push(closeAnswer(s), { kind: 'attachment', path: ev.path, trigger: ev.trigger, tokens: ev.tokens });
    case 'hook':
      return push(closeAnswer(s), {
        kind: 'hook',
        event: ev.event,
        outcome: ev.outcome,
        text: ev.text,
        command: ev.command ?? null,
        toolUseId: ev.toolUseId ?? null,
      });
    case 'usage': {
      const { sessionId: _s, turnId: _t, kind: _k, ...usage } = ev;
      return { ...closeAnswer(s), usage: usage };
    }
    case 'compacted':
      return push(closeAnswer(s), {
        kind: 'compacted',
        mode: ev.mode,
        tokensBefore: ev.tokensBefore,
        tokensAfter: ev.tokensAfter,
      });
    case 'error': {
      if (ev.restart) {
        // The stream was cut mid-answer: what this answer streamed is void; a new one follows.
        if (s.answerStart !== null) s = { ...s, items: s.items.slice(0, s.answerStart) };
        s = { ...s, answerStart: null, answerItem: null };
      }
      if (ev.retry) {
        return {
          ...s,
          retry: {
            message: ev.message,
            errorKind: ev.errorKind,
            attempt: ev.retry.attempt,
            of: ev.retry.of,
            delayMs: ev.retry.delayMs,
          },
        };
      }
      if (ev.restart) return s;
      return push(
        { ...closeAnswer(s), retry: null },
        { kind: 'error', message: ev.message, errorKind: ev.errorKind, status: ev.status, retryText: lastUserText(s) },
      );
    }
    case 'done': {
      s = closeOpenPermissions(closeAnswer(s));
      if (ev.outcome === 'cancelled') s = markAnswerEnded(s, 'cancelled');
      if (ev.outcome === 'failed') {
        s = markAnswerEnded(s, 'failed');
        if (!turnHasError(s))
          s = push(s, { kind: 'error', message: 'The turn failed.', errorKind: 'failed', retryText: lastUserText(s) });
      }
      return { ...s, running: null, retry: null };
    }
  }
  return s;
}

function fromHistory(action: Extract<ChatAction, { type: 'history' }>): ChatState {
  let s: ChatState = {
    ...initialState(action.sessionId),
    continues: action.continues,
    transcript: action.transcript,
    warnings: action.warnings,
  };
  for (const m of action.messages) {
    for (const a of m.attachments ?? [])
      s = push(s, { kind: 'attachment', path: a.path, trigger: a.trigger ?? '', tokens: a.tokens });
    for (const r of m.toolResults ?? []) {
      s = mapItems(s, (it) =>
        it.kind === 'tool' && it.toolUseId === r.toolUseId
          ? { ...it, result: { content: r.content ?? '', isError: r.isError } }
          : it,
      );
    }
    if (m.role === 'user') {
      if (m.interruption) s = push(s, { kind: 'notice', text: 'Interrupted by the user.' });
      else if (m.text.trim() || m.images?.length)
        s = push(s, {
          kind: 'user',
          text: m.text,
          mentions: [],
          ...(m.images?.length
            ? { images: m.images.map((i) => ({ mediaType: i.mediaType, ...(i.size != null ? { size: i.size } : {}) })) }
            : {}),
        });
    } else {
      if (m.text) s = push(s, { kind: 'assistant', turnId: null, blocks: [{ type: 'text', index: 0, text: m.text }] });
      for (const t of m.toolUses ?? []) s = push(s, { kind: 'tool', toolUseId: t.id, name: t.name, input: t.input });
    }
  }
  return s;
}

type NewItem = ChatItem extends infer T ? (T extends ChatItem ? Omit<T, 'id'> : never) : never;

function push(state: ChatState, item: NewItem): ChatState {
  const withId = { ...item, id: state.nextId };
  return { ...state, items: [...state.items, withId], nextId: state.nextId + 1 };
}

/** Replaces items through `f`; with `onlyId`, only that item is looked at (from the end). */
function mapItems(state: ChatState, f: (it: ChatItem) => ChatItem, onlyId?: number): ChatState {
  if (onlyId !== undefined) {
    for (let i = state.items.length - 1; i >= 0; i--) {
      if (state.items[i].id === onlyId) {
        const next = f(state.items[i]);
        if (next === state.items[i]) return state;
        const items = state.items.slice();
        items[i] = next;
        return { ...state, items };
      }
    }
    return state;
  }
  let changed = false;
  const items = state.items.map((it) => {
    const n = f(it);
    if (n !== it) changed = true;
    return n;
  });
  return changed ? { ...state, items } : state;
}

function openAnswer(state: ChatState, turnId: string, needText: boolean): ChatState {
  let s = state;
  if (s.answerStart === null) s = { ...s, answerStart: s.items.length, answerItem: null };
  if (needText && s.answerItem === null) {
    const id = s.nextId;
    s = push(s, { kind: 'assistant', turnId, blocks: [] });
    s = { ...s, answerItem: id };
  } else if (needText && s.answerItem !== null) {
    // Text after a tool call of the same answer continues in a new item after the tool.
    const last = s.items[s.items.length - 1];
    if (last && last.id !== s.answerItem) {
      const id = s.nextId;
      s = push(s, { kind: 'assistant', turnId, blocks: [] });
      s = { ...s, answerItem: id };
    }
  }
  return s;
}

function closeAnswer(state: ChatState): ChatState {
  if (state.answerStart === null && state.answerItem === null) return state;
  return { ...state, answerStart: null, answerItem: null };
}

function closeOpenPermissions(state: ChatState): ChatState {
  return mapItems(state, (it) =>
    it.kind === 'permission' && it.state === 'open' ? { ...it, state: 'cancelled' } : it,
  );
}

function markAnswerEnded(state: ChatState, how: 'cancelled' | 'failed' | 'interrupted'): ChatState {
  // The last assistant item of the running turn (after the last user message).
  for (let i = state.items.length - 1; i >= 0; i--) {
    const it = state.items[i];
    if (it.kind === 'user') break;
    if (it.kind === 'assistant') return mapItems(state, (x) => (x === it ? { ...it, ended: how } : x), it.id);
  }
  if (how === 'cancelled') return push(state, { kind: 'notice', text: 'Stopped.' });
  return state;
}

function lastUserText(state: ChatState): string | undefined {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const it = state.items[i];
    if (it.kind === 'user') return it.text;
  }
  return undefined;
}

function turnHasError(state: ChatState): boolean {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const it = state.items[i];
    if (it.kind === 'user') return false;
    if (it.kind === 'error') return true;
  }
  return false;
}

/** The whole text of an assistant item (its text blocks, in order). */
export function answerText(item: Extract<ChatItem, { kind: 'assistant' }>): string {
  return item.blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('');
}

/** The permission cards still waiting for an answer. */
export function openPermissions(state: ChatState): Extract<ChatItem, { kind: 'permission' }>[] {
  return state.items.filter(
    (it): it is Extract<ChatItem, { kind: 'permission' }> => it.kind === 'permission' && it.state === 'open',
  );
}

/**
 * Merges consecutive text (or thinking) deltas of the same block into one action: the reducer
 * gives the same state for `a` then `b` as for `a + b`, and a burst of deltas crosses to the
 * webview as one message per block.
 */
export function coalesce(actions: ChatAction[]): ChatAction[] {
  const out: ChatAction[] = [];
  for (const a of actions) {
    const prev = out[out.length - 1];
    if (
      prev &&
      prev.type === 'event' &&
      a.type === 'event' &&
      (a.event.kind === 'text' || a.event.kind === 'thinking') &&
      prev.event.kind === a.event.kind &&
      prev.event.sessionId === a.event.sessionId &&
      prev.event.turnId === a.event.turnId &&
      (prev.event as { index: number }).index === (a.event as { index: number }).index
    ) {
      out[out.length - 1] = {
        type: 'event',
        event: { ...prev.event, text: (prev.event as { text: string }).text + (a.event as { text: string }).text },
      };
    } else out.push(a);
  }
  return out;
}
