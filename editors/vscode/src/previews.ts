// Keeps the previews the views show current: the active editor's `context/preview`, and the chat
// session's (with `sessionId`) when one is open. Refreshes on editor switches, `context/changed`,
// the end of a turn and settings changes; coalesces bursts; drops answers that were overtaken.

import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { ContextChanged, ContextPreview } from './protocol/generated';
import { check, excerpt } from './core/validate';
import { errorMessage } from './core/chat';

export interface Previews {
  /** The preview for the active editor (or the first folder). */
  editor: ContextPreview.Result | null;
  /** The chat session's preview, when a session is open. */
  session: ContextPreview.Result | null;
  /** The document the editor preview is for. */
  document: vscode.Uri | null;
  /** Why there is no preview, when there is none. */
  error: string | null;
}

export class PreviewService implements vscode.Disposable {
  private current: Previews = { editor: null, session: null, document: null, error: null };
  private readonly emitter = new vscode.EventEmitter<Previews>();
  readonly onDidChange = this.emitter.event;
  private timer: NodeJS.Timeout | undefined;
  private generation = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private lastDocument: vscode.Uri | null = null;
  /** An explicit document (code lens, command) wins over the active editor until it changes. */
  private pinned: vscode.Uri | null = null;
  /** The next refresh runs the hooks once (`claudeContext.runHooks`). */
  private runHooks = false;

  constructor(private readonly ctx: Ctx) {
    this.disposables.push(
      vscode.window.onDidChangeActiveTextEditor((e) => {
        if (e && e.document.uri.scheme === 'file') {
          this.pinned = null;
          this.schedule(50);
        }
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('claudeContext')) this.schedule(200);
      }),
    );
  }

  get value(): Previews {
    return this.current;
  }

  /** Called once per client: refresh on `context/changed`. */
  attach(client: {
    onNotification: (t: typeof ContextChanged.type, h: (p: ContextChanged.Params) => void) => vscode.Disposable;
  }): vscode.Disposable {
    return client.onNotification(ContextChanged.type, (p) => {
      const uris = p?.uris;
      const doc = this.current.document?.toString();
      if (!uris || !doc || uris.includes(doc) || this.current.session) this.schedule(30);
    });
  }

  /** Shows the preview of `uri` (the code lens's `claudeContext.showPreview`). */
  show(uri: vscode.Uri): void {
    this.pinned = uri;
    this.schedule(0);
  }

  /** The next refresh runs the SessionStart and UserPromptSubmit hooks once (`runHooks`). */
  runHooksOnce(): void {
    this.runHooks = true;
    this.schedule(0);
  }

  schedule(ms = 50): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, ms);
  }

  private documentFor(): vscode.Uri | null {
    if (this.pinned) return this.pinned;
    const e = vscode.window.activeTextEditor;
    if (e && e.document.uri.scheme === 'file') {
      this.lastDocument = e.document.uri;
      return e.document.uri;
    }
    // The chat or a view has focus: keep the last file editor's preview.
    return this.lastDocument;
  }

  async refresh(): Promise<void> {
    const client = this.ctx.client;
    if (!client || !this.ctx.running) return;
    const gen = ++this.generation;
    const document = this.documentFor();
    const sessionId = this.ctx.chat.sessionId;
    const runHooks = this.runHooks;
    this.runHooks = false;
    const ask = async (params: ContextPreview.Params): Promise<ContextPreview.Result | null> => {
      const raw = await client.sendRequest(ContextPreview.type, params);
      const c = check<ContextPreview.Result>(ContextPreview.resultSchema, raw);
      if (!c.ok) {
        this.ctx.log.warn(`context/preview result does not fit its schema (${c.error}): ${excerpt(raw)}`);
        return null;
      }
      return c.value;
    };
    try {
      const [editor, session] = await Promise.all([
        ask({ textDocument: document ? { uri: document.toString() } : null, ...(runHooks ? { runHooks: true } : {}) }),
        sessionId
          ? ask({ sessionId, textDocument: document ? { uri: document.toString() } : null }).catch((e) => {
              this.ctx.log.info(`context/preview of session ${sessionId}: ${errorMessage(e)}`);
              return null;
            })
          : Promise.resolve(null),
      ]);
      if (gen !== this.generation) return;
      this.current = {
        editor,
        session,
        document,
        error: editor ? null : 'The server sent a preview this version cannot read (see the log).',
      };
    } catch (e) {
      if (gen !== this.generation) return;
      this.ctx.log.warn(`context/preview: ${errorMessage(e)}`);
      this.current = { ...this.current, error: errorMessage(e) };
    }
    this.emitter.fire(this.current);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
    this.emitter.dispose();
  }
}
