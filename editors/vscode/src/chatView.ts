// The chat's webviews: the view in the Claude Context container and any editor tabs opened with
// "Open Chat in Editor". Each is a replica of the host's conversation (ChatController): it gets
// a snapshot when it loads and then every action, batched per ~8 ms; a gap makes it ask again.

import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { type ChatAction, coalesce } from './core/chatModel';
import type { Update } from './core/chat';
import type { Decision } from './core/chatModel';
import type { ChatImage } from './core/images';

/** Messages from a webview. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'resync' }
  | { type: 'send'; text: string; mentions: string[]; images?: ChatImage[] }
  | { type: 'stop' }
  | { type: 'new' }
  | { type: 'sessions' }
  | { type: 'permission'; key: string; decision: Decision }
  | { type: 'retry'; text: string; images?: ChatImage[] }
  | { type: 'openFile'; path: string; line?: number }
  | { type: 'openLink'; href: string }
  | { type: 'mentionQuery'; query: string }
  | { type: 'addSelection' }
  | { type: 'focus'; focused: boolean }
  | { type: 'compact' }
  | { type: 'setMode'; mode: string };

/** Messages to a webview. */
export type ToWebview =
  | { type: 'snapshot'; seq: number; state: unknown; stamp: number }
  | { type: 'actions'; from: number; count: number; actions: ChatAction[]; stamp: number; textStamp?: number }
  | { type: 'mentionResults'; query: string; items: { label: string; uri: string }[] }
  | { type: 'insert'; text: string; mention?: { label: string; uri: string } }
  | { type: 'focusPrompt' };

class Replica {
  private queue: ChatAction[] = [];
  private from = 0;
  /** When the host received the batch's last action, and its last text delta (benchmark figures). */
  private stamp = 0;
  private textStamp: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly sub: vscode.Disposable;
  ready = false;

  constructor(
    readonly webview: vscode.Webview,
    private readonly views: ChatViews,
  ) {
    this.sub = views.ctx.chat.subscribe((u) => this.onUpdate(u));
  }

  private onUpdate(u: Update): void {
    if (!this.ready) return;
    if (u.kind === 'snapshot') {
      this.sendSnapshot();
      return;
    }
    if (!this.queue.length) this.from = u.seq;
    this.queue.push(u.action);
    this.stamp = Date.now();
    if (u.action.type === 'event' && u.action.event.kind === 'text') this.textStamp = this.stamp;
    this.timer ??= setTimeout(() => this.flush(), 8);
  }

  sendSnapshot(): void {
    this.queue = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const s = this.views.ctx.chat.snapshot() as Extract<Update, { kind: 'snapshot' }>;
    void this.webview.postMessage({
      type: 'snapshot',
      seq: s.seq,
      state: s.state,
      stamp: Date.now(),
    } satisfies ToWebview);
  }

  private flush(): void {
    this.timer = undefined;
    if (!this.queue.length) return;
    const actions = this.queue;
    this.queue = [];
    const textStamp = this.textStamp;
    this.textStamp = undefined;
    // Fire and forget: a webview that is gone or reloading asks for a snapshot when it is back.
    void this.webview.postMessage({
      type: 'actions',
      from: this.from,
      count: actions.length,
      actions: coalesce(actions),
      stamp: this.stamp,
      textStamp,
    } satisfies ToWebview);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.sub.dispose();
  }
}

export class ChatViews implements vscode.WebviewViewProvider, vscode.WebviewPanelSerializer, vscode.Disposable {
  static readonly viewType = 'claudeContext.chat';
  static readonly panelType = 'claudeContext.chatPanel';
  private view: vscode.WebviewView | undefined;
  private readonly replicas = new Set<Replica>();
  private readonly disposables: vscode.Disposable[] = [];
  private focused = new Set<vscode.Webview>();

  constructor(readonly ctx: Ctx) {
    this.disposables.push(
      vscode.window.registerWebviewViewProvider(ChatViews.viewType, this, {
        webviewOptions: { retainContextWhenHidden: false },
      }),
      vscode.window.registerWebviewPanelSerializer(ChatViews.panelType, this),
    );
  }

