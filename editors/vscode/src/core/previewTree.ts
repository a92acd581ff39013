// The Context view's model: a `context/preview` result as a tree (pure; the view renders it).
//
// Files are grouped by scope and nested by `includedFrom`; each shows its status, tokens and the
// reason it is (or is not) in the request. Blocks and attachments open their exact text.

import type { ContextPreview } from '../protocol/generated';
import { basename, shortPath, tokens } from './format';

export type Preview = ContextPreview.Result;
type FileView = ContextPreview.FileView;

export type OpenTarget = { kind: 'file'; path: string; line?: number } | { kind: 'text'; title: string; text: string };

export interface TreeNode {
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  /** A codicon id. */
  icon?: string;
  /** A theme colour id for the icon. */
  color?: string;
  children?: TreeNode[];
  expanded?: boolean;
  open?: OpenTarget;
  /** For menus: `pendingSession` offers "new session with them". */
  contextValue?: string;
}

export const SCOPE_ORDER = ['managed', 'user', 'project', 'local', 'memory'];
const SCOPE_LABEL: Record<string, string> = {
  managed: 'Managed',
  user: 'User',
  project: 'Project',
  local: 'Local',
  memory: 'Memory',
};

export const STATUS_ICON: Record<string, { icon: string; color?: string }> = {
  loaded: { icon: 'pass-filled', color: 'testing.iconPassed' },
  attached: { icon: 'link', color: 'charts.blue' },
  inactive: { icon: 'circle-outline', color: 'disabledForeground' },
  skipped: { icon: 'warning', color: 'list.warningForeground' },
  empty: { icon: 'circle-slash', color: 'disabledForeground' },
  excluded: { icon: 'eye-closed', color: 'disabledForeground' },
};

const BLOCK_LABEL: Record<string, string> = {
  systemStatic: 'System prompt (static)',
  systemDynamic: 'System prompt (session)',
  instructions: 'Instructions',
  gitStatus: 'Git status',
};

/** Why a file is (or is not) in the request, in words. */
export function fileReason(f: FileView): string {
  switch (f.status) {
    case 'loaded':
      if (f.includedFrom) return `included from ${basename(f.includedFrom)}`;
      return f.reason ?? 'always loaded';
    case 'attached':
      if (f.reason) return f.reason;
      return f.matchedGlob ? `matched ${f.matchedGlob}` : 'attached';
    case 'inactive':
      if (f.reason) return f.reason;
      return f.globs?.length ? `no touched file matches ${f.globs.join(', ')}` : 'inactive';
    case 'skipped':
      return `skipped: ${f.reason ?? 'unknown reason'}`;
    case 'empty':
      return 'empty';
    case 'excluded':
      if (f.reason) return f.reason;
      return f.excludedBy
        ? `excluded by the claudeMdExcludes pattern "${f.excludedBy.pattern}" of ${basename(f.excludedBy.settings)}`
        : 'excluded';
    default:
      return f.reason ?? f.status;
  }
}

/** `/a/CLAUDE.md:4` → `/a/CLAUDE.md`. */
function includer(includedFrom: string): string {
  const m = /^(.*):(\d+)$/.exec(includedFrom);
  return m ? m[1] : includedFrom;
}

function fileNode(f: FileView, i: number, cwd: string, home?: string): TreeNode {
  const st = STATUS_ICON[f.status] ?? { icon: 'file' };
  const reason = fileReason(f);
  const line = f.includedFrom ? /:(\d+)$/.exec(f.includedFrom)?.[1] : undefined;
  return {
    id: `file:${i}:${f.path}`,
    label: basename(f.path),
    description: `${reason} · ${tokens(f.tokens)} tokens`,
    tooltip: [
      shortPath(f.path, cwd, home),
      `${f.status} · ${tokens(f.tokens)} tokens · ${f.scope}`,
      reason,
      f.description,
      f.globs?.length ? `paths: ${f.globs.join(', ')}` : '',
      f.includedFrom ? `@-included at line ${line} of ${f.includedFrom.replace(/:\d+$/, '')}` : '',
    ]
      .filter(Boolean)
      .join('\n'),
    icon: st.icon,
    color: st.color,
    open: f.status === 'skipped' && f.reason === 'not found' ? undefined : { kind: 'file', path: f.path },
    contextValue: `file.${f.status}`,
  };
}

