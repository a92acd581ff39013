// The client layer of the chat: owns the conversation (a reducer over `chat/event`), sends the
// chat methods, answers `chat/permission`, and tells its replicas (webviews) every action in order.
//
// It talks to the server through `Conn`, which both VS Code's `LanguageClient` and a bare
// `vscode-jsonrpc` connection satisfy: the extension and the protocol tests run this same code.

import type { CancellationToken, Disposable, NotificationType, RequestType } from 'vscode-jsonrpc';
import {
  ChatCancel,
  ChatEvent,
  ChatList,
  ChatModeChanged,
  ChatNew,
  ChatPermission,
  ChatResume,
  ChatSend,
  ChatSetMode,
  ChatSetStyle,
  CompactRun,
} from '../protocol/generated';
import { type ChatAction, type ChatState, type Decision, initialState, reduce } from './chatModel';
import { check, excerpt } from './validate';
import type { ChatImage } from './images';

export interface Conn {
  sendRequest<P, R>(type: RequestType<P, R, void>, params: P, token?: CancellationToken): Promise<R>;
  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): Disposable;
  onRequest<P, R>(
    type: RequestType<P, R, void>,
    handler: (params: P, token: CancellationToken) => Promise<R> | R,
  ): Disposable;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What replicas receive: the whole state once, then every action with its sequence number. */
export type Update =
  { kind: 'snapshot'; seq: number; state: ChatState } | { kind: 'action'; seq: number; action: ChatAction };

export interface PermissionAsk {
  key: string;
  params: ChatPermission.Params;
}

export interface ChatHooks {
  /** A permission prompt opened (the view shows a notification when the chat is hidden). */
  permissionAsked?(ask: PermissionAsk): void;
  /** The current session changed (the extension remembers it to resume after a reload). */
  sessionChanged?(sessionId: string | null): void;
}

/** The message of a failed request (a `ResponseError` or anything thrown). */
export function errorMessage(e: unknown): string {
  if (e && typeof e === 'object' && 'message' in e) return String(e.message);
  return String(e);
}

export class ChatController {
  private _state: ChatState = initialState();
  private _seq = 0;
  private readonly listeners = new Set<(u: Update) => void>();
  private readonly pending = new Map<string, (d: Decision) => void>();
  private permissionCounter = 0;
  private readonly disposables: Disposable[] = [];

  constructor(
    private conn: Conn,
    private readonly log: Logger,
    private readonly hooks: ChatHooks = {},
  ) {}

  get state(): ChatState {
    return this._state;
  }
  get seq(): number {
    return this._seq;
  }
  get sessionId(): string | null {
    return this._state.sessionId;
  }

