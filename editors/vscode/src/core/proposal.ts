/**
 * What an `Edit` or `Write` asked about in `chat/permission` would leave in its file, for the diff
 * review: computed from the tool's input exactly as the server applies it (the first occurrence
 * of `old_string`, or all of them with `replace_all`; `Write` replaces the whole text). Small
 * edits keep the compact card. Pure: unit-tested, shared semantics with the Neovim plugin's
 * `diff.lua`.
 */

/** The tool call, as `chat/permission` sends it. */
export interface EditAsk {
  tool: string;
  input?: unknown;
}

/** The file an `Edit`/`Write` targets, or undefined for any other call. */
export function editTarget(ask: EditAsk): string | undefined {
  if (ask.tool !== 'Edit' && ask.tool !== 'Write') return undefined;
  const input = (ask.input ?? {}) as Record<string, unknown>;
  return typeof input.file_path === 'string' && input.file_path !== '' ? input.file_path : undefined;
}

function lineCount(text: string): number {
  if (text === '') return 0;
  const n = text.split('\n').length;
  return text.endsWith('\n') ? n - 1 : n;
}

/**
 * The proposed text, or undefined when there is nothing to review: not an edit, fewer than
 * `minLines` lines touched, or an `old_string` not in `current` (the compact card asks then; the
 * server reports the failure as always). `current` is undefined for a file that does not exist.
 */
export function proposedText(ask: EditAsk, current: string | undefined, minLines: number): string | undefined {
  if (!editTarget(ask)) return undefined;
  const input = (ask.input ?? {}) as Record<string, unknown>;
  if (ask.tool === 'Edit') {
    const oldS = input.old_string;
    const newS = input.new_string;
    if (typeof oldS !== 'string' || typeof newS !== 'string' || oldS === '' || current === undefined) return undefined;
    if (Math.max(lineCount(oldS), lineCount(newS)) < minLines) return undefined;
    const at = current.indexOf(oldS);
    if (at < 0) return undefined;
    if (input.replace_all === true) return current.split(oldS).join(newS);
    return current.slice(0, at) + newS + current.slice(at + oldS.length);
  }
  const content = input.content;
  if (typeof content !== 'string') return undefined;
  if (Math.max(lineCount(content), lineCount(current ?? '')) < minLines) return undefined;
  return content;
}
