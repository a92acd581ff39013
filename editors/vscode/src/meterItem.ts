// The status-bar meter: `tokens / window` of the next request, always visible; the chat session's
// real figures when the chat has focus; the server's state when it is not running.

import * as vscode from 'vscode';
import { fromPreview, fromUsage, type MeterModel } from './core/meter';
import type { Previews } from './previews';
import type { UsageReport } from './core/chatModel';

export type ServerState = 'starting' | 'running' | 'restarting' | 'stopped' | 'failed';

export class MeterItem implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private server: ServerState = 'starting';
  private serverMessage = '';
  private previews: Previews | null = null;
  private usage: UsageReport | null = null;
  private chatFocused = false;
  /** The figure currently shown (for tests and the benchmark). */
  model: MeterModel | null = null;

  constructor() {
    this.item = vscode.window.createStatusBarItem('claudeContext.meter', vscode.StatusBarAlignment.Right, 1000);
    this.item.name = 'Claude Context';
    this.item.command = 'claudeContext.meterMenu';
    this.render();
    this.item.show();
  }

  setServer(state: ServerState, message = ''): void {
    this.server = state;
    this.serverMessage = message;
    this.render();
  }

  setPreviews(p: Previews): void {
    this.previews = p;
    this.render();
  }

  setUsage(u: UsageReport | null): void {
    this.usage = u;
    this.render();
  }

  setChatFocused(focused: boolean): void {
    if (this.chatFocused === focused) return;
    this.chatFocused = focused;
    this.render();
  }

  private render(): void {
    const it = this.item;
    it.backgroundColor = undefined;
    it.color = undefined;
    if (this.server !== 'running') {
      const text: Record<ServerState, string> = {
        starting: '$(loading~spin) Claude',
        restarting: '$(loading~spin) Claude: restarting',
        running: '',
        stopped: '$(debug-disconnect) Claude: server stopped',
        failed: '$(error) Claude: server failed',
      };
      it.text = text[this.server];
      it.tooltip = new vscode.MarkdownString(
        `**Claude Context**: ${this.server}${this.serverMessage ? `\n\n${this.serverMessage}` : ''}\n\nClick for actions.`,
      );
      if (this.server === 'failed' || this.server === 'stopped')
        it.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      this.model = null;
      return;
    }
    const p = this.previews;
    let model: MeterModel | null = null;
    if (this.chatFocused && this.usage) {
      // The API's own figures for the session's last answer.
      model = fromUsage(
        this.usage,
        p?.session?.totals.autoCompactThreshold ?? p?.editor?.totals.autoCompactThreshold ?? null,
      );
    } else if (this.chatFocused && p?.session) {
      model = fromPreview(p.session, 'chat session (next request, estimated)');
    } else if (p?.editor) {
      model = fromPreview(
        p.editor,
        p.document ? `a new session on ${vscode.workspace.asRelativePath(p.document)}` : 'a new session',
      );
    }
    this.model = model;
    if (!model) {
      it.text = '$(symbol-namespace) Claude';
      it.tooltip = p?.error ? `Claude Context: ${p.error}` : 'Claude Context: no preview yet';
      return;
    }
    it.text = `$(symbol-namespace) ${model.text}`;
    const md = new vscode.MarkdownString(model.tooltip + '\n\nClick for actions.');
    it.tooltip = md;
    if (model.level === 'warning') it.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    if (model.level === 'error') it.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
  }

  dispose(): void {
    this.item.dispose();
  }
}