  /** Registers the handlers for the server's chat messages on `conn` (once per connection). */
  attach(conn: Conn = this.conn): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    this.conn = conn;
    this.disposables.push(
      conn.onNotification(ChatEvent.type, (params) => this.onEvent(params)),
      conn.onRequest(ChatPermission.type, (params, token) => this.onPermission(params, token)),
      conn.onNotification(ChatModeChanged.type, (params) => this.onModeChanged(params)),
    );
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
    for (const [key, resolve] of this.pending) {
      resolve('deny');
      this.pending.delete(key);
    }
    this.listeners.clear();
  }

  /** Subscribes a replica; it gets a snapshot at once. */
  subscribe(listener: (u: Update) => void): Disposable {
    this.listeners.add(listener);
    listener({ kind: 'snapshot', seq: this._seq, state: this._state });
    return { dispose: () => this.listeners.delete(listener) };
  }

  snapshot(): Update {
    return { kind: 'snapshot', seq: this._seq, state: this._state };
  }

  dispatch(action: ChatAction): void {
    const next = reduce(this._state, action);
    const before = this._state.sessionId;
    this._state = next;
    this._seq++;
    for (const l of this.listeners) l({ kind: 'action', seq: this._seq, action });
    if (next.sessionId !== before) this.hooks.sessionChanged?.(next.sessionId);
  }

  private onEvent(raw: unknown): void {
    const c = check<ChatEvent.Params>(ChatEvent.paramsSchema, raw);
    if (!c.ok) {
      this.log.warn(`chat/event does not fit its schema (${c.error}), dropped: ${excerpt(raw)}`);
      return;
    }
    if (c.value.sessionId !== this._state.sessionId) return;
    this.dispatch({ type: 'event', event: c.value });
  }

  private onModeChanged(raw: unknown): void {
    const c = check<ChatModeChanged.Params>(ChatModeChanged.paramsSchema, raw);
    if (!c.ok) {
      this.log.warn(`chat/modeChanged does not fit its schema (${c.error}), dropped: ${excerpt(raw)}`);
      return;
    }
    if (c.value.sessionId !== this._state.sessionId || c.value.mode === this._state.mode) return;
    this.dispatch({ type: 'mode', mode: c.value.mode });
  }

  /**
   * Switches the permission mode: the session's (`chat/setMode`), or, before there is one, the
   * mode the next session starts in. `false` (and a notice) when the server refused it.
   */
  async setMode(mode: string): Promise<boolean> {
    const sessionId = this._state.sessionId;
    if (!sessionId) {
      this.dispatch({ type: 'mode', mode });
      return true;
    }
    try {
      const r = await this.conn.sendRequest(ChatSetMode.type, { sessionId, mode });
      this.dispatch({ type: 'mode', mode: r.mode });
      return true;
    } catch (e) {
      this.dispatch({ type: 'notice', text: `The mode was not changed: ${errorMessage(e)}` });
      // The picker goes back to what the session runs in.
      this.dispatch({ type: 'mode', mode: this._state.mode });
      return false;
    }
  }

  /**
   * The session's output style (`chat/setStyle`): with `style`, switches to it (from the next
   * message; the server refuses a name no style has); without, lists the styles.
   */
  async setStyle(style?: string): Promise<ChatSetStyle.Result> {
    const sessionId = this._state.sessionId;
    if (!sessionId) throw new Error('no chat session yet');
    const r = await this.conn.sendRequest(
      ChatSetStyle.type,
      style === undefined ? { sessionId } : { sessionId, style },
    );
    if (style !== undefined)
      this.dispatch({ type: 'notice', text: `Output style: ${r.style} (from the next message).` });
    return r;
  }

  private onPermission(raw: unknown, token: CancellationToken): Promise<ChatPermission.Result> {
    const c = check<ChatPermission.Params>(ChatPermission.paramsSchema, raw);
    if (!c.ok) {
      this.log.warn(`chat/permission does not fit its schema (${c.error}), denied: ${excerpt(raw)}`);
      return Promise.resolve({ decision: 'deny' });
    }
    const params = c.value;
    const key = `perm-${++this.permissionCounter}`;
    return new Promise<ChatPermission.Result>((resolve) => {
      this.pending.set(key, (decision) => resolve({ decision }));
      if (params.sessionId === this._state.sessionId) this.dispatch({ type: 'permissionOpen', key, params });
      token.onCancellationRequested(() => {
        // The server stopped waiting (the turn was cancelled): close the card.
        if (this.pending.delete(key)) {
          this.dispatch({ type: 'permissionClosed', key, state: 'cancelled' });
          resolve({ decision: 'deny' });
        }
      });
      this.hooks.permissionAsked?.({ key, params });
    });
  }

  /** The user's answer to a permission card (from the webview or a notification). */
  decide(key: string, decision: Decision): boolean {
    const resolve = this.pending.get(key);
    if (!resolve) return false;
    this.pending.delete(key);
    this.dispatch({ type: 'permissionClosed', key, state: decision });
    resolve(decision);
    return true;
  }

  isPending(key: string): boolean {
    return this.pending.has(key);
  }

  async newSession(folder?: string): Promise<ChatNew.Result | undefined> {
    try {
      const r = await this.conn.sendRequest(ChatNew.type, { folder: folder ?? null, mode: this._state.mode });
      this.dispatch({ type: 'reset', sessionId: r.sessionId, cwd: r.cwd, transcript: r.transcript });
      this.dispatch({ type: 'mode', mode: r.mode, modes: r.availableModes });
      return r;
    } catch (e) {
      this.dispatch({
        type: 'sendFailed',
        message: `Could not start a chat session: ${errorMessage(e)}`,
        errorKind: 'request',
      });
      return undefined;
    }
  }

  async resume(sessionId: string, folder?: string): Promise<ChatResume.Result | undefined> {
    try {
      const r = await this.conn.sendRequest(ChatResume.type, { sessionId, folder: folder ?? null });
      const c = check<ChatResume.Result>(ChatResume.resultSchema, r);
      if (!c.ok) {
        this.log.warn(`chat/resume result does not fit its schema (${c.error})`);
        return undefined;
      }
      this.dispatch({
        type: 'history',
        sessionId: r.sessionId,
        messages: r.messages,
        warnings: r.warnings,
        continues: r.continues,
      });
      if (r.mode) this.dispatch({ type: 'mode', mode: r.mode, modes: r.availableModes ?? undefined });
      return r;
    } catch (e) {
      this.log.error(`chat/resume ${sessionId}: ${errorMessage(e)}`);
      throw e;
    }
  }

  async list(folder?: string): Promise<ChatList.Result> {
    return this.conn.sendRequest(ChatList.type, { folder: folder ?? null });
  }

  /** Sends a message (starting a session first when there is none), with the images pasted into it. */
  async send(text: string, mentions: string[] = [], images: ChatImage[] = []): Promise<string | undefined> {
    if (!text.trim() && !images.length) return undefined;
    if (this._state.running) return undefined;
    if (!this._state.sessionId) {
      const r = await this.newSession();
      if (!r) return undefined;
    }
    const sessionId = this._state.sessionId!;
    const sent = images.filter((i): i is ChatImage & { data: string } => !!i.data);
    this.dispatch({ type: 'userSend', text, mentions, ...(sent.length ? { images: sent } : {}) });
    try {
      const r = await this.conn.sendRequest(ChatSend.type, {
        sessionId,
        text,
        mentions,
        ...(sent.length ? { images: sent.map((i) => ({ mediaType: i.mediaType, data: i.data })) } : {}),
      });
      this.dispatch({ type: 'sendAccepted', turnId: r.turnId });
      return r.turnId;
    } catch (e) {
      this.dispatch({
        type: 'sendFailed',
        message: errorMessage(e),
        retryText: text,
        ...(sent.length ? { retryImages: sent } : {}),
      });
      return undefined;
    }
  }

  async cancel(): Promise<boolean> {
    const sessionId = this._state.sessionId;
    if (!sessionId) return false;
    try {
      const r = await this.conn.sendRequest(ChatCancel.type, { sessionId });
      return r.cancelled;
    } catch (e) {
      this.log.warn(`chat/cancel: ${errorMessage(e)}`);
      return false;
    }
  }

  async compact(params: Omit<CompactRun.Params, 'sessionId'>, token?: CancellationToken): Promise<CompactRun.Result> {
    const sessionId = this._state.sessionId;
    if (!sessionId) throw new Error('No chat session: start one first.');
    return this.conn.sendRequest(CompactRun.type, { ...params, sessionId }, token);
  }

  /**
   * The server went away (crash) and came back: the running turn is over, permission prompts
   * are void, and the session is resumed from its transcript.
   */
  async serverRestarted(): Promise<void> {
    for (const [key, resolve] of this.pending) {
      this.pending.delete(key);
      resolve('deny');
    }
    const sessionId = this._state.sessionId;
    this.dispatch({ type: 'interrupted', text: 'The server stopped; this turn was interrupted.' });
    if (!sessionId) return;
    try {
      await this.resume(sessionId);
      this.dispatch({ type: 'notice', text: 'The server restarted; the session was resumed from its transcript.' });
    } catch (e) {
      this.dispatch({
        type: 'notice',
        text: `The server restarted but the session could not be resumed: ${errorMessage(e)}`,
      });
    }
  }
}
