// Read-only virtual documents for server-made text: a block's exact text, an attachment, a
// compaction dry run. `claude-context:` URIs are served from memory (rust-analyzer's pattern).

import * as vscode from 'vscode';

export const SCHEME = 'claude-context';

export class VirtualDocs implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private counter = 0;
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '(this text is no longer available: refresh the Context view)';
  }

  /** Stores `text` under a URI named after `title` and opens it read-only. */
  async open(title: string, text: string, language = 'markdown'): Promise<vscode.TextEditor> {
    const safe = title.replace(/[^\w.\- ()]+/g, '_').slice(0, 80) || 'text';
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${safe}`, query: `n=${++this.counter}` });
    this.texts.set(uri.toString(), text);
    // Keep memory bounded: the oldest texts go first.
    if (this.texts.size > 200) this.texts.delete(this.texts.keys().next().value as string);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, language);
    return vscode.window.showTextDocument(doc, { preview: true });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