/** Files grouped by scope, each nested under the file that `@`-included it. */
export function filesByScope(p: Preview, home?: string): TreeNode[] {
  const nodes = p.files.map((f, i) => ({ f, node: fileNode(f, i, p.cwd, home) }));
  const byPath = new Map<string, TreeNode>();
  for (const { f, node } of nodes) if (!byPath.has(f.path)) byPath.set(f.path, node);
  const roots = new Map<string, TreeNode[]>();
  for (const { f, node } of nodes) {
    const parent = f.includedFrom ? byPath.get(includer(f.includedFrom)) : undefined;
    if (parent && parent !== node) {
      (parent.children ??= []).push(node);
      parent.expanded = true;
    } else {
      const list = roots.get(f.scope) ?? [];
      list.push(node);
      roots.set(f.scope, list);
    }
  }
  const scopes = [...roots.keys()].sort((a, b) => rank(a) - rank(b));
  return scopes.map((scope) => {
    const files = p.files.filter((f) => f.scope === scope);
    const inRequest = files.filter((f) => f.status === 'loaded' || f.status === 'attached');
    const sum = inRequest.reduce((n, f) => n + f.tokens, 0);
    return {
      id: `scope:${scope}`,
      label: SCOPE_LABEL[scope] ?? scope,
      description: `${inRequest.length}/${files.length} in the request · ${tokens(sum)} tokens`,
      icon: 'folder-library',
      children: roots.get(scope),
      expanded: true,
    };
  });
}

function rank(scope: string): number {
  const i = SCOPE_ORDER.indexOf(scope);
  return i < 0 ? SCOPE_ORDER.length : i;
}

const HELD_WORDS: Record<string, string> = {
  waitingForTrust: 'waits for trust',
  notTrusted: 'not trusted',
  refused: 'refused',
  notSupported: 'not used by claude-context',
};

/**
 * Workspace trust: the folder's state (and where it is recorded), and what of the repository
 * waits for it, is refused, or is not used, each with why. None when there is nothing to say (a
 * folder nobody was asked about with nothing waiting).
 */
export function trustNode(p: Preview, home?: string): TreeNode | undefined {
  const t = p.trust;
  if (!t || (t.state === 'neverAsked' && t.held.length === 0)) return undefined;
  const children: TreeNode[] = [];
  if (t.localTracked) {
    children.push({
      id: 'trust:localTracked',
      label: '.claude/settings.local.json is tracked by git',
      description: "read as the repository's file, not yours",
      icon: 'warning',
      color: 'list.warningForeground',
      open: { kind: 'file', path: `${t.folder}/.claude/settings.local.json` },
    });
  }
  for (const [i, h] of t.held.entries()) {
    children.push({
      id: `trust:held:${i}`,
      label: `${h.key} (${h.detail})`,
      description: `${HELD_WORDS[h.status] ?? h.status} · ${shortPath(h.path, p.cwd, home)}`,
      tooltip: `${h.reason}
${h.path}${h.line ? `:${h.line}` : ''}`,
      icon: h.status === 'refused' ? 'error' : h.status === 'notSupported' ? 'circle-slash' : 'lock',
      color: h.status === 'refused' ? 'list.warningForeground' : undefined,
      open: { kind: 'file', path: h.path, line: h.line ? h.line - 1 : undefined },
    });
  }
  const state = t.state === 'trusted' ? 'trusted' : t.state === 'notTrusted' ? 'not trusted' : 'never asked';
  return {
    id: 'trust',
    label: 'Workspace trust',
    description: state,
    tooltip: t.summary,
    icon: t.state === 'trusted' ? 'workspace-trusted' : 'workspace-untrusted',
    expanded: t.state !== 'trusted',
    children,
  };
}

/** "rule X now applies (because of Y)". */
export function attachmentLabel(path: string, trigger: string): string {
  const t = trigger ? ` (because of ${basename(trigger)})` : '';
  return `${basename(path)} now applies${t}`;
}

const LISTED_LABEL: Record<string, { text: string; icon: string; color?: string }> = {
  full: { text: 'listed', icon: 'pass-filled', color: 'testing.iconPassed' },
  reduced: { text: 'name only (over the listing budget)', icon: 'fold', color: 'list.warningForeground' },
  nameOnly: { text: 'name only (skillOverrides)', icon: 'fold' },
  hidden: { text: 'not listed (disable-model-invocation)', icon: 'eye-closed', color: 'disabledForeground' },
  off: { text: 'not listed (skillOverrides)', icon: 'eye-closed', color: 'disabledForeground' },
  conditional: { text: 'listed when a touched file matches', icon: 'circle-outline', color: 'disabledForeground' },
};

