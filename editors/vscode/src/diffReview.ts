// The diff review of an edit before it runs: an `Edit` or `Write` asked about in
// `chat/permission` opens VS Code's diff editor, the file as it is (the open document, unsaved
// changes included) beside the text the edit would leave, answered from the editor's title
// (Accept / Reject) as well as from the chat's card. Whichever answers, the diff closes. The
// proposed side is a read-only virtual document (`claude-context-proposed:`); an accepted edit
// goes through the server as before (`workspace/applyEdit`: unsaved, undoable).

import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ChatController, Logger, PermissionAsk } from './core/chat';
import type { Decision } from './core/chatModel';
import { editTarget, proposedText } from './core/proposal';

export const PROPOSED_SCHEME = 'claude-context-proposed';

/** Files above this are left to the card (the diff would have to read them whole). */
const MAX_REVIEW_BYTES = 4 * 1024 * 1024;

interface Review {
  left: vscode.Uri;
  right: vscode.Uri;
}

export class DiffReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly reviews = new Map<string, Review>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly chat: ChatController,
    private readonly log: Logger,
  ) {
    this.disposables.push(vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this));
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** A permission question: opens the review when it is an edit worth one. */
  async asked(ask: PermissionAsk): Promise<void> {
    const cfg = vscode.workspace.getConfiguration('claudeContext.review');
    if (!cfg.get<boolean>('diff', true)) return;
    const file = editTarget(ask.params);
    if (!file) return;
    const uri = vscode.Uri.file(file);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === uri.fsPath);
    let current: string | undefined;
    if (doc) {
      current = doc.getText();
    } else {
      try {
        const st = await vscode.workspace.fs.stat(uri);
        if (st.size > MAX_REVIEW_BYTES) return;
        current = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      } catch {
        current = undefined; // a new file
      }
    }
    const proposed = proposedText(ask.params, current, cfg.get<number>('minLines', 4));
    if (proposed === undefined || !this.chat.isPending(ask.key)) return;
    const right = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: uri.path, query: `review=${ask.key}` });
    const left =
      current === undefined
        ? vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: uri.path, query: `review=${ask.key}&new` })
        : uri;
    this.texts.set(right.toString(), proposed);
    if (current === undefined) this.texts.set(left.toString(), '');
    this.reviews.set(ask.key, { left, right });
    const title = `${path.basename(file)}${current === undefined ? ' (new)' : ''} ↔ Claude's edit (review)`;
    try {
      await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: false, preserveFocus: false });
      this.log.info(`review of ${file} opened for ${ask.key}`);
    } catch (e) {
      this.log.warn(`the diff review of ${file} did not open: ${e instanceof Error ? e.message : String(e)}`);
      this.forget(ask.key);
    }
  }

  /** The review a command is about: the one whose proposed side `uri` is, else the active editor's, else the only one. */
  private keyOf(uri?: vscode.Uri): string | undefined {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    for (const [key, r] of this.reviews) {
      if (
        target &&
        (r.right.toString() === target.toString() ||
          (r.left.toString() === target.toString() && r.left.scheme === PROPOSED_SCHEME))
      )
        return key;
    }
    return this.reviews.size === 1 ? [...this.reviews.keys()][0] : undefined;
  }

  /** Accept or reject from the diff editor (its title buttons, the palette). */
  decide(decision: Decision, uri?: vscode.Uri): boolean {
    const key = this.keyOf(uri);
    if (!key) {
      void vscode.window.showInformationMessage('No edit is waiting for review.');
      return false;
    }
    return this.chat.decide(key, decision);
  }

  /** The question closed (answered anywhere, or withdrawn): the review goes. */
  closed(key: string): void {
    const r = this.reviews.get(key);
    if (!r) return;
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === r.right.toString());
    if (tabs.length) void vscode.window.tabGroups.close(tabs, true);
    this.forget(key);
  }

  private forget(key: string): void {
    const r = this.reviews.get(key);
    if (!r) return;
    this.reviews.delete(key);
    this.texts.delete(r.right.toString());
    this.texts.delete(r.left.toString());
  }

  /** Edits waiting for review (tests). */
  get pending(): number {
    return this.reviews.size;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
