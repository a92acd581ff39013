// The preview → tree model and the meter's text, level and tooltip.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fromPreview, fromUsage, meterLevel, meterText } from '../../src/core/meter';
import {
  agentsNode,
  attachmentLabel,
  fileReason,
  mcpNode,
  pluginsNode,
  previewTree,
  styleNode,
  type Preview,
  type TreeNode,
} from '../../src/core/previewTree';
import { windowSize } from '../../src/core/format';
import { check } from '../../src/core/validate';
import { ContextPreview } from '../../src/protocol/generated';

// The example of docs/protocol.md (a real server answer, texts shortened).
const fixture = path.resolve(process.cwd(), 'test/fixtures/preview.json');
const preview = (): Preview => JSON.parse(fs.readFileSync(fixture, 'utf8'));

function find(nodes: TreeNode[], pred: (n: TreeNode) => boolean): TreeNode | undefined {
  for (const n of nodes) {
    if (pred(n)) return n;
    const c = find(n.children ?? [], pred);
    if (c) return c;
  }
  return undefined;
}

test('the fixture fits the schema the server publishes', () => {
  const c = check(ContextPreview.resultSchema, preview());
  assert.ok(c.ok, c.ok ? '' : c.error);
  const bad = check(ContextPreview.resultSchema, { ...preview(), totals: { tokens: 'many' } });
  assert.equal(bad.ok, false);
});

test('files are grouped by scope in the order managed, user, project, local, memory', () => {
  const tree = previewTree(preview());
  const files = tree.find((n) => n.id === 'files')!;
  assert.deepEqual(
    files.children!.map((n) => n.label),
    ['User', 'Project', 'Local'],
  );
  assert.match(files.children![1].description!, /^3\/4 in the request · 25 tokens$/);
});

test('an @-included file is nested under the file that includes it, a missing one says why', () => {
  const tree = previewTree(preview());
  const claude = find(tree, (n) => n.label === 'CLAUDE.md' && n.id.includes('/shop/CLAUDE.md'))!;
  assert.deepEqual(
    claude.children!.map((n) => n.label),
    ['style.md', 'missing.md'],
  );
  const missing = claude.children![1];
  assert.equal(missing.icon, 'warning');
  assert.match(missing.description!, /skipped: not found/);
  assert.equal(missing.open, undefined, 'a file that does not exist does not open');
  const style = claude.children![0];
  assert.deepEqual(style.open, { kind: 'file', path: '/home/me/work/shop/docs/style.md' });
});

test('an attached rule shows the glob and the file that matched', () => {
  const rule = find(previewTree(preview()), (n) => n.label === 'typescript.md' && n.id.startsWith('file:'))!;
  assert.equal(rule.icon, 'link');
  assert.equal(rule.description, 'paths "src/**/*.ts" matched src/api/handler.ts · 7 tokens');
  assert.match(rule.tooltip!, /paths: src\/\*\*\/\*\.ts/);
});

test('blocks open their exact text; attachments read "rule X now applies (because of Y)"', () => {
  const p = preview();
  const tree = previewTree(p);
  const blocks = tree.find((n) => n.id === 'blocks')!;
  assert.deepEqual(
    blocks.children!.map((b) => b.label),
    ['System prompt (static)', 'System prompt (session)', 'Instructions', 'Git status'],
  );
  assert.deepEqual(blocks.children![2].open, { kind: 'text', title: 'Instructions', text: p.blocks[2].text });
  const att = tree.find((n) => n.id === 'attachments')!.children![0];
  assert.equal(att.label, 'typescript.md now applies (because of handler.ts)');
  assert.deepEqual(att.open, { kind: 'text', title: 'Attachment typescript.md', text: p.attachments[0].text });
  assert.equal(attachmentLabel('/a/r.md', ''), 'r.md now applies');
});