/** The skills: each with how it is listed (a conditional one with its `paths:`, shown as
 * activated once a touched file matched), then the messages touched files add (skills found
 * below cwd, conditional skills activated), each opening its exact text. */
export function skillsNode(p: Preview): TreeNode | undefined {
  const sk = p.skills;
  if (!sk || (!sk.skills.length && !sk.discovered?.length && !sk.activated?.length)) return undefined;
  const activated = new Set<string>((sk.activated ?? []).flatMap((a) => a.skills ?? []));
  const children: TreeNode[] = sk.skills.map((s, i) => {
    const on = s.listed === 'conditional' && activated.has(s.name);
    const l = on
      ? { text: 'activated by a touched file', icon: 'pass-filled', color: 'charts.blue' }
      : (LISTED_LABEL[s.listed] ?? { text: s.listed, icon: 'symbol-event' });
    const paths = s.paths?.length ? `paths: ${s.paths.join(', ')}` : '';
    return {
      id: `skill:${i}:${s.name}`,
      label: s.alias ? `${s.name} (${s.alias})` : s.name,
      description: [l.text, paths, `${tokens(s.tokens)} tokens`].filter(Boolean).join(' · '),
      tooltip: [
        s.path,
        `${s.source} · ${l.text}`,
        s.description,
        paths,
        s.shell?.length ? `runs when invoked: ${s.shell.join('; ')}` : '',
      ]
        .filter(Boolean)
        .join('\n'),
      icon: l.icon,
      color: l.color,
      open: { kind: 'file', path: s.path },
      contextValue: `skill.${on ? 'activated' : s.listed}`,
    };
  });
  for (const [i, d] of (sk.discovered ?? []).entries()) {
    children.push({
      id: `skill:discovered:${i}`,
      label: `Skills found below cwd (because of ${basename(d.trigger)})`,
      description: `${tokens(d.tokens)}`,
      tooltip: `${d.trigger}\nClick for the exact message sent after the tool result.`,
      icon: 'search',
      open: { kind: 'text', title: 'Skills discovered', text: d.text },
    });
  }
  for (const [i, a] of (sk.activated ?? []).entries()) {
    children.push({
      id: `skill:activated:${i}`,
      label: `Conditional skills activated (because of ${basename(a.trigger)})`,
      description: `${tokens(a.tokens)}`,
      tooltip: `${a.trigger}\nClick for the exact message sent after the tool result.`,
      icon: 'zap',
      open: { kind: 'text', title: 'Skills activated', text: a.text },
    });
  }
  const listed = sk.skills.filter(
    (s) => s.listed === 'full' || s.listed === 'reduced' || s.listed === 'nameOnly',
  ).length;
  const conditional = sk.skills.filter((s) => s.listed === 'conditional').length;
  return {
    id: 'skills',
    label: 'Skills',
    description: `${listed} listed${conditional ? ` · ${conditional} conditional` : ''} · ${tokens(sk.tokens)} tokens`,
    icon: 'mortar-board',
    children,
    expanded: false,
    open: sk.listing ? { kind: 'text', title: 'Skills listing', text: sk.listing } : undefined,
  };
}

const MCP_STATUS: Record<string, { icon: string; color?: string }> = {
  running: { icon: 'pass-filled', color: 'testing.iconPassed' },
  approved: { icon: 'pass' },
  connecting: { icon: 'loading~spin' },
  failed: { icon: 'error', color: 'list.errorForeground' },
  'not approved': { icon: 'circle-slash', color: 'disabledForeground' },
  'waiting for trust': { icon: 'workspace-untrusted', color: 'disabledForeground' },
  'not trusted': { icon: 'workspace-untrusted', color: 'disabledForeground' },
  disabled: { icon: 'circle-slash', color: 'disabledForeground' },
  unsupported: { icon: 'warning', color: 'list.warningForeground' },
};

/** The MCP servers: each with its status, scope, what it adds now and once its tools are loaded,
 * and why (who approved or disabled it, the failure); the section opens the exact text the
 * environment carries (deferred tools, instructions, the connecting and failed notes). */
