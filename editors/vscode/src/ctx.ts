// The extension's context (rust-analyzer's shape): owns the language client and its restarts,
// the output channel, the meter, the Context view, the chat (controller and webviews) and the
// virtual documents. Commands are factories of it (commands.ts).

import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type CloseHandlerResult,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { findServer } from './bootstrap';
import { ChatController, type PermissionAsk } from './core/chat';
import { permissionWords } from './core/permission';
import { initializationOptions, trustGranted } from './core/trust';
import { TrustChanged } from './protocol/generated';
import { DiffReview } from './diffReview';
import { ChatViews } from './chatView';
import { ContextView } from './contextView';
import { MeterItem } from './meterItem';
import { PreviewService } from './previews';
import { VirtualDocs, SCHEME } from './virtualDocs';
import type { Decision } from './core/chatModel';

/** At most this many automatic restarts within RESTART_WINDOW_MS; then the server stays down. */
export const MAX_RESTARTS = 4;
export const RESTART_WINDOW_MS = 3 * 60_000;
const SESSION_KEY = 'claudeContext.chat.sessionId';

/** The `claudeContext` settings as the server reads them (the extension's own keys left out). */
export function serverSettings(): Record<string, unknown> {
  const all = JSON.parse(JSON.stringify(vscode.workspace.getConfiguration('claudeContext'))) as Record<string, unknown>;
  delete all.server;
  delete all.trace;
  delete all.review;
  return all;
}

