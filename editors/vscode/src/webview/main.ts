// The chat webview: a replica of the host's conversation, rendered once per animation frame.
//
// It receives a snapshot of the state and then the host's actions in order, runs the same reducer
// as the host (core/chatModel), and redraws only the items whose object changed (the reducer
// never mutates, so identity tells). Scroll follows the end only while the user is at the end.

import MarkdownIt from 'markdown-it';
import { type ChatItem, type ChatState, initialState, reduce } from '../core/chatModel';
import { tokens, windowSize, basename } from '../core/format';
import { permissionStyles, permissionWords } from '../core/permission';
import { type ChatImage, describeImage, fromDataUrl, refuseImage, toDataUrl } from '../core/images';
import type { FromWebview, ToWebview } from '../chatView';

declare function acquireVsCodeApi(): {
  postMessage(m: FromWebview): void;
  getState(): unknown;
  setState(s: unknown): void;
};
const vscode = acquireVsCodeApi();

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

let state: ChatState = initialState();
let seq = -1;
let waitingSnapshot = true;
/** Benchmark figures, read by the end-to-end tests. */
const stats = {
  frames: 0,
  lastLagMs: -1,
  maxLagMs: 0,
  pendingStamp: 0,
  applied: 0,
  textStamp: 0,
  lastTextLagMs: -1,
  lastTextRecvLagMs: -1,
  maxRenderMs: 0,
  lastRenderMs: 0,
};
(window as unknown as { __ccStats: typeof stats }).__ccStats = stats;

// ---- DOM skeleton -----------------------------------------------------------------------------

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) el.append(c);
  return el;
}

const app = document.getElementById('app')!;
const header = h('div', { class: 'header' });
const sessionLabel = h('span', { class: 'session', 'data-testid': 'session' });
const usageLabel = h('span', { class: 'usage', 'data-testid': 'usage' });
const newBtn = h('button', { class: 'icon', title: 'New chat', 'data-testid': 'new' }, 'New');
const sessionsBtn = h(
  'button',
  { class: 'icon', title: 'Sessions (yours and Claude Code’s)', 'data-testid': 'sessions' },
  'Sessions',
);
header.append(sessionLabel, usageLabel, sessionsBtn, newBtn);
const log = h('div', { class: 'log', 'data-testid': 'log', role: 'log', 'aria-live': 'polite' });
const empty = h(
  'div',
  { class: 'empty' },
  'Ask about this workspace. Type @ to mention a file; paste or drop an image to attach it.',
);
const status = h('div', { class: 'status', 'data-testid': 'status' });
const mentionList = h('div', { class: 'mentions hidden', 'data-testid': 'mention-list', role: 'listbox' });
/** The images attached to the message being written: thumbnails with a remove button, above the input. */
const imageTray = h('div', { class: 'images hidden', 'data-testid': 'image-tray' });
const imageNote = h('div', { class: 'image-note hidden', 'data-testid': 'image-note', role: 'alert' });
const prompt = h('textarea', {
  class: 'prompt',
  rows: '3',
  placeholder: 'Message Claude (Enter to send, Shift+Enter for a new line, @ to mention a file)',
  'data-testid': 'prompt',
  'aria-label': 'Message',
});
const sendBtn = h('button', { class: 'primary', 'data-testid': 'send', title: 'Send (Enter)' }, 'Send');
const stopBtn = h('button', { class: 'danger hidden', 'data-testid': 'stop', title: 'Stop (Escape)' }, 'Stop');
const selBtn = h(
  'button',
  { class: 'icon', 'data-testid': 'add-selection', title: 'Add the editor selection' },
  '+ Selection',
);
/** The permission mode picker: the session's mode (Claude Code's modes), switched with `chat/setMode`. */
const modeSelect = h('select', {
  class: 'mode',
  'data-testid': 'mode',
  title: 'Permission mode',
  'aria-label': 'Permission mode',
});
modeSelect.addEventListener('change', () => vscode.postMessage({ type: 'setMode', mode: modeSelect.value }));
const footer = h(
  'div',
  { class: 'footer' },
  mentionList,
  imageNote,
  imageTray,
  prompt,
  h('div', { class: 'buttons' }, selBtn, modeSelect, h('span', { class: 'grow' }), stopBtn, sendBtn),
);
app.append(header, log, status, footer);
log.append(empty);