export function mcpNode(p: Preview): TreeNode | undefined {
  const m = p.mcp;
  if (!m || !m.servers.length) return undefined;
  const children: TreeNode[] = m.servers.map((sv, i) => {
    const st = MCP_STATUS[sv.status] ?? { icon: 'server' };
    const now = sv.nameTokens + sv.instructionsTokens;
    const tools = sv.tools ? `${sv.tools.length} tools` : '';
    return {
      id: `mcp:${i}:${sv.name}`,
      label: sv.name,
      description: [
        sv.status,
        sv.scope,
        tools,
        `${tokens(now)} tokens`,
        sv.definitionTokens ? `+${tokens(sv.definitionTokens)} when loaded` : '',
      ]
        .filter(Boolean)
        .join(' · '),
      tooltip: [
        sv.command,
        sv.reason,
        sv.path,
        ...(sv.notes ?? []),
        sv.tools?.length ? `tools: ${sv.tools.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('\n'),
      icon: st.icon,
      color: st.color,
      open: { kind: 'file', path: sv.path },
      contextValue: `mcp.${sv.status.replace(/\s+/g, '-')}`,
    };
  });
  const text = [m.deferredTools, m.instructions, m.connectingNote, m.failedNote]
    .filter((x): x is string => typeof x === 'string' && x !== '')
    .join('\n\n');
  const failed = m.servers.filter((sv) => sv.status === 'failed').length;
  return {
    id: 'mcp',
    label: 'MCP servers',
    description: `${m.servers.length}${failed ? ` · ${failed} failed` : ''} · ${tokens(m.tokens)} tokens · +${tokens(m.definitionTokens)} when loaded`,
    icon: 'server',
    children,
    expanded: failed > 0,
    open: text ? { kind: 'text', title: 'MCP servers in the environment', text } : undefined,
  };
}

const AGENT_SCOPE: Record<string, string> = {
  builtIn: 'built-in',
  plugin: 'plugin',
  user: 'user',
  project: 'project',
};

/** The agent types the `Agent` tool runs: the listing's tokens, then each agent with its scope,
 * tools and the tokens of its line (tooltip: its description); a file-backed one opens its file.
 * The agents another of the same name replaced follow. The section opens the exact listing. */
export function agentsNode(p: Preview, home?: string): TreeNode | undefined {
  const a = p.agents;
  if (!a || (!a.agents.length && !a.shadowed.length)) return undefined;
  const children: TreeNode[] = a.agents.map((ag, i) => ({
    id: `agent:${i}:${ag.name}`,
    label: ag.name,
    description: [AGENT_SCOPE[ag.scope] ?? ag.scope, `tools: ${ag.tools}`, `${tokens(ag.tokens)} tokens`].join(' · '),
    tooltip: [
      ag.description,
      ag.path ? shortPath(ag.path, p.cwd, home) : '',
      ag.model ? `model: ${ag.model}` : '',
      `its system prompt when it runs: ${tokens(ag.bodyTokens)} tokens`,
    ]
      .filter(Boolean)
      .join('\n'),
    icon: 'hubot',
    open: ag.path ? { kind: 'file', path: ag.path } : undefined,
    contextValue: `agent.${ag.scope}`,
  }));
  for (const [i, sh] of a.shadowed.entries()) {
    children.push({
      id: `agent:shadowed:${i}:${sh.name}`,
      label: sh.name,
      description: `${AGENT_SCOPE[sh.scope] ?? sh.scope} · replaced by the ${AGENT_SCOPE[sh.by] ?? sh.by} one`,
      tooltip: sh.file ? shortPath(sh.file, p.cwd, home) : undefined,
      icon: 'eye-closed',
      color: 'disabledForeground',
      open: sh.file ? { kind: 'file', path: sh.file } : undefined,
    });
  }
  return {
    id: 'agents',
    label: 'Agents',
    description: `${a.agents.length} type${a.agents.length === 1 ? '' : 's'} · ${tokens(a.tokens)} tokens`,
    tooltip: 'The agent types listing of the environment section. Click for its exact text.',
    icon: 'hubot',
    children,
    expanded: false,
    open: a.listing ? { kind: 'text', title: 'Agent types listing', text: a.listing } : undefined,
  };
}

/** The output style: its name and source, what it adds to the system prompt and after every tool
 * result, whether the setting names no style (the default applies) and whether it leaves the
 * coding instructions out; the node opens the style's file. */
export function styleNode(p: Preview, home?: string): TreeNode | undefined {
  const st = p.style;
  if (!st) return undefined;
  const children: TreeNode[] = [];
  if (st.setting !== undefined && st.setting !== null) {
    children.push({
      id: 'style:setting',
      label: `outputStyle: "${st.setting}"`,
      description: st.settingPath ? shortPath(st.settingPath, p.cwd, home) : undefined,
      icon: 'settings-gear',
      open: st.settingPath ? { kind: 'file', path: st.settingPath } : undefined,
    });
  }
  if (st.unknown) {
    children.push({
      id: 'style:unknown',
      label: `unknown name: default applies`,
      description: st.available.length ? `choose one of ${st.available.join(', ')}` : undefined,
      tooltip: 'Style names are case-sensitive: the setting names no style, so the default applies, as in Claude Code.',
      icon: 'warning',
      color: 'list.warningForeground',
    });
  }
  if (st.dropsCodingInstructions) {
    children.push({
      id: 'style:dropsCoding',
      label: 'coding instructions left out',
      tooltip: 'A custom style without `keep-coding-instructions: true` replaces the coding instructions.',
      icon: 'info',
    });
  }
  return {
    id: 'style',
    label: 'Output style',
    description: [
      st.name,
      st.source ?? '',
      `${tokens(st.tokens)} tokens`,
      `+${tokens(st.reminderTokens)} per reminder`,
      st.unknown ? 'unknown name: default applies' : '',
      st.dropsCodingInstructions ? 'coding instructions left out' : '',
    ]
      .filter(Boolean)
      .join(' · '),
    tooltip: [
      st.description ?? '',
      st.path ? shortPath(st.path, p.cwd, home) : '',
      `+${tokens(st.reminderTokens)} tokens after every tool result and every later prompt`,
      `available: ${st.available.join(', ')}`,
    ]
      .filter(Boolean)
      .join('\n'),
    icon: 'symbol-color',
    color: st.unknown ? 'list.warningForeground' : undefined,
    expanded: st.unknown,
    children,
    open: st.path ? { kind: 'file', path: st.path } : undefined,
  };
}

const ENABLED_BY: Record<string, string> = {
  user: 'enabled by you',
  repository: "enabled by the repository's settings",
  flag: 'enabled by --plugin-dir',
};

/** The enabled plugins: each with what it adds to every request, and its skills, servers, styles,
 * hooks and the files it could not read; then the enabled ones not loaded, with why. */
export function pluginsNode(p: Preview, home?: string): TreeNode | undefined {
  const pl = p.plugins;
  if (!pl || (!pl.plugins.length && !pl.notLoaded.length)) return undefined;
  const children: TreeNode[] = pl.plugins.map((g, i) => {
    const parts: TreeNode[] = [];
    const cost = (kind: string, icon: string, xs: { name: string; tokens: number }[]) => {
      for (const [j, x] of xs.entries())
        parts.push({
          id: `plugin:${i}:${kind}:${j}`,
          label: x.name,
          description: `${kind} · ${tokens(x.tokens)} tokens`,
          icon,
        });
    };
    cost('skill', 'mortar-board', g.skills);
    cost('MCP server', 'server', g.servers);
    cost('output style', 'symbol-color', g.styles);
    for (const [j, h] of g.hooks.entries())
      parts.push({
        id: `plugin:${i}:hook:${j}`,
        label: h,
        description: 'hook · output unknown until it runs',
        tooltip: h,
        icon: 'zap',
      });
    for (const [j, f] of g.skipped.entries())
      parts.push({
        id: `plugin:${i}:skipped:${j}`,
        label: shortPath(f, g.root, home),
        description: 'not read: links outside the plugin',
        tooltip: f,
        icon: 'warning',
        color: 'list.warningForeground',
      });
    const counts = [
      g.skills.length ? `${g.skills.length} skill${g.skills.length === 1 ? '' : 's'}` : '',
      g.servers.length ? `${g.servers.length} server${g.servers.length === 1 ? '' : 's'}` : '',
      g.styles.length ? `${g.styles.length} style${g.styles.length === 1 ? '' : 's'}` : '',
      g.hooks.length ? `${g.hooks.length} hook${g.hooks.length === 1 ? '' : 's'}` : '',
    ];
    return {
      id: `plugin:${i}:${g.id}`,
      label: g.id,
      description: [...counts, `${tokens(g.tokens)} tokens`].filter(Boolean).join(' · '),
      tooltip: [shortPath(g.root, p.cwd, home), ENABLED_BY[g.enabledBy] ?? g.enabledBy].join('\n'),
      icon: 'extensions',
      children: parts,
      expanded: false,
      contextValue: `plugin.${g.enabledBy}`,
    };
  });
  for (const [i, n] of pl.notLoaded.entries()) {
    children.push({
      id: `plugin:notLoaded:${i}:${n.id}`,
      label: n.id,
      description: `not loaded: ${n.reason}`,
      tooltip: n.reason,
      icon: 'circle-slash',
      color: 'disabledForeground',
      contextValue: 'plugin.notLoaded',
    });
  }
  return {
    id: 'plugins',
    label: 'Plugins',
    description: `${pl.plugins.length} loaded${pl.notLoaded.length ? ` · ${pl.notLoaded.length} not loaded` : ''} · ${tokens(pl.tokens)} tokens`,
    icon: 'extensions',
    children,
    expanded: pl.notLoaded.length > 0,
  };
}

type Permissions = NonNullable<Preview['permissions']>;

/** `~/.claude/settings.json:4`, `command line`. */
function sourceLabel(
  src: { origin: string; file?: string | null; line?: number | null },
  cwd: string,
  home?: string,
): string {
  if (!src.file) return src.origin === 'commandLine' ? 'command line' : src.origin;
  return `${shortPath(src.file, cwd, home)}${src.line ? `:${src.line}` : ''}`;
}

/** The permission rules and mode: each rule with the file (and line) it comes from. */
export function permissionsNode(perms: Permissions, cwd: string, home?: string): TreeNode {
  const ms = perms.modeSource as { from: string; origin?: string; file?: string | null; line?: number | null };
  const from =
    ms.from === 'settings'
      ? `defaultMode in ${sourceLabel({ origin: ms.origin ?? 'settings', file: ms.file, line: ms.line != null ? ms.line + 1 : null }, cwd, home)}`
      : ms.from === 'commandLine'
        ? 'requested'
        : ms.from === 'session'
          ? 'switched in the session'
          : 'no setting';
  const children: TreeNode[] = [
    {
      id: 'permissions:mode',
      label: `Mode: ${perms.mode}`,
      description: from,
      tooltip: `${perms.availableModes.find((m) => m.id === perms.mode)?.description ?? ''}
folder ${perms.trusted ? 'trusted' : 'not trusted'}${perms.managedOnly ? ' · managed rules only' : ''}`,
      icon: perms.mode === 'plan' ? 'book' : perms.mode === 'bypassPermissions' ? 'warning' : 'shield',
    },
  ];
  for (const [i, r] of perms.rules.entries()) {
    children.push({
      id: `permissions:rule:${i}`,
      label: `${r.kind} ${r.rule}`,
      description: `${sourceLabel(r.source, cwd, home)}${r.inert ? ' · matches nothing' : ''}`,
      tooltip: `${r.kind} rule ${r.rule}
from ${r.source.file ?? 'the command line'}${r.source.line ? ` line ${r.source.line}` : ''}`,
      icon: r.kind === 'deny' ? 'circle-slash' : r.kind === 'ask' ? 'question' : 'check',
      color: r.kind === 'deny' ? 'list.errorForeground' : r.inert ? 'disabledForeground' : undefined,
      open: r.source.file
        ? { kind: 'file', path: r.source.file, line: r.source.line ? r.source.line - 1 : undefined }
        : undefined,
    });
  }
  for (const [i, d] of perms.additionalDirectories.entries()) {
    children.push({
      id: `permissions:dir:${i}`,
      label: shortPath(d.path, cwd, home),
      description: `additional working directory · ${sourceLabel(d.source, cwd, home)}`,
      icon: 'folder',
    });
  }
  for (const [i, n] of perms.notices.entries()) {
    children.push({
      id: `permissions:notice:${i}`,
      label: n.message,
      description: n.code,
      tooltip: n.message,
      icon: 'info',
    });
  }
  return {
    id: 'permissions',
    label: 'Permissions',
    description: `${perms.mode} · ${perms.rules.length} rule${perms.rules.length === 1 ? '' : 's'}`,
    icon: 'shield',
    expanded: false,
    children,
  };
}

/** The whole tree of the Context view. `session` is the chat session's preview, when one runs. */
export function previewTree(p: Preview, opts: { home?: string; session?: Preview | null } = {}): TreeNode[] {
  const out: TreeNode[] = [];
  const t = p.totals;
  out.push({
    id: 'files',
    label: 'Instruction files',
    description: `${p.files.filter((f) => f.status === 'loaded' || f.status === 'attached').length} in the request`,
    icon: 'book',
    children: filesByScope(p, opts.home),
    expanded: true,
  });
  const blockChildren: TreeNode[] = p.blocks.map((b, i) => ({
    id: `block:${i}:${b.kind}`,
    label: BLOCK_LABEL[b.kind] ?? b.kind,
    description: `${tokens(b.tokens)} · ${b.segment}`,
    tooltip: `${BLOCK_LABEL[b.kind] ?? b.kind}: ${tokens(b.tokens)} tokens, cache segment ${b.segment}. Click for its exact text.`,
    icon: 'symbol-text',
    open: { kind: 'text', title: `${BLOCK_LABEL[b.kind] ?? b.kind}`, text: b.text },
  }));
  if (p.gitPending) {
    blockChildren.push({
      id: 'block:gitPending',
      label: 'Git status',
      description: 'being taken…',
      icon: 'loading~spin',
    });
  }
  out.push({
    id: 'blocks',
    label: 'Request',
    description: `${tokens(t.tokens)} tokens · ${t.percent}% of window`,
    icon: 'symbol-namespace',
    children: blockChildren,
    expanded: false,
  });
  if (p.attachments.length) {
    out.push({
      id: 'attachments',
      label: 'Attachments',
      description: `${p.attachments.length} · ${tokens(t.attachments)} tokens`,
      icon: 'link',
      expanded: true,
      children: p.attachments.map((a, i) => ({
        id: `attachment:${i}:${a.path}`,
        label: attachmentLabel(a.path, a.trigger),
        description: `${tokens(a.tokens)}`,
        tooltip: `${a.path}\nattached because ${a.trigger} is touched`,
        icon: 'link',
        open: { kind: 'text', title: `Attachment ${basename(a.path)}`, text: a.text },
      })),
    });
  }
  const skills = skillsNode(p);
  if (skills) out.push(skills);
  const mcp = mcpNode(p);
  if (mcp) out.push(mcp);
  const agents = agentsNode(p, opts.home);
  if (agents) out.push(agents);
  const style = styleNode(p, opts.home);
  if (style) out.push(style);
  const plugins = pluginsNode(p, opts.home);
  if (plugins) out.push(plugins);
  const hooks = p.hooks;
  if (hooks && (hooks.hooks.length || hooks.run)) {
    const running = hooks.hooks.filter((h) => h.status === 'runs').length;
    const children: TreeNode[] = hooks.hooks.map((h, i) => ({
      id: `hook:${i}:${h.event}:${h.path}`,
      label: h.event,
      description: `${h.scope} · ${h.status}${h.matcher !== undefined && h.matcher !== null ? ` · ${h.matcher === '' ? '""' : h.matcher}` : ''} · ${h.command}`,
      // The command in full, wherever it is listed.
      tooltip: [
        `${h.event} hook (${h.scope}): ${h.status}${h.reason ? ` — ${h.reason}` : ''}`,
        `matcher: ${h.matcher === undefined || h.matcher === null ? 'none (every call)' : h.matcher === '' ? '"" (every call)' : h.matcher}`,
        `command: ${h.command}`,
        h.timeout ? `timeout: ${h.timeout} s` : '',
        `lands: ${h.lands}`,
        h.path,
      ]
        .filter(Boolean)
        .join('\n'),
      icon: h.status === 'runs' ? 'zap' : 'circle-slash',
      color: h.status === 'runs' ? undefined : 'disabledForeground',
      open: { kind: 'file', path: h.path, line: h.line ?? undefined },
      contextValue: `hook.${h.status}`,
    }));
    const run = hooks.run;
    if (run) {
      const texts: TreeNode[] = run.texts.map((t, i) => ({
        id: `hookRun:${i}`,
        label: t.event,
        description: `${tokens(t.tokens)} tokens · ${t.text}`,
        tooltip: t.text,
        icon: 'output',
        open: { kind: 'text', title: `${t.event} hook (one run)`, text: t.text },
      }));
      if (run.blocked)
        texts.unshift({
          id: 'hookRun:blocked',
          label: 'The prompt would be blocked',
          description: run.blocked,
          tooltip: run.blocked,
          icon: 'error',
        });
      for (const [i, n] of (run.notes ?? []).entries()) texts.push({ id: `hookRun:note:${i}`, label: n, icon: 'info' });
      children.push({
        id: 'hookRun',
        label: "One run's output",
        description: `${tokens(run.tokens)} tokens`,
        tooltip: run.note,
        icon: 'debug-alt',
        expanded: true,
        children: texts,
      });
    }
    out.push({
      id: 'hooks',
      label: 'Hooks',
      description: `${hooks.hooks.length} configured · ${running} run${hooks.trusted ? '' : ' · folder not trusted: none runs'} · never run by the preview`,
      icon: 'zap',
      expanded: true,
      children,
      contextValue: 'hooks',
    });
  }
  if (p.settings?.length) {
    out.push({
      id: 'settings',
      label: 'Settings files',
      description: `${p.settings.length} read`,
      icon: 'settings-gear',
      expanded: false,
      children: p.settings.map((f, i) => ({
        id: `settings:${i}:${f.path}`,
        label: shortPath(f.path, p.cwd, opts.home),
        description: `${f.scope}${f.valid ? '' : ' · not valid JSON: ignored'}${f.keys.length ? ` · ${f.keys.join(', ')}` : ''}`,
        tooltip: `${f.path}\n${f.valid ? `keys that change what is loaded: ${f.keys.join(', ') || 'none'}` : 'not valid JSON (or not an object): none of its keys apply'}`,
        icon: f.valid ? 'settings-gear' : 'warning',
        color: f.valid ? undefined : 'list.warningForeground',
        open: { kind: 'file', path: f.path },
      })),
    });
  }
  const trust = trustNode(p, opts.home);
  if (trust) out.push(trust);
  if (p.findings.length) {
    out.push({
      id: 'findings',
      label: 'Findings',
      description: String(p.findings.length),
      icon: 'warning',
      expanded: true,
      children: p.findings.map((f, i) => ({
        id: `finding:${i}`,
        label: f.message,
        description: `${basename(f.path)}${f.line !== undefined && f.line !== null ? `:${f.line + 1}` : ''} · ${f.code}`,
        tooltip: `${f.severity}: ${f.message}\n${f.path}`,
        icon: f.severity === 'error' ? 'error' : f.severity === 'warning' ? 'warning' : 'info',
        color:
          f.severity === 'error'
            ? 'list.errorForeground'
            : f.severity === 'warning'
              ? 'list.warningForeground'
              : undefined,
        open: { kind: 'file', path: f.path, line: f.line ?? undefined },
      })),
    });
  }
  if (p.pending.length) {
    out.push({
      id: 'pending',
      label: 'Unsaved instruction edits',
      description: String(p.pending.length),
      icon: 'edit',
      expanded: true,
      children: p.pending.map((e, i) => ({
        id: `pending:${i}`,
        label: basename(e.path),
        description: e.message,
        tooltip: `${e.path}\n${e.message}`,
        icon: 'edit',
        open: { kind: 'file', path: e.path },
      })),
    });
  }
  const perms = (opts.session ?? p).permissions;
  if (perms) out.push(permissionsNode(perms, p.cwd, opts.home));
  const s = opts.session;
  if (s?.session) {
    const children: TreeNode[] = [
      {
        id: 'session:figures',
        label: `${tokens(s.totals.tokens)} tokens`,
        description: `${s.session.messages} message${s.session.messages === 1 ? '' : 's'}${s.session.estimated ? ' · estimated' : ''}`,
        icon: 'pulse',
      },
    ];
    for (const [i, e] of s.pending.entries()) {
      children.push({
        id: `session:pending:${i}`,
        label: basename(e.path),
        description: e.message,
        tooltip: `${e.path}\n${e.message}\nThe running session keeps what it started with; a new session sees this.`,
        icon: 'diff-modified',
        open: { kind: 'file', path: e.path },
      });
    }
    out.push({
      id: 'session',
      label: 'Chat session',
      description: s.pending.length ? `${s.pending.length} instruction edit(s) it does not see` : 'up to date',
      icon: 'comment-discussion',
      expanded: true,
      children,
      contextValue: s.pending.length ? 'sessionPending' : 'session',
    });
  }
  return out;
}
