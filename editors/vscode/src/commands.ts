// Commands, each a factory of the Ctx (rust-analyzer's pattern).

import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { errorMessage } from './core/chat';
import { tokens } from './core/format';
import type { OpenTarget } from './core/previewTree';
import type { CompactRun } from './protocol/generated';
import { compactSummary, dryRunReport } from './core/compactReport';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- VS Code passes commands whatever their caller chose.
type Cmd = (ctx: Ctx) => (...args: any[]) => unknown;

export const previewContext: Cmd = (ctx) => async (uri?: vscode.Uri | string) => {
  await ctx.ensureStarted();
  const target = typeof uri === 'string' ? vscode.Uri.parse(uri) : uri;
  if (target) ctx.previews.show(target);
  else ctx.previews.schedule(0);
  await vscode.commands.executeCommand('claudeContext.context.focus');
};

/** Runs the SessionStart and UserPromptSubmit hooks once (a trusted folder only) and shows what
 * they say in the Context view, as one run's output. The preview never runs them otherwise. */
export const runHooks: Cmd = (ctx) => async () => {
  await ctx.ensureStarted();
  ctx.previews.runHooksOnce();
  await vscode.commands.executeCommand('claudeContext.context.focus');
};

/** The server's code lens command: the preview of the instruction file's document. */
export const showPreview: Cmd = previewContext;

export const openTarget: Cmd = (ctx) => async (t: OpenTarget) => {
  if (t.kind === 'file') {
    const line = t.line ?? 0;
    await vscode.window.showTextDocument(vscode.Uri.file(t.path), {
      selection: new vscode.Range(line, 0, line, 0),
      preview: true,
    });
  } else {
    await ctx.docs.open(t.title, t.text);
  }
};

async function needSession(ctx: Ctx): Promise<boolean> {
  await ctx.ensureStarted();
  if (ctx.chat.sessionId) return true;
  void vscode.window.showInformationMessage('No chat session: start one in the Claude Chat view first.');
  return false;
}

async function pickMode(title: string): Promise<CompactRun.CompactMode | undefined> {
  const items: (vscode.QuickPickItem & { mode: CompactRun.CompactMode })[] = [
    { label: 'auto', description: 'what the session would do: masking when enough, else a summary', mode: 'auto' },
    { label: 'micro', description: 'clear old tool results (the newest are kept)', mode: 'micro' },
    { label: 'full', description: 'summarise the conversation (every message you wrote kept verbatim)', mode: 'full' },
  ];
  return (await vscode.window.showQuickPick(items, { title }))?.mode;
}

export const compact: Cmd = (ctx) => async (modeArg?: CompactRun.CompactMode, focusArg?: string) => {
  if (!(await needSession(ctx))) return;
  const mode = modeArg ?? (await pickMode('Compact the chat session'));
  if (!mode) return;
  let instructions = focusArg;
  if (instructions === undefined && mode !== 'micro') {
    instructions = await vscode.window.showInputBox({
      title: 'Focus of the summary (optional)',
      prompt: 'What the summary must keep, e.g. "the API design decisions". Leave empty for none.',
    });
    if (instructions === undefined) return;
  }
  try {
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Compacting (${mode})…`, cancellable: true },
      async (_p, token) => {
        const cancel = token.onCancellationRequested(() => void ctx.chat.cancel());
        try {
          return await ctx.chat.compact({ mode, instructions: instructions || null, dryRun: false });
        } finally {
          cancel.dispose();
        }
      },
    );
    ctx.chat.dispatch({ type: 'notice', text: compactSummary(r) });
    void vscode.window.showInformationMessage(compactSummary(r));
    ctx.previews.schedule(0);
  } catch (e) {
    void vscode.window.showErrorMessage(`Compaction failed: ${errorMessage(e)}`);
  }
};

export const compactDryRun: Cmd = (ctx) => async (modeArg?: CompactRun.CompactMode) => {
  if (!(await needSession(ctx))) return;
  const mode = modeArg ?? (await pickMode('Compaction dry run: what would go?'));
  if (!mode) return;
  try {
    const r = await ctx.chat.compact({ mode, dryRun: true });
    await ctx.docs.open(`Compaction dry run (${mode})`, dryRunReport(r));
  } catch (e) {
    void vscode.window.showErrorMessage(`Dry run failed: ${errorMessage(e)}`);
  }
};

export const newChat: Cmd = (ctx) => async () => {
  await ctx.ensureStarted();
  if (ctx.chat.state.running) await ctx.chat.cancel();
  await ctx.chatViews.reveal();
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
  await ctx.chat.newSession(folder);
  ctx.chatViews.post({ type: 'focusPrompt' });
};

/** With pending instruction edits: a new session sees them. */
export const newChatWithEdits: Cmd = newChat;

export const resumeChat: Cmd = (ctx) => async (sessionId?: string) => {
  await ctx.ensureStarted();
  let id = sessionId;
  if (!id) {
    let list;
    try {
      list = await ctx.chat.list();
    } catch (e) {
      void vscode.window.showErrorMessage(`Cannot list sessions: ${errorMessage(e)}`);
      return;
    }
    const items = list.sessions.map((s) => ({
      label: `${s.readOnly ? '$(lock) ' : ''}${s.title ?? s.firstPrompt ?? s.sessionId}`,
      description: `${s.updatedAt ? new Date(s.updatedAt).toLocaleString() : ''}${s.running ? ' · running' : ''}`,
      detail: s.readOnly
        ? 'Claude Code session (read-only: continues in a new session of ours)'
        : `${path.basename(s.cwd)} · ${tokens(s.bytes)} bytes`,
      id: s.sessionId,
    }));
    if (!items.length) {
      void vscode.window.showInformationMessage('No chat sessions in this workspace yet.');
      return;
    }
    const pick = await vscode.window.showQuickPick(items, {
      title: 'Resume a chat session',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!pick) return;
    id = pick.id;
  }
  try {
    await ctx.chat.resume(id);
    await ctx.chatViews.reveal();
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot resume ${id}: ${errorMessage(e)}`);
  }
};