test('a file excluded by claudeMdExcludes says by which pattern of which settings file; settings files are listed', () => {
  const tree = previewTree(preview(), { home: '/home/me' });
  const local = find(tree, (n) => n.label === 'CLAUDE.local.md')!;
  assert.equal(local.icon, 'eye-closed');
  assert.match(
    local.description!,
    /^excluded by the claudeMdExcludes pattern "\*\*\/CLAUDE\.local\.md" of \/home\/me\/\.claude\/settings\.json/,
  );
  const settings = tree.find((n) => n.id === 'settings')!;
  assert.equal(settings.children![0].label, '~/.claude/settings.json');
  assert.equal(settings.children![0].description, 'user · claudeMdExcludes');
  const reason = fileReason({
    path: '/p/CLAUDE.local.md',
    scope: 'local',
    description: '',
    depth: 0,
    tokens: 9,
    status: 'excluded',
    excludedBy: { pattern: '**/x', settings: '/p/.claude/settings.json' },
  });
  assert.equal(reason, 'excluded by the claudeMdExcludes pattern "**/x" of settings.json');
});

test('findings open the file at their line', () => {
  const f = previewTree(preview()).find((n) => n.id === 'findings')!.children![0];
  assert.deepEqual(f.open, { kind: 'file', path: '/home/me/work/shop/CLAUDE.md', line: 4 });
  assert.match(f.description!, /CLAUDE\.md:5 · include-not-found/);
  assert.equal(f.icon, 'error');
});

test('git pending shows a placeholder; empty sections are left out', () => {
  const p = { ...preview(), gitPending: true, findings: [], attachments: [], pending: [], settings: [] };
  const tree = previewTree(p);
  assert.deepEqual(
    tree.map((n) => n.id),
    ['files', 'blocks'],
  );
  assert.ok(find(tree, (n) => n.id === 'block:gitPending'));
});

test('a chat session lists the instruction edits it does not see, with the "new session" action', () => {
  const session: Preview = {
    ...preview(),
    pending: [{ path: '/home/me/work/shop/CLAUDE.md', message: 'changed since the session started' }],
    session: { sessionId: 's', messages: 4, tokens: 3279, estimated: false, transcript: '/t.jsonl' },
  };
  const node = previewTree(preview(), { session }).find((n) => n.id === 'session')!;
  assert.equal(node.contextValue, 'sessionPending');
  assert.equal(node.children![1].label, 'CLAUDE.md');
  assert.equal(node.children![0].description, '4 messages');
  const none = previewTree(preview(), { session: { ...session, pending: [] } }).find((n) => n.id === 'session')!;
  assert.equal(none.contextValue, 'session');
});

test('hooks are listed with their event, scope, status, matcher and full command; one run shows its texts', () => {
  const p: Preview = {
    ...preview(),
    hooks: {
      trusted: true,
      layout: 'environment',
      hooks: [
        {
          event: 'PreToolUse',
          scope: 'project',
          path: '/home/me/work/shop/.claude/settings.json',
          line: 4,
          matcher: 'Bash',
          command: 'python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py --deny "rm -rf"',
          timeout: 5,
          status: 'runs',
          lands: 'after the tool result',
        },
        {
          event: 'Stop',
          scope: 'user',
          path: '/home/me/.claude/settings.json',
          command: 'checklist.sh',
          status: 'off',
          reason: 'disableAllHooks is true',
          lands: 'x',
        },
      ],
      run: {
        note: "one run's output",
        prompt: '',
        texts: [{ event: 'SessionStart', text: 'SessionStart:startup hook success: SPRINT-42', tokens: 11 }],
        tokens: 11,
      },
    },
  };
  const c = check(ContextPreview.resultSchema, p);
  assert.ok(c.ok, c.ok ? '' : c.error);
  const node = previewTree(p).find((n) => n.id === 'hooks')!;
  assert.equal(node.description, '2 configured · 1 run · never run by the preview');
  const guard = node.children![0];
  assert.equal(guard.label, 'PreToolUse');
  assert.ok(guard.description!.endsWith('python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py --deny "rm -rf"'));
  assert.ok(guard.tooltip!.includes('command: python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py --deny "rm -rf"'));
  assert.deepEqual(guard.open, { kind: 'file', path: '/home/me/work/shop/.claude/settings.json', line: 4 });
  assert.equal(node.children![1].icon, 'circle-slash');
  const run = node.children![2];
  assert.equal(run.label, "One run's output");
  assert.deepEqual(run.children![0].open, {
    kind: 'text',
    title: 'SessionStart hook (one run)',
    text: 'SessionStart:startup hook success: SPRINT-42',
  });
  assert.equal(
    previewTree(preview()).find((n) => n.id === 'hooks'),
    undefined,
    'no hooks, no section',
  );
});