export class Ctx implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  client: LanguageClient | undefined;
  readonly chat: ChatController;
  readonly meter: MeterItem;
  readonly contextView: ContextView;
  readonly previews: PreviewService;
  readonly chatViews: ChatViews;
  readonly docs: VirtualDocs;
  readonly review: DiffReview;
  private readonly disposables: vscode.Disposable[] = [];
  private clientDisposables: vscode.Disposable[] = [];
  private restarts: number[] = [];
  private crashed = false;
  private starting: Promise<void> | undefined;
  private serverPath: string | undefined;
  /** Workspace files for `@` mentions (relative path → URI), listed once and kept current. */
  private files: Map<string, string> | undefined;

  /** When activate() ran (performance.now()), for the first-figure timing in the log. */
  private readonly activatedAt = performance.now();
  private firstFigureLogged = false;
  private serverStartedAt = 0;

  constructor(readonly ext: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Claude Context', { log: true });
    this.docs = new VirtualDocs();
    this.meter = new MeterItem();
    this.contextView = new ContextView();
    this.previews = new PreviewService(this);
    this.chat = new ChatController(
      {
        // Until the client exists; replaced by attach().
        sendRequest: () => Promise.reject(new Error('the server is not running')),
        onNotification: () => ({ dispose() {} }),
        onRequest: () => ({ dispose() {} }),
      },
      this.log,
      {
        permissionAsked: (ask) => this.permissionAsked(ask),
        sessionChanged: () => this.previews.schedule(0),
      },
    );
    this.chatViews = new ChatViews(this);
    this.review = new DiffReview(this.chat, this.log);
    this.disposables.push(
      this.review,
      this.log,
      this.docs,
      this.meter,
      this.contextView,
      this.previews,
      this.chatViews,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this.docs),
      this.previews.onDidChange((p) => {
        this.contextView.update(p);
        this.meter.setPreviews(p);
        if (!this.firstFigureLogged && this.meter.model) {
          this.firstFigureLogged = true;
          const now = performance.now();
          this.log.info(
            `first figure on the meter ${Math.round(now - this.activatedAt)} ms after activation (server running after ${Math.round(this.serverStartedAt - this.activatedAt)} ms)`,
          );
        }
      }),
      this.chat.subscribe((u) => {
        if (u.kind !== 'action') return;
        const a = u.action;
        if (a.type === 'event' && a.event.kind === 'usage') this.meter.setUsage(this.chat.state.usage);
        if (a.type === 'event' && a.event.kind === 'done') this.previews.schedule(0);
        if (a.type === 'history' || a.type === 'reset') this.meter.setUsage(this.chat.state.usage);
        if (a.type === 'permissionClosed') this.review.closed(a.key);
        if (a.type === 'sendAccepted') void this.ext.workspaceState.update(SESSION_KEY, this.chat.sessionId);
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('claudeContext.server.path')) {
          void vscode.window
            .showInformationMessage(
              'claudeContext.server.path changed: restart the server to use it.',
              'Restart Server',
            )
            .then((c) => c && this.restart());
        }
      }),
      // Working in an editor: the meter is about the file again, not the chat.
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (e.kind !== undefined) this.meter.setChatFocused(false);
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.meter.setChatFocused(false)),
      vscode.workspace.onDidCreateFiles(() => (this.files = undefined)),
      vscode.workspace.onDidDeleteFiles(() => (this.files = undefined)),
      vscode.workspace.onDidRenameFiles(() => (this.files = undefined)),
    );
  }

  get extensionUri(): vscode.Uri {
    return this.ext.extensionUri;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Starts the server once; later calls wait for the same start. */
  ensureStarted(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<void> {
    this.meter.setServer('starting');
    const setting = vscode.workspace.getConfiguration('claudeContext').get<string | null>('server.path');
    const found = await findServer(setting, this.ext.extensionPath);
    if (!found.ok) {
      this.log.error(found.message);
      this.meter.setServer('failed', found.message);
      void vscode.window.showErrorMessage(found.message, 'Open Settings', 'Show Log').then((c) => {
        if (c === 'Open Settings')
          void vscode.commands.executeCommand('workbench.action.openSettings', 'claudeContext.server.path');
        if (c === 'Show Log') this.log.show();
      });
      return;
    }
    this.serverPath = found.path;
    this.log.info(`server: ${found.path} (${found.source}, version ${found.version})`);
    const serverOptions: ServerOptions = {
      command: found.path,
      args: ['lsp'],
      options: { env: { ...process.env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      // VS Code's workspace trust is the answer (Restricted Mode: untrusted, no question).
      initializationOptions: () => initializationOptions(serverSettings(), vscode.workspace.isTrusted),
      synchronize: { configurationSection: 'claudeContext' },
      outputChannel: this.log,
      traceOutputChannel: this.log,
      markdown: { isTrusted: false, supportHtml: false },
      errorHandler: {
        error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue }),
        closed: (): CloseHandlerResult => this.onClosed(),
      },
    };
    const client = new LanguageClient('claudeContext', 'Claude Context', serverOptions, clientOptions);
    this.client = client;
    for (const d of this.clientDisposables.splice(0)) d.dispose();
    this.chat.attach(client);
    this.clientDisposables.push(
      this.previews.attach(client),
      // Trust granted later: the server's sessions and previews follow (no reload needed).
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        if (client.state === State.Running) void client.sendNotification(TrustChanged.type, trustGranted());
      }),
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.meter.setServer('running');
          if (this.crashed) {
            this.crashed = false;
            this.log.info('server restarted after a crash; resuming the chat session');
            void this.chat.serverRestarted();
          }
          this.previews.schedule(0);
        } else if (e.newState === State.Stopped && !this.crashed) {
          this.meter.setServer('stopped', 'The server is not running. Click to restart it.');
        }
      }),
    );
    try {
      await client.start();
    } catch (e) {
      const message = `claude-context (${found.path}) failed to start: ${e instanceof Error ? e.message : String(e)}`;
      this.log.error(message);
      this.meter.setServer('failed', message);
      void vscode.window.showErrorMessage(message, 'Show Log').then((c) => c && this.log.show());
      return;
    }
    this.serverStartedAt = performance.now();
    this.meter.setServer('running');
    this.previews.schedule(0);
    void this.resumeRemembered();
  }

  /** The connection closed without a stop: restart (at most MAX_RESTARTS in RESTART_WINDOW_MS). */
  private onClosed(): CloseHandlerResult {
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    this.crashed = true;
    this.chat.dispatch({ type: 'interrupted', text: 'The server stopped; this turn was interrupted.' });
    if (this.restarts.length < MAX_RESTARTS) {
      this.restarts.push(now);
      const message = `claude-context stopped unexpectedly; restarting it (${this.restarts.length} of ${MAX_RESTARTS} in 3 minutes).`;
      this.log.warn(message);
      this.meter.setServer('restarting', message);
      return { action: CloseAction.Restart, message, handled: true };
    }
    const message = `claude-context stopped ${MAX_RESTARTS + 1} times in 3 minutes and will not be restarted. See the log, then run "Claude Context: Restart Server".`;
    this.log.error(message);
    this.meter.setServer('failed', message);
    void vscode.window.showErrorMessage(message, 'Restart Server', 'Show Log').then((c) => {
      if (c === 'Restart Server') void this.restart();
      if (c === 'Show Log') this.log.show();
    });
    return { action: CloseAction.DoNotRestart, message, handled: true };
  }

  /** Stops the server (if any) and starts it again, finding the binary anew. */
  async restart(): Promise<void> {
    this.restarts = [];
    const old = this.client;
    this.client = undefined;
    if (old) {
      try {
        await old.stop(5000);
      } catch (e) {
        this.log.warn(`stopping the server: ${e instanceof Error ? e.message : String(e)}`);
      }
      await old.dispose();
    }
    const hadSession = this.chat.sessionId;
    await this.ensureStarted();
    if (hadSession && this.running) await this.chat.serverRestarted();
  }

  /** Resumes the session this workspace had open (after a reload of VS Code). */
  private async resumeRemembered(): Promise<void> {
    const id = this.ext.workspaceState.get<string>(SESSION_KEY);
    if (!id || this.chat.sessionId) return;
    try {
      await this.chat.resume(id);
      this.log.info(`chat session ${id} resumed`);
    } catch {
      await this.ext.workspaceState.update(SESSION_KEY, undefined);
    }
  }

  /** A permission prompt while the chat is not on screen: a notification with the same choices. */
  private permissionAsked(ask: PermissionAsk): void {
    void this.review.asked(ask);
    if (this.chatViews.visible) return;
    const words = permissionWords(ask.params);
    const { allow: once, allowSession: session, deny } = words;
    const choices = session ? [once, session, deny, 'Show Chat'] : [once, deny, 'Show Chat'];
    const warning = ask.params.warning ? ` ⚠ ${ask.params.warning}` : '';
    void vscode.window.showWarningMessage(`${words.title}${warning}`, { modal: false }, ...choices).then((choice) => {
      if (!this.chat.isPending(ask.key)) return;
      const d: Decision | undefined =
        choice === once ? 'allow' : choice === session ? 'allowSession' : choice === deny ? 'deny' : undefined;
      if (d) this.chat.decide(ask.key, d);
      else if (choice === 'Show Chat') void this.chatViews.reveal();
    });
  }

  /** Workspace files matching an `@` query (relative path). */
  async mentionCandidates(query: string): Promise<{ label: string; uri: string }[]> {
    if (!this.files) {
      const uris = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git,target,out,dist}/**', 20_000);
      this.files = new Map(uris.map((u) => [vscode.workspace.asRelativePath(u, false), u.toString()]));
    }
    const q = query.toLowerCase();
    const scored: { label: string; uri: string; score: number }[] = [];
    for (const [label, uri] of this.files) {
      const l = label.toLowerCase();
      const i = l.indexOf(q);
      if (q && i < 0) continue;
      const base = l.lastIndexOf('/') + 1;
      scored.push({ label, uri, score: (i >= base ? 0 : 1000) + i + label.length / 100 });
    }
    scored.sort((a, b) => a.score - b.score);
    return scored.slice(0, 30).map(({ label, uri }) => ({ label, uri }));
  }

  dispose(): void {
    for (const d of this.clientDisposables) d.dispose();
    this.chat.dispose();
    for (const d of this.disposables) d.dispose();
  }

  /** Stops the client (deactivate). */
  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) await c.stop(5000).catch(() => undefined);
  }

  get serverBinary(): string | undefined {
    return this.serverPath;
  }
}