// ---- rendering --------------------------------------------------------------------------------

const rendered = new Map<number, { item: ChatItem; el: HTMLElement }>();
let scheduled = false;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(render);
}

function atEnd(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 24;
}

function render(): void {
  scheduled = false;
  const t0 = performance.now();
  stats.frames++;
  const follow = atEnd();
  const live = new Set<number>();
  let prev: HTMLElement | null = null;
  for (const item of state.items) {
    live.add(item.id);
    const r = rendered.get(item.id);
    if (r && r.item === item) {
      prev = r.el;
      continue;
    }
    const el = renderItem(item, r?.el);
    if (!r) {
      if (prev) prev.after(el);
      else log.prepend(el);
    } else if (r.el !== el) r.el.replaceWith(el);
    rendered.set(item.id, { item, el });
    prev = el;
  }
  for (const [id, r] of rendered) {
    if (!live.has(id)) {
      r.el.remove();
      rendered.delete(id);
    }
  }
  empty.classList.toggle('hidden', state.items.length > 0);
  renderChrome();
  if (follow) log.scrollTop = log.scrollHeight;
  if (stats.pendingStamp) {
    const lag = Date.now() - stats.pendingStamp;
    stats.lastLagMs = lag;
    stats.maxLagMs = Math.max(stats.maxLagMs, lag);
    stats.pendingStamp = 0;
    document.body.dataset.renderLag = String(lag);
  }
  if (stats.textStamp) {
    stats.lastTextLagMs = Date.now() - stats.textStamp;
    stats.textStamp = 0;
  }
  stats.lastRenderMs = performance.now() - t0;
  stats.maxRenderMs = Math.max(stats.maxRenderMs, stats.lastRenderMs);
  document.body.dataset.seq = String(seq);
}

function renderModes(): void {
  const ids = state.modes.map((m) => m.id).join(',');
  if (modeSelect.dataset.ids !== ids) {
    modeSelect.replaceChildren(...state.modes.map((m) => h('option', { value: m.id, title: m.description }, m.name)));
    modeSelect.dataset.ids = ids;
  }
  if (modeSelect.value !== state.mode) modeSelect.value = state.mode;
  modeSelect.title = `Permission mode: ${state.modes.find((m) => m.id === state.mode)?.description ?? state.mode}`;
  document.body.dataset.mode = state.mode;
}

function renderChrome(): void {
  renderModes();
  const running = !!state.running;
  stopBtn.classList.toggle('hidden', !running);
  sendBtn.disabled = running;
  sessionLabel.textContent = state.sessionId
    ? state.continues
      ? 'continues a Claude Code session'
      : ''
    : 'no session yet';
  if (state.usage) {
    const u = state.usage;
    usageLabel.textContent = `${tokens(u.contextTokens)} / ${windowSize(u.window)} (${u.percent}%)`;
    usageLabel.title = `The API's figures for the last answer: input ${tokens(u.inputTokens)}, cache read ${tokens(u.cacheReadInputTokens)}, cache write ${tokens(u.cacheCreationInputTokens)}, output ${tokens(u.outputTokens)}`;
  } else usageLabel.textContent = '';
  status.textContent = '';
  status.className = 'status';
  if (state.retry) {
    const r = state.retry;
    status.textContent = `${r.message} — retrying (attempt ${r.attempt} of ${r.of}) in ${(r.delayMs / 1000).toFixed(1)} s`;
    status.classList.add('retry');
    status.setAttribute('data-testid', 'retry-notice');
  } else if (running) {
    status.textContent = 'Claude is working… (Escape to stop)';
    status.setAttribute('data-testid', 'status');
  } else if (state.warnings.length) {
    status.textContent = state.warnings.join(' · ');
  }
}