test('reasons in words for each status', () => {
  const base = { path: '/p/r.md', scope: 'project', description: '', depth: 0, tokens: 1 };
  assert.equal(fileReason({ ...base, status: 'loaded' }), 'always loaded');
  assert.equal(fileReason({ ...base, status: 'attached', matchedGlob: 'src/**' }), 'matched src/**');
  assert.equal(fileReason({ ...base, status: 'inactive', globs: ['**/*.py'] }), 'no touched file matches **/*.py');
  assert.equal(fileReason({ ...base, status: 'skipped', reason: 'too deep' }), 'skipped: too deep');
  assert.equal(fileReason({ ...base, status: 'empty' }), 'empty');
});

test('the meter text is tokens / window', () => {
  assert.equal(meterText(12408, 200000), '12,408 / 200k');
  assert.equal(meterText(0, 1_000_000), '0 / 1M');
  assert.equal(windowSize(128_500), '128.5k');
  assert.equal(windowSize(123_456), '123,456');
});

test('the meter is coloured only near the compaction threshold', () => {
  assert.equal(meterLevel(100_000, 167_000), 'normal');
  assert.equal(meterLevel(150_299, 167_000), 'normal');
  assert.equal(meterLevel(150_300, 167_000), 'warning');
  assert.equal(meterLevel(167_000, 167_000), 'error');
  const m = fromPreview(preview(), 'a new session');
  assert.equal(m.text, '1,073 / 200k');
  assert.equal(m.level, 'normal');
});

