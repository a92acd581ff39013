// The Context view: the preview of the active editor (and of the chat session) as a tree.

import * as path from 'node:path';
import * as os from 'node:os';
import * as vscode from 'vscode';
import { previewTree, type TreeNode } from './core/previewTree';
import { tokens } from './core/format';
import type { Previews } from './previews';

export class ContextView implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private roots: TreeNode[] = [];
  private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  readonly view: vscode.TreeView<TreeNode>;
  private readonly parents = new Map<TreeNode, TreeNode>();

  constructor() {
    this.view = vscode.window.createTreeView('claudeContext.context', {
      treeDataProvider: this,
      showCollapseAll: true,
    });
  }

  update(p: Previews): void {
    this.parents.clear();
    if (!p.editor) {
      this.roots = [];
      this.view.message = p.error ? `No preview: ${p.error}` : 'Open a file to see what a new session would hold.';
      this.view.description = undefined;
    } else {
      this.roots = previewTree(p.editor, { home: os.homedir(), session: p.session });
      const t = p.editor.totals;
      this.view.message = undefined;
      const doc = p.document ? vscode.workspace.asRelativePath(p.document) : path.basename(p.editor.cwd);
      this.view.description = `${doc} · ${tokens(t.tokens)} tokens`;
    }
    const index = (n: TreeNode) => {
      for (const c of n.children ?? []) {
        this.parents.set(c, n);
        index(c);
      }
    };
    this.roots.forEach(index);
    this.emitter.fire(undefined);
  }

  getTreeItem(n: TreeNode): vscode.TreeItem {
    const state = n.children?.length
      ? n.expanded
        ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.Collapsed
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(n.label, state);
    item.id = n.id;
    item.description = n.description;
    item.tooltip = n.tooltip;
    if (n.icon) item.iconPath = new vscode.ThemeIcon(n.icon, n.color ? new vscode.ThemeColor(n.color) : undefined);
    item.contextValue = n.contextValue;
    if (n.open?.kind === 'file') {
      item.resourceUri = vscode.Uri.file(n.open.path);
      item.command = { command: 'claudeContext.openTarget', title: 'Open', arguments: [n.open] };
    } else if (n.open?.kind === 'text') {
      item.command = { command: 'claudeContext.openTarget', title: 'Open exact text', arguments: [n.open] };
    }
    return item;
  }

  getChildren(n?: TreeNode): TreeNode[] {
    return n ? (n.children ?? []) : this.roots;
  }

  getParent(n: TreeNode): TreeNode | undefined {
    return this.parents.get(n);
  }

  dispose(): void {
    this.view.dispose();
    this.emitter.dispose();
  }
}