function renderItem(item: ChatItem, old?: HTMLElement): HTMLElement {
  switch (item.kind) {
    case 'user': {
      const el = h('div', { class: 'msg user', 'data-testid': 'message-user' });
      el.append(h('div', { class: 'who' }, 'You'));
      if (item.images?.length) el.append(h('div', { class: 'images' }, ...item.images.map((i) => thumb(i))));
      if (item.text) el.append(h('div', { class: 'text' }, item.text));
      return el;
    }
    case 'assistant': {
      // Reuse the element while streaming: only the body changes.
      const el =
        old && old.classList.contains('assistant')
          ? old
          : h('div', { class: 'msg assistant', 'data-testid': 'message-assistant' });
      el.replaceChildren(h('div', { class: 'who' }, 'Claude'));
      for (const b of item.blocks) {
        if (b.type === 'thinking') {
          const d = h('details', { class: 'thinking', 'data-testid': 'thinking' }, h('summary', {}, 'Thinking'));
          d.append(h('div', { class: 'text' }, b.text));
          el.append(d);
        } else {
          const body = h('div', { class: 'markdown' });
          body.innerHTML = md.render(b.text);
          el.append(body);
        }
      }
      if (item.ended)
        el.append(
          h(
            'div',
            { class: 'ended' },
            item.ended === 'cancelled' ? 'Stopped.' : item.ended === 'failed' ? 'Ended by an error.' : 'Interrupted.',
          ),
        );
      return el;
    }
    case 'tool': {
      const st = item.result ? (item.result.isError ? 'error' : 'ok') : 'running';
      const d = h('details', { class: `tool ${st}`, 'data-testid': 'tool-call', 'data-tool': item.name });
      const mark = st === 'ok' ? '✓' : st === 'error' ? '✗' : '…';
      const sub = item.subagent;
      const title = sub
        ? ` Agent ${sub.agentType}: ${sub.description}${sub.state === 'running' ? ' (running)' : sub.state === 'completed' ? '' : ` (${sub.state})`}`
        : ` ${toolSummary(item.name, item.input)}`;
      d.append(h('summary', {}, h('span', { class: 'mark' }, mark), title));
      if (sub) {
        // The subagent as one item: its model, then its own tool calls, each collapsible.
        d.setAttribute('data-testid', 'subagent');
        d.setAttribute('data-state', sub.state);
        const calls = item.children ?? [];
        d.append(
          h('div', { class: 'label' }, `${sub.model} · ${calls.length} tool call${calls.length === 1 ? '' : 's'}`),
        );
        for (const c of calls) {
          const cst = c.result ? (c.result.isError ? 'error' : 'ok') : 'running';
          const cd = h('details', { class: `tool ${cst}`, 'data-testid': 'subagent-tool', 'data-tool': c.name });
          cd.append(
            h(
              'summary',
              {},
              h('span', { class: 'mark' }, cst === 'ok' ? '✓' : cst === 'error' ? '✗' : '…'),
              ` ${toolSummary(c.name, c.input)}`,
            ),
          );
          if (c.result)
            cd.append(
              h(
                'pre',
                {},
                c.result.content.length > 20000 ? c.result.content.slice(0, 20000) + '\n…' : c.result.content,
              ),
            );
          d.append(cd);
        }
        if (sub.state === 'running') d.open = true;
      }
      d.append(h('div', { class: 'label' }, 'Input'), h('pre', {}, JSON.stringify(item.input, null, 2)));
      if (item.result) {
        d.append(h('div', { class: 'label' }, item.result.isError ? 'Error' : 'Result'));
        const content = item.result.content;
        d.append(
          h(
            'pre',
            { 'data-testid': 'tool-result' },
            content.length > 20000
              ? content.slice(0, 20000) + `\n… (${tokens(content.length - 20000)} more characters)`
              : content,
          ),
        );
      }
      return d;
    }
    case 'attachment': {
      const el = h('div', { class: 'attachment', 'data-testid': 'attachment' });
      const link = h('a', { href: '#', title: item.path }, basename(item.path));
      link.addEventListener('click', (e) => {
        e.preventDefault();
        vscode.postMessage({ type: 'openFile', path: item.path });
      });
      el.append('rule ', link, ' now applies');
      if (item.trigger) el.append(` (because of ${basename(item.trigger)})`);
      if (item.tokens) el.append(` · ${tokens(item.tokens)} tokens`);
      return el;
    }
    case 'hook': {
      // Shown like a tool result: what the hook did, the text, its command in full.
      const stopped = ['denied', 'blocked', 'error', 'timeout'].includes(item.outcome);
      const d = h('details', {
        class: `tool hook ${stopped ? 'error' : 'ok'}`,
        'data-testid': 'hook',
        'data-event': item.event,
        'data-outcome': item.outcome,
      });
      d.append(h('summary', {}, h('span', { class: 'mark' }, '⚑'), ` ${item.event} hook: ${item.outcome}`));
      if (item.command) d.append(h('div', { class: 'label' }, 'Command'), h('pre', {}, item.command));
      d.append(
        h('div', { class: 'label' }, stopped ? 'Why' : 'Text'),
        h('pre', { 'data-testid': 'hook-text' }, item.text),
      );
      if (stopped || item.event === 'UserPromptSubmit') d.open = true;
      return d;
    }
    case 'compacted':
      return h(
        'div',
        { class: 'compacted', 'data-testid': 'compacted' },
        `Conversation compacted (${item.mode === 'micro' ? 'old tool results cleared' : item.mode === 'full' ? 'summarised' : 'cleared by the API'}): ${tokens(item.tokensBefore)} → ${tokens(item.tokensAfter)} tokens`,
      );
    case 'error': {
      const el = h('div', { class: 'error', 'data-testid': 'error' });
      el.append(h('div', { class: 'text' }, item.message));
      if (item.retryText) {
        const b = h('button', { 'data-testid': 'retry' }, 'Retry');
        b.addEventListener('click', () =>
          vscode.postMessage({ type: 'retry', text: item.retryText!, images: item.retryImages }),
        );
        el.append(b);
      }
      return el;
    }
    case 'notice':
      return h('div', { class: 'notice', 'data-testid': 'notice' }, item.text);
    case 'permission':
      return renderPermission(item);
  }
}