export const stop: Cmd = (ctx) => async () => {
  await ctx.chat.cancel();
};

export const openTranscript: Cmd = (ctx) => async () => {
  if (!(await needSession(ctx))) return;
  const id = ctx.chat.sessionId!;
  let file = ctx.chat.state.transcript;
  if (!file) {
    const list = await ctx.chat.list().catch(() => undefined);
    file = list?.sessions.find((s) => s.sessionId === id)?.path;
  }
  if (!file) {
    void vscode.window.showInformationMessage(
      'This session has no transcript yet (it is written with the first message).',
    );
    return;
  }
  try {
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
  } catch {
    void vscode.window.showInformationMessage(
      `The transcript ${file} does not exist yet (it is written with the first message).`,
    );
  }
};

export const restartServer: Cmd = (ctx) => async () => {
  await ctx.restart();
};

export const showLog: Cmd = (ctx) => () => ctx.log.show();

export const focusChat: Cmd = (ctx) => async () => {
  await ctx.chatViews.reveal();
  ctx.chatViews.post({ type: 'focusPrompt' });
};

export const openChatInEditor: Cmd = (ctx) => () => ctx.chatViews.openInEditor();

/** Adds the editor's selection to the prompt, as a fenced block naming the file and lines. */
export const addSelection: Cmd = (ctx) => async () => {
  const e = vscode.window.activeTextEditor;
  if (!e) return;
  const sel = e.selection;
  const text = e.document.getText(sel.isEmpty ? e.document.lineAt(sel.active.line).range : sel);
  const rel = vscode.workspace.asRelativePath(e.document.uri, false);
  const lines = sel.isEmpty ? `${sel.active.line + 1}` : `${sel.start.line + 1}-${sel.end.line + 1}`;
  const fence = text.includes('```') ? '````' : '```';
  const block = `@${rel} (lines ${lines}):\n${fence}${e.document.languageId}\n${text}\n${fence}\n`;
  await ctx.chatViews.reveal(true);
  ctx.chatViews.post({
    type: 'insert',
    text: block,
    mention: e.document.uri.scheme === 'file' ? { label: rel, uri: e.document.uri.toString() } : undefined,
  });
};

/** Choose the chat session's output style (Claude Code's: Explanatory, Learning, yours, plugins'). */
export const chatStyle: Cmd = (ctx) => async (styleArg?: string) => {
  if (!(await needSession(ctx))) return;
  try {
    let style = styleArg;
    if (style === undefined) {
      const listed = await ctx.chat.setStyle();
      style = await vscode.window.showQuickPick(listed.available, { title: `Output style (now ${listed.style})` });
      if (style === undefined) return;
    }
    await ctx.chat.setStyle(style);
  } catch (e) {
    void vscode.window.showWarningMessage(`The output style was not changed: ${errorMessage(e)}`);
  }
};

export const meterMenu: Cmd = (_ctx) => async () => {
  const items: (vscode.QuickPickItem & { command: string })[] = [
    { label: '$(list-tree) Open the Context view', command: 'claudeContext.previewContext' },
    { label: '$(comment-discussion) Open the chat', command: 'claudeContext.focusChat' },
    { label: '$(fold) Compact the chat session…', command: 'claudeContext.compact' },
    { label: '$(beaker) Compaction dry run…', command: 'claudeContext.compactDryRun' },
    { label: '$(debug-restart) Restart the server', command: 'claudeContext.restartServer' },
    { label: '$(output) Show the log', command: 'claudeContext.showLog' },
  ];
  const pick = await vscode.window.showQuickPick(items, { title: 'Claude Context' });
  if (pick) await vscode.commands.executeCommand(pick.command);
};

/** Accept the edit under review (the diff editor's title, the palette). */
export const acceptEdit: Cmd = (ctx) => (uri?: vscode.Uri) =>
  ctx.review.decide('allow', uri instanceof vscode.Uri ? uri : undefined);

/** Reject the edit under review. */
export const rejectEdit: Cmd = (ctx) => (uri?: vscode.Uri) =>
  ctx.review.decide('deny', uri instanceof vscode.Uri ? uri : undefined);

export const COMMANDS: Record<string, Cmd> = {
  'claudeContext.previewContext': previewContext,
  'claudeContext.showPreview': showPreview,
  'claudeContext.openTarget': openTarget,
  'claudeContext.runHooks': runHooks,
  'claudeContext.compact': compact,
  'claudeContext.compactDryRun': compactDryRun,
  'claudeContext.newChat': newChat,
  'claudeContext.newChatWithEdits': newChatWithEdits,
  'claudeContext.resumeChat': resumeChat,
  'claudeContext.stop': stop,
  'claudeContext.openTranscript': openTranscript,
  'claudeContext.restartServer': restartServer,
  'claudeContext.showLog': showLog,
  'claudeContext.focusChat': focusChat,
  'claudeContext.openChatInEditor': openChatInEditor,
  'claudeContext.addSelection': addSelection,
  'claudeContext.meterMenu': meterMenu,
  'claudeContext.chatStyle': chatStyle,
  'claudeContext.acceptEdit': acceptEdit,
  'claudeContext.rejectEdit': rejectEdit,
};