  /** The chat is on screen (the view or an editor tab). */
  get visible(): boolean {
    return !!this.view?.visible || [...this.replicas].some((r) => r.webview !== this.view?.webview && r.ready);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.setup(view.webview, () => view.onDidDispose);
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
    });
  }

  deserializeWebviewPanel(panel: vscode.WebviewPanel): Promise<void> {
    this.setupPanel(panel);
    return Promise.resolve();
  }

  openInEditor(): void {
    const panel = vscode.window.createWebviewPanel(ChatViews.panelType, 'Claude Chat', vscode.ViewColumn.Beside, {
      enableScripts: true,
      localResourceRoots: [
        vscode.Uri.joinPath(this.ctx.extensionUri, 'out'),
        vscode.Uri.joinPath(this.ctx.extensionUri, 'media'),
      ],
    });
    this.setupPanel(panel);
  }

  private setupPanel(panel: vscode.WebviewPanel): void {
    panel.iconPath = vscode.Uri.joinPath(this.ctx.extensionUri, 'media', 'icon.svg');
    this.setup(panel.webview, () => panel.onDidDispose);
  }

  async reveal(preserveFocus = false): Promise<void> {
    if (this.view) this.view.show(preserveFocus);
    else await vscode.commands.executeCommand(`${ChatViews.viewType}.focus`);
  }

  post(message: ToWebview): void {
    for (const r of this.replicas) if (r.ready) void r.webview.postMessage(message);
  }

  private setup(webview: vscode.Webview, onDispose: () => vscode.Event<void>): void {
    webview.options = {
      enableScripts: true,
      localResourceRoots: [
        vscode.Uri.joinPath(this.ctx.extensionUri, 'out'),
        vscode.Uri.joinPath(this.ctx.extensionUri, 'media'),
      ],
    };
    webview.html = this.html(webview);
    const replica = new Replica(webview, this);
    this.replicas.add(replica);
    const sub = webview.onDidReceiveMessage((m: FromWebview) => this.onMessage(replica, m));
    onDispose()(() => {
      sub.dispose();
      replica.dispose();
      this.replicas.delete(replica);
      this.focused.delete(webview);
      this.ctx.meter.setChatFocused(this.focused.size > 0);
    });
  }

  private async onMessage(replica: Replica, m: FromWebview): Promise<void> {
    const chat = this.ctx.chat;
    switch (m.type) {
      case 'ready':
      case 'resync':
        replica.ready = true;
        replica.sendSnapshot();
        return;
      case 'send':
        await this.ctx.ensureStarted();
        await chat.send(m.text, m.mentions, m.images ?? []);
        return;
      case 'retry':
        await chat.send(m.text, [], m.images ?? []);
        return;
      case 'stop':
        await chat.cancel();
        return;
      case 'new':
        await vscode.commands.executeCommand('claudeContext.newChat');
        return;
      case 'sessions':
        await vscode.commands.executeCommand('claudeContext.resumeChat');
        return;
      case 'compact':
        await vscode.commands.executeCommand('claudeContext.compact');
        return;
      case 'permission':
        chat.decide(m.key, m.decision);
        return;
      case 'setMode':
        await chat.setMode(m.mode);
        return;
      case 'openFile': {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(m.path));
        const line = m.line ?? 0;
        await vscode.window.showTextDocument(doc, { selection: new vscode.Range(line, 0, line, 0), preview: true });
        return;
      }
      case 'openLink':
        if (/^https?:/i.test(m.href)) await vscode.env.openExternal(vscode.Uri.parse(m.href));
        else if (m.href.startsWith('/')) {
          await vscode.window.showTextDocument(vscode.Uri.file(m.href.replace(/#.*$/, '')), { preview: true });
        }
        return;
      case 'mentionQuery':
        void webviewPostMention(replica.webview, m.query, await this.ctx.mentionCandidates(m.query));
        return;
      case 'addSelection':
        await vscode.commands.executeCommand('claudeContext.addSelection');
        return;
      case 'focus':
        if (m.focused) this.focused.add(replica.webview);
        else this.focused.delete(replica.webview);
        this.ctx.meter.setChatFocused(this.focused.size > 0);
        return;
    }
  }

  private html(webview: vscode.Webview): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.ctx.extensionUri, 'out', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.ctx.extensionUri, 'media', 'chat.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Claude Chat</title>
</head>
<body>
<div id="app" data-testid="chat-root"></div>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }

  dispose(): void {
    for (const r of this.replicas) r.dispose();
    this.replicas.clear();
    for (const d of this.disposables) d.dispose();
  }
}

function webviewPostMention(
  webview: vscode.Webview,
  query: string,
  items: { label: string; uri: string }[],
): Thenable<boolean> {
  return webview.postMessage({ type: 'mentionResults', query, items } satisfies ToWebview);
}