/** An image as a thumbnail (or, when only its placeholder was kept, its name). */
function thumb(i: ChatImage, remove?: () => void): HTMLElement {
  const url = toDataUrl(i);
  const chip = h('span', { class: 'image-chip', 'data-testid': 'image-chip', title: describeImage(i) });
  chip.append(
    url
      ? h('img', { src: url, alt: describeImage(i), 'data-testid': 'image-thumb' })
      : h('span', { class: 'image-name' }, describeImage(i)),
  );
  if (remove) {
    const x = h(
      'button',
      {
        class: 'image-remove',
        title: 'Remove this image',
        'aria-label': 'Remove this image',
        'data-testid': 'image-remove',
      },
      '×',
    );
    x.addEventListener('click', remove);
    chip.append(x);
  }
  return chip;
}

function toolSummary(name: string, input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const s = (k: string) => (typeof i[k] === 'string' ? i[k] : '');
  const arg = s('file_path') || s('command') || s('pattern') || s('path');
  return arg ? `${name} ${arg.length > 80 ? arg.slice(0, 80) + '…' : arg}` : name;
}

type PermissionItem = Extract<ChatItem, { kind: 'permission' }>;

function renderPermission(item: PermissionItem): HTMLElement {
  const el = h('div', { class: `permission ${item.state}`, 'data-testid': 'permission', 'data-state': item.state });
  const words = permissionWords(item);
  el.append(h('div', { class: 'title' }, item.choices ? words.title : item.summary));
  if (item.warning) el.append(h('div', { class: 'warning', 'data-testid': 'permission-warning' }, item.warning));
  if (item.reason) el.append(h('div', { class: 'reason', 'data-testid': 'permission-reason' }, item.reason));
  const i = (item.input ?? {}) as Record<string, unknown>;
  if (item.tool === 'Edit' && typeof i.old_string === 'string') {
    el.append(
      h('pre', { class: 'del' }, String(i.old_string)),
      h('pre', { class: 'add' }, typeof i.new_string === 'string' ? i.new_string : ''),
    );
  } else if (item.tool === 'Write' && typeof i.content === 'string') {
    el.append(h('pre', { class: 'add' }, i.content.slice(0, 4000)));
  } else if (item.tool === 'Bash' && typeof i.command === 'string') {
    el.append(h('pre', {}, i.command));
  } else if (item.tool === 'mcpServer' && (typeof i.url === 'string' || typeof i.command === 'string')) {
    const args = Array.isArray(i.args) ? i.args.map(String) : [];
    el.append(h('pre', {}, typeof i.url === 'string' ? `url: ${i.url}` : [String(i.command), ...args].join(' ')));
    if (typeof i.source === 'string') el.append(h('div', { class: 'source' }, `from ${i.source}`));
  } else {
    el.append(h('pre', {}, JSON.stringify(item.input, null, 2)));
  }
  if (item.state === 'open') {
    const buttons = h('div', { class: 'buttons' });
    const b = (
      label: string,
      key: string,
      decision: 'allow' | 'allowSession' | 'deny',
      testid: string,
      cls: string,
    ) => {
      const btn = h('button', { class: cls, 'data-testid': testid, title: `Alt+${key}` }, label);
      btn.addEventListener('click', () => decide(item.key, decision));
      return btn;
    };
    const styles = permissionStyles(item);
    buttons.append(b(`${words.allow} (Alt+A)`, 'A', 'allow', 'permission-allow-once', styles.allow));
    // No scope: a file that makes programs run code can only be allowed once.
    if (words.allowSession)
      buttons.append(
        b(`${words.allowSession} (Alt+S)`, 'S', 'allowSession', 'permission-allow-session', styles.allowSession),
      );
    buttons.append(b(`${words.deny} (Alt+D)`, 'D', 'deny', 'permission-deny', styles.deny));
    el.append(buttons);
  } else {
    const said: Record<string, string> = item.choices
      ? {
          allow: words.allow,
          allowSession: words.allowSession ?? words.allow,
          deny: words.deny,
          cancelled: 'Cancelled (the turn stopped)',
        }
      : {
          allow: 'Allowed once',
          allowSession: `Allowed: ${item.sessionScope ?? 'once'}`,
          deny: 'Denied',
          cancelled: 'Cancelled (the turn stopped)',
        };
    el.append(h('div', { class: 'decided' }, said[item.state] ?? item.state));
  }
  return el;
}