test('the tooltip breaks the total down, and says which figures are estimates', () => {
  const m = fromPreview(preview(), 'a new session');
  for (const row of [
    '| System prompt | 746 |',
    '| Instructions | 152 |',
    '| Git status | 144 |',
    '| Attachments | 31 |',
    '| **Total** | **1,073** |',
  ]) {
    assert.ok(m.tooltip.includes(row), `${row} in ${m.tooltip}`);
  }
  assert.ok(!m.tooltip.includes('Conversation'));
  assert.match(m.tooltip, /auto-compaction at 167,000/);
  assert.match(m.tooltip, /Estimated\./);
  const s = fromPreview(
    {
      ...preview(),
      totals: { ...preview().totals, tokens: 5073 },
      session: { sessionId: 's', messages: 2, tokens: 5073, estimated: false, transcript: 't' },
    },
    'chat',
  );
  assert.ok(s.tooltip.includes('| Conversation | 4,000 |'), s.tooltip);
  const u = fromUsage(
    {
      inputTokens: 12,
      outputTokens: 9,
      cacheCreationInputTokens: 0,
      cacheReadInputTokens: 1500,
      contextTokens: 1521,
      window: 200000,
      percent: 0.8,
    },
    167000,
  );
  assert.equal(u.text, '1,521 / 200k');
  assert.match(u.tooltip, /the API's figures/);
  assert.equal(
    fromUsage(
      {
        inputTokens: 0,
        outputTokens: 0,
        cacheCreationInputTokens: 0,
        cacheReadInputTokens: 0,
        contextTokens: 170000,
        window: 200000,
        percent: 85,
      },
      167000,
    ).level,
    'error',
  );
});

test('workspace trust: the state, what waits and why, a committed local settings file; nothing when there is nothing to say', () => {
  const p = preview();
  assert.equal(
    previewTree(p).find((n) => n.id === 'trust'),
    undefined,
    'no trust in the fixture: no node',
  );
  const trust = {
    folder: p.cwd,
    state: 'neverAsked' as const,
    summary: 'never asked: a chat asks before its first turn',
    localTracked: true,
    held: [
      {
        kind: 'mcpServer' as const,
        key: 'demo',
        path: `${p.cwd}/.mcp.json`,
        detail: 'python3 srv.py',
        status: 'waitingForTrust' as const,
        reason: 'no server of .mcp.json starts before you trust this folder',
      },
      {
        kind: 'hooks' as const,
        key: 'hooks',
        path: `${p.cwd}/.claude/settings.json`,
        detail: 'Stop',
        status: 'notSupported' as const,
        reason: 'claude-context runs no hooks (yet)',
        line: 3,
      },
    ],
  };
  const withTrust = { ...p, trust };
  assert.ok(check(ContextPreview.resultSchema, withTrust).ok, 'fits the schema');
  const node = previewTree(withTrust).find((n) => n.id === 'trust')!;
  assert.equal(node.description, 'never asked');
  assert.equal(node.icon, 'workspace-untrusted');
  assert.deepEqual(
    node.children!.map((c) => [c.label, c.description]),
    [
      ['.claude/settings.local.json is tracked by git', "read as the repository's file, not yours"],
      ['demo (python3 srv.py)', 'waits for trust · .mcp.json'],
      ['hooks (Stop)', 'not used by claude-context · .claude/settings.json'],
    ],
  );
  assert.deepEqual(node.children![2].open, { kind: 'file', path: `${p.cwd}/.claude/settings.json`, line: 2 });
  const trusted = previewTree({
    ...p,
    trust: { ...trust, state: 'trusted', held: [], localTracked: false, source: 'claudeCode', summary: 'trusted' },
  }).find((n) => n.id === 'trust')!;
  assert.equal(trusted.description, 'trusted');
  assert.equal(trusted.icon, 'workspace-trusted');
});

test("the tooltip's parts add up to the total, tool definitions and the conversation included", () => {
  const p = preview();
  // A server answer of today: tools carried by every request; skills and MCP are parts of the system prompt.
  p.totals = {
    ...p.totals,
    system: 745,
    tools: 1841,
    instructions: 81,
    git: 144,
    attachments: 0,
    skills: 20,
    mcp: 12,
    agents: 15,
    conversation: 300,
    tokens: 3111,
  };
  p.session = { sessionId: 's', messages: 2, tokens: 3111, estimated: false, transcript: 't' };
  const m = fromPreview(p, 'chat');
  const rows = [...m.tooltip.matchAll(/^\| ([^|*↳][^|]*) \| ([\d,]+) \|$/gm)].map(
    (r) => [r[1], Number(r[2].replace(/,/g, ''))] as const,
  );
  assert.deepEqual(
    rows.map((r) => r[0]),
    ['System prompt', 'Tool definitions', 'Instructions', 'Git status', 'Attachments', 'Conversation'],
  );
  assert.equal(
    rows.reduce((a, r) => a + r[1], 0),
    3111,
    m.tooltip,
  );
  assert.ok(m.tooltip.includes('| ↳ of which the skills listing | 20 |'), m.tooltip);
  assert.ok(m.tooltip.includes('| ↳ of which the agent types listing | 15 |'), m.tooltip);
  assert.ok(m.tooltip.includes('| **Total** | **3,111** |'));
});

test('MCP servers: status, scope, tokens now and once loaded, the failure with its reason; the section opens the exact notes', () => {
  const p = preview();
  p.mcp = {
    servers: [
      {
        name: 'tracker',
        scope: 'project',
        path: '/w/.mcp.json',
        command: 'tracker-mcp --stdio',
        status: 'not approved',
        reason: 'a project server: it starts only once you approve it',
        nameTokens: 0,
        instructionsTokens: 0,
        definitionTokens: 0,
      },
      {
        name: 'web',
        scope: 'user',
        path: '/h/.claude.json',
        command: 'https://web.example/mcp',
        status: 'failed',
        reason: 'ECONNREFUSED: Unable to connect.',
        nameTokens: 9,
        instructionsTokens: 0,
        definitionTokens: 0,
      },
      {
        name: 'docs',
        scope: 'local',
        path: '/h/.claude.json',
        command: 'docs-mcp',
        status: 'running',
        reason: 'approved',
        nameTokens: 30,
        instructionsTokens: 12,
        definitionTokens: 410,
        tools: ['mcp__docs__search', 'mcp__docs__read'],
      },
    ],
    tokens: 51,
    definitionTokens: 410,
    failedNote: 'The following MCP servers are configured but failed to connect',
  };
  const node = mcpNode(p)!;
  assert.equal(node.description, '3 · 1 failed · 51 tokens · +410 when loaded');
  assert.equal(node.expanded, true, 'a failure opens the section');
  assert.deepEqual(
    node.children!.map((c) => c.description),
    [
      'not approved · project · 0 tokens',
      'failed · user · 9 tokens',
      'running · local · 2 tools · 42 tokens · +410 when loaded',
    ],
  );
  assert.match(node.children![1].tooltip!, /ECONNREFUSED/);
  assert.deepEqual(node.open, {
    kind: 'text',
    title: 'MCP servers in the environment',
    text: 'The following MCP servers are configured but failed to connect',
  });
  assert.ok(
    find(previewTree(p), (n) => n.id === 'mcp'),
    'the tree has the section',
  );
});

test('skills: how each is listed, a conditional one with its paths until a touched file activates it', () => {
  const p = preview();
  p.skills = {
    listing: 'The following skills are available for use with the Skill tool:\n\n- always: ALWAYS',
    tokens: 20,
    budget: 30000,
    width: 16,
    skills: [
      {
        name: 'always',
        path: '/home/me/work/shop/.claude/skills/always/SKILL.md',
        source: 'project',
        description: 'ALWAYS',
        listed: 'full',
        tokens: 4,
        invokedTokens: 9,
      },
      {
        name: 'cond',
        path: '/home/me/work/shop/.claude/skills/cond/SKILL.md',
        source: 'project',
        description: 'COND DESC',
        listed: 'conditional',
        paths: ['src/**'],
        tokens: 0,
        invokedTokens: 9,
      },
      {
        name: 'later',
        path: '/home/me/work/shop/.claude/skills/later/SKILL.md',
        source: 'project',
        description: 'LATER',
        listed: 'conditional',
        paths: ['docs/**'],
        tokens: 0,
        invokedTokens: 9,
      },
    ],
    activated: [
      {
        text: 'The following skills are available for use with the Skill tool:\n\n- cond: COND DESC',
        trigger: '/home/me/work/shop/src/a.ts',
        tokens: 20,
        skills: ['cond'],
      },
    ],
  };
  const c = check(ContextPreview.resultSchema, p);
  assert.ok(c.ok, c.ok ? '' : c.error);
  const skills = previewTree(p).find((n) => n.id === 'skills')!;
  assert.equal(skills.description, '1 listed · 2 conditional · 20 tokens');
  assert.deepEqual(skills.open, { kind: 'text', title: 'Skills listing', text: p.skills.listing });
  const [always, cond, later, activated] = skills.children!;
  assert.equal(always.description, 'listed · 4 tokens');
  assert.equal(cond.description, 'activated by a touched file · paths: src/** · 0 tokens');
  assert.equal(cond.contextValue, 'skill.activated');
  assert.equal(later.description, 'listed when a touched file matches · paths: docs/** · 0 tokens');
  assert.equal(activated.label, 'Conditional skills activated (because of a.ts)');
  assert.deepEqual(activated.open, { kind: 'text', title: 'Skills activated', text: p.skills.activated![0].text });
  delete p.skills;
  assert.equal(
    previewTree(p).find((n) => n.id === 'skills'),
    undefined,
  );
});

test('the permissions node lists the mode and each rule with the file and line it comes from', () => {
  const p = preview();
  p.permissions = {
    mode: 'plan',
    modeSource: { from: 'settings', origin: 'user', file: '/home/me/.claude/settings.json', line: 2 },
    availableModes: [{ id: 'plan', name: 'Plan', description: 'Read-only: explore and plan, change nothing' }],
    trusted: false,
    rules: [
      {
        kind: 'deny',
        rule: 'Read(./.env)',
        source: { origin: 'project', file: '/home/me/work/shop/.claude/settings.json', line: 4 },
      },
      {
        kind: 'allow',
        rule: 'Write(src/**)',
        source: { origin: 'user', file: '/home/me/.claude/settings.json', line: 6 },
        inert: true,
      },
      { kind: 'allow', rule: 'Bash(npm test:*)', source: { origin: 'commandLine' } },
    ],
    additionalDirectories: [],
    notices: [],
  };
  const node = find(previewTree(p, { home: '/home/me' }), (n) => n.id === 'permissions')!;
  assert.equal(node.description, 'plan · 3 rules');
  const [mode, deny, write, cli] = node.children!;
  assert.equal(mode.label, 'Mode: plan');
  assert.equal(mode.description, 'defaultMode in ~/.claude/settings.json:3');
  assert.equal(deny.label, 'deny Read(./.env)');
  assert.equal(deny.description, '.claude/settings.json:4');
  assert.deepEqual(deny.open, { kind: 'file', path: '/home/me/work/shop/.claude/settings.json', line: 3 });
  assert.match(write.description!, /matches nothing/);
  assert.equal(cli.description, 'command line');
});

test('agents: the listing tokens, each agent with scope, tools and tokens; a file-backed one opens its file', () => {
  const p = preview();
  p.agents = {
    listing: 'Available agent types and the tools they have access to:\n- general-purpose: …\n- reviewer: …',
    tokens: 96,
    agents: [
      {
        name: 'general-purpose',
        scope: 'builtIn',
        description: 'General-purpose agent for researching complex questions',
        tools: '*',
        tokens: 61,
        bodyTokens: 420,
      },
      {
        name: 'reviewer',
        scope: 'project',
        path: '/home/me/work/shop/.claude/agents/reviewer.md',
        description: 'Reviews a diff for bugs',
        tools: 'Read, Grep',
        model: 'sonnet',
        tokens: 35,
        bodyTokens: 80,
      },
    ],
    shadowed: [{ name: 'reviewer', scope: 'user', by: 'project', file: '/home/me/.claude/agents/reviewer.md' }],
  };
  const c = check(ContextPreview.resultSchema, p);
  assert.ok(c.ok, c.ok ? '' : c.error);
  const node = agentsNode(p)!;
  assert.equal(node.description, '2 types · 96 tokens');
  assert.deepEqual(node.open, { kind: 'text', title: 'Agent types listing', text: p.agents.listing });
  const [builtIn, reviewer, shadowed] = node.children!;
  assert.equal(builtIn.description, 'built-in · tools: * · 61 tokens');
  assert.equal(builtIn.open, undefined, 'a built-in agent has no file to open');
  assert.match(builtIn.tooltip!, /^General-purpose agent for researching complex questions\n/);
  assert.equal(reviewer.description, 'project · tools: Read, Grep · 35 tokens');
  assert.deepEqual(reviewer.open, { kind: 'file', path: '/home/me/work/shop/.claude/agents/reviewer.md' });
  assert.match(
    reviewer.tooltip!,
    /Reviews a diff for bugs\n\.claude\/agents\/reviewer\.md\nmodel: sonnet\n.*80 tokens/,
  );
  assert.equal(shadowed.description, 'user · replaced by the project one');
  assert.deepEqual(shadowed.open, { kind: 'file', path: '/home/me/.claude/agents/reviewer.md' });
  assert.ok(
    find(previewTree(p), (n) => n.id === 'agents'),
    'the tree has the section',
  );
  delete p.agents;
  assert.equal(agentsNode(p), undefined);
});

test('output style: name, source, tokens and reminder tokens; an unknown name and dropped coding instructions are said', () => {
  const p = preview();
  p.style = {
    name: 'Terse',
    source: 'project',
    path: '/home/me/work/shop/.claude/output-styles/terse.md',
    description: 'Short answers',
    setting: 'Terse',
    settingPath: '/home/me/work/shop/.claude/settings.json',
    unknown: false,
    tokens: 140,
    reminderTokens: 22,
    dropsCodingInstructions: true,
    available: ['default', 'Explanatory', 'Learning', 'Terse'],
  };
  const c = check(ContextPreview.resultSchema, p);
  assert.ok(c.ok, c.ok ? '' : c.error);
  const node = styleNode(p)!;
  assert.equal(node.label, 'Output style');
  assert.equal(node.description, 'Terse · project · 140 tokens · +22 per reminder · coding instructions left out');
  assert.deepEqual(node.open, { kind: 'file', path: '/home/me/work/shop/.claude/output-styles/terse.md' });
  assert.deepEqual(
    node.children!.map((n) => n.label),
    ['outputStyle: "Terse"', 'coding instructions left out'],
  );
  assert.deepEqual(node.children![0].open, { kind: 'file', path: '/home/me/work/shop/.claude/settings.json' });

  p.style = {
    name: 'default',
    setting: 'terse',
    settingPath: '/home/me/.claude/settings.json',
    unknown: true,
    tokens: 0,
    reminderTokens: 0,
    dropsCodingInstructions: false,
    available: ['default', 'Terse'],
  };
  const unknown = styleNode(p, '/home/me')!;
  assert.equal(unknown.description, 'default · 0 tokens · +0 per reminder · unknown name: default applies');
  assert.equal(unknown.expanded, true, 'an unknown name opens the node');
  assert.equal(unknown.open, undefined, 'the default has no file');
  assert.deepEqual(
    unknown.children!.map((n) => [n.label, n.description]),
    [
      ['outputStyle: "terse"', '~/.claude/settings.json'],
      ['unknown name: default applies', 'choose one of default, Terse'],
    ],
  );
  assert.ok(find(previewTree(p), (n) => n.id === 'style'));
});

test('plugins: each with what it adds and its tokens, children for its parts; the ones not loaded with why', () => {
  const p = preview();
  p.plugins = {
    tokens: 58,
    plugins: [
      {
        name: 'demo',
        id: 'demo@local',
        root: '/home/me/plugins/demo',
        enabledBy: 'user',
        skills: [{ name: 'demo:greet', tokens: 12 }],
        servers: [{ name: 'plugin:demo:db', tokens: 30 }],
        styles: [{ name: 'demo:pirate', tokens: 16 }],
        hooks: ['SessionStart: ./hello.sh'],
        agentsDir: '/home/me/plugins/demo/agents',
        skipped: ['/home/me/plugins/demo/skills/evil/SKILL.md'],
        tokens: 42,
      },
    ],
    notLoaded: [{ id: 'repo-tool@team', reason: "the repository's plugin waits for trust" }],
  };
  const c = check(ContextPreview.resultSchema, p);
  assert.ok(c.ok, c.ok ? '' : c.error);
  const node = pluginsNode(p)!;
  assert.equal(node.description, '1 loaded · 1 not loaded · 58 tokens');
  assert.equal(node.expanded, true, 'a plugin not loaded opens the section');
  const [demo, notLoaded] = node.children!;
  assert.equal(demo.label, 'demo@local');
  assert.equal(demo.description, '1 skill · 1 server · 1 style · 1 hook · 42 tokens');
  assert.match(demo.tooltip!, /enabled by you/);
  assert.deepEqual(
    demo.children!.map((n) => [n.label, n.description]),
    [
      ['demo:greet', 'skill · 12 tokens'],
      ['plugin:demo:db', 'MCP server · 30 tokens'],
      ['demo:pirate', 'output style · 16 tokens'],
      ['SessionStart: ./hello.sh', 'hook · output unknown until it runs'],
      ['skills/evil/SKILL.md', 'not read: links outside the plugin'],
    ],
  );
  assert.equal(notLoaded.label, 'repo-tool@team');
  assert.equal(notLoaded.description, "not loaded: the repository's plugin waits for trust");
  assert.ok(find(previewTree(p), (n) => n.id === 'plugins'));
  p.plugins = { tokens: 0, plugins: [], notLoaded: [] };
  assert.equal(pluginsNode(p), undefined);
});
