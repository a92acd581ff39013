// The words of a permission question: the server's own for a project's MCP server (Claude Code's
// dialog), ours for a tool call, no session answer when the server offers none.
import assert from 'node:assert/strict';
import test from 'node:test';
import { initialState, reduce } from '../../src/core/chatModel';
import { permissionStyles, permissionWords } from '../../src/core/permission';

const mcpServer = {
  sessionId: 's',
  tool: 'mcpServer',
  input: { server: 'tracker', command: 'npx', args: ['-y', 'tracker-mcp'], scope: 'project', source: '/w/.mcp.json' },
  summary: 'New MCP server found in this project: tracker',
  sessionScope: 'Use this and all future MCP servers in this project',
  warning: 'MCP servers may execute code or access system resources. All tool calls require approval.',
  choices: {
    allow: 'Use this MCP server',
    allowSession: 'Use this and all future MCP servers in this project',
    deny: 'Continue without using this MCP server',
  },
};

test("a project's MCP server is asked in the server's words, kept through the chat model", () => {
  const s = reduce(initialState(), { type: 'permissionOpen', key: 'k', params: mcpServer });
  const item = s.items.find((i) => i.kind === 'permission');
  assert.ok(item && item.kind === 'permission');
  assert.deepEqual(item.choices, mcpServer.choices);
  assert.deepEqual(permissionWords(item), {
    title: 'New MCP server found in this project: tracker',
    allow: 'Use this MCP server',
    allowSession: 'Use this and all future MCP servers in this project',
    deny: 'Continue without using this MCP server',
  });
});

test('a tool call is asked in our words; without a scope it can only be allowed once', () => {
  assert.deepEqual(permissionWords({ summary: 'Bash: ls', sessionScope: 'this exact command for this session: ls' }), {
    title: 'Claude wants to run: Bash: ls',
    allow: 'Allow once',
    allowSession: 'Allow this exact command for this session: ls',
    deny: 'Deny',
  });
  const w = permissionWords({ summary: 'Write /w/.gitattributes (1 lines)' });
  assert.equal(w.allowSession, undefined);
  assert.equal(w.title, 'Claude wants to run: Write /w/.gitattributes (1 lines)');
});

test("a project's MCP server's safe answer is the primary one and nothing is red; a tool call keeps allow primary", () => {
  const mcp = permissionStyles(mcpServer);
  assert.equal(mcp.deny, 'primary');
  assert.notEqual(mcp.allow, 'primary');
  assert.ok(!Object.values(mcp).includes('danger'), 'no answer of the MCP question is styled as dangerous');
  assert.deepEqual(permissionStyles({ choices: null }), { allow: 'primary', allowSession: '', deny: 'danger' });
});