function decide(key: string, decision: 'allow' | 'allowSession' | 'deny'): void {
  vscode.postMessage({ type: 'permission', key, decision });
}

function firstOpenPermission(): PermissionItem | undefined {
  return state.items.find((it): it is PermissionItem => it.kind === 'permission' && it.state === 'open');
}

// ---- messages from the host -------------------------------------------------------------------

window.addEventListener('message', (e: MessageEvent<ToWebview>) => {
  const m = e.data;
  switch (m.type) {
    case 'snapshot':
      state = m.state as ChatState;
      seq = m.seq;
      waitingSnapshot = false;
      rendered.forEach((r) => r.el.remove());
      rendered.clear();
      stats.pendingStamp = m.stamp;
      schedule();
      return;
    case 'actions':
      if (waitingSnapshot) return;
      if (m.from !== seq + 1) {
        // A gap (this replica missed something): ask for the whole state again.
        waitingSnapshot = true;
        vscode.postMessage({ type: 'resync' });
        return;
      }
      for (const a of m.actions) state = reduce(state, a);
      seq += m.count;
      stats.applied += m.count;
      stats.pendingStamp = m.stamp;
      if (m.textStamp) {
        stats.textStamp = m.textStamp;
        stats.lastTextRecvLagMs = Date.now() - m.textStamp;
      }
      schedule();
      return;
    case 'mentionResults':
      showMentions(m.query, m.items);
      return;
    case 'insert':
      insertText(m.text);
      if (m.mention) mentions.set(m.mention.label, m.mention.uri);
      prompt.focus();
      return;
    case 'focusPrompt':
      prompt.focus();
      return;
  }
});

// ---- the prompt -------------------------------------------------------------------------------

/** `@label` → file URI, for the mentions of the message being written. */
const mentions = new Map<string, string>();
let mentionItems: { label: string; uri: string }[] = [];
let mentionIndex = 0;
let mentionQuery: string | null = null;

function send(): void {
  const text = prompt.value;
  if ((!text.trim() && !attached.length) || state.running || reading > 0) return;
  const used = [...mentions].filter(([label]) => text.includes(`@${label}`)).map(([, uri]) => uri);
  vscode.postMessage({ type: 'send', text, mentions: used, ...(attached.length ? { images: attached } : {}) });
  prompt.value = '';
  mentions.clear();
  attached = [];
  drawImages();
  hideMentions();
}

// ---- images pasted or dropped into the prompt ---------------------------------------------------

/** The images attached to the message being written, in the order they came. */
let attached: ChatImage[] = [];
/** Files still being read (the message waits for them). */
let reading = 0;

function drawImages(): void {
  imageTray.replaceChildren(
    ...attached.map((img, i) =>
      thumb(img, () => {
        attached = attached.filter((_, j) => j !== i);
        drawImages();
        prompt.focus();
      }),
    ),
  );
  imageTray.classList.toggle('hidden', attached.length === 0);
}

function noteImage(text: string): void {
  imageNote.textContent = text;
  imageNote.classList.toggle('hidden', !text);
}

/** Attaches image files (checked before they are read: type, size, count); says why one is not. */
function attachFiles(files: File[]): void {
  noteImage('');
  for (const f of files) {
    const why = refuseImage(f.type, f.size, attached.length + reading);
    if (why) {
      noteImage(`${f.name ? `${f.name}: ` : ''}${why}`);
      continue;
    }
    reading++;
    const r = new FileReader();
    r.onload = () => {
      reading--;
      const img = typeof r.result === 'string' ? fromDataUrl(r.result) : null;
      if (img) attached = [...attached, img];
      else noteImage(`${f.name || 'The image'} could not be read.`);
      drawImages();
    };
    r.onerror = () => {
      reading--;
      noteImage(`${f.name || 'The image'} could not be read.`);
    };
    r.readAsDataURL(f);
  }
}

function imageFiles(items: DataTransferItemList | null | undefined, files: FileList | null | undefined): File[] {
  const out: File[] = [];
  if (items && items.length) {
    for (const it of Array.from(items)) {
      if (it.kind !== 'file') continue;
      const f = it.getAsFile();
      if (f) out.push(f);
    }
  } else if (files) out.push(...Array.from(files));
  return out;
}

prompt.addEventListener('paste', (e) => {
  const files = imageFiles(e.clipboardData?.items, e.clipboardData?.files);
  if (!files.length) return;
  // A pasted image (a screenshot, an image copied from a browser) is attached, not inserted as text.
  e.preventDefault();
  attachFiles(files);
});
footer.addEventListener('dragover', (e) => {
  if (e.dataTransfer && Array.from(e.dataTransfer.types).includes('Files')) {
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
  }
});
footer.addEventListener('drop', (e) => {
  const files = imageFiles(e.dataTransfer?.items, e.dataTransfer?.files);
  if (!files.length) return;
  e.preventDefault();
  attachFiles(files);
});

function insertText(text: string): void {
  const start = prompt.selectionStart ?? prompt.value.length;
  const end = prompt.selectionEnd ?? start;
  prompt.value = prompt.value.slice(0, start) + text + prompt.value.slice(end);
  prompt.selectionStart = prompt.selectionEnd = start + text.length;
}

function currentMention(): { query: string; start: number } | null {
  const caret = prompt.selectionStart ?? 0;
  const before = prompt.value.slice(0, caret);
  const m = /(^|\s)@([^\s@]*)$/.exec(before);
  return m ? { query: m[2], start: caret - m[2].length - 1 } : null;
}

function showMentions(query: string, items: { label: string; uri: string }[]): void {
  if (query !== mentionQuery) return;
  mentionItems = items;
  mentionIndex = 0;
  drawMentions();
}

function drawMentions(): void {
  mentionList.replaceChildren(
    ...mentionItems.map((it, i) => {
      const row = h(
        'div',
        { class: `mention ${i === mentionIndex ? 'selected' : ''}`, role: 'option', 'data-testid': 'mention-item' },
        it.label,
      );
      row.addEventListener('mousedown', (e) => {
        e.preventDefault();
        pickMention(i);
      });
      return row;
    }),
  );
  mentionList.classList.toggle('hidden', mentionItems.length === 0);
}

function hideMentions(): void {
  mentionQuery = null;
  mentionItems = [];
  mentionList.classList.add('hidden');
}

function pickMention(i: number): void {
  const cur = currentMention();
  const it = mentionItems[i];
  if (!cur || !it) return;
  const caret = prompt.selectionStart ?? 0;
  prompt.value = prompt.value.slice(0, cur.start) + `@${it.label} ` + prompt.value.slice(caret);
  prompt.selectionStart = prompt.selectionEnd = cur.start + it.label.length + 2;
  mentions.set(it.label, it.uri);
  hideMentions();
}

prompt.addEventListener('input', () => {
  const cur = currentMention();
  if (!cur) return hideMentions();
  mentionQuery = cur.query;
  vscode.postMessage({ type: 'mentionQuery', query: cur.query });
});

prompt.addEventListener('keydown', (e) => {
  if (mentionItems.length && !mentionList.classList.contains('hidden')) {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      mentionIndex = (mentionIndex + (e.key === 'ArrowDown' ? 1 : mentionItems.length - 1)) % mentionItems.length;
      drawMentions();
      return;
    }
    if (e.key === 'Enter' || e.key === 'Tab') {
      e.preventDefault();
      pickMention(mentionIndex);
      return;
    }
    if (e.key === 'Escape') {
      e.preventDefault();
      hideMentions();
      return;
    }
  }
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});

document.addEventListener('keydown', (e) => {
  const card = firstOpenPermission();
  if (card && e.altKey && !e.ctrlKey && !e.metaKey) {
    const k = e.key.toLowerCase();
    const d =
      k === 'a'
        ? 'allow'
        : k === 's' && permissionWords(card).allowSession
          ? 'allowSession'
          : k === 'd'
            ? 'deny'
            : null;
    if (d) {
      e.preventDefault();
      decide(card.key, d);
      return;
    }
  }
  if (e.key === 'Escape' && state.running && mentionList.classList.contains('hidden')) {
    e.preventDefault();
    vscode.postMessage({ type: 'stop' });
  }
});

sendBtn.addEventListener('click', send);
stopBtn.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
newBtn.addEventListener('click', () => vscode.postMessage({ type: 'new' }));
sessionsBtn.addEventListener('click', () => vscode.postMessage({ type: 'sessions' }));
selBtn.addEventListener('click', () => vscode.postMessage({ type: 'addSelection' }));

// Links in answers open through the host (files in the editor, web pages after VS Code asks).
log.addEventListener('click', (e) => {
  const a = (e.target as HTMLElement).closest('a');
  if (!a || !a.closest('.markdown')) return;
  e.preventDefault();
  const href = a.getAttribute('href');
  if (href) vscode.postMessage({ type: 'openLink', href });
});

window.addEventListener('focus', () => vscode.postMessage({ type: 'focus', focused: true }));
window.addEventListener('blur', () => vscode.postMessage({ type: 'focus', focused: false }));

vscode.postMessage({ type: 'ready' });
