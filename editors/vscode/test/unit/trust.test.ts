// VS Code's workspace trust as the extension tells the server: beside the settings, never inside
// them (a repository's .vscode/settings.json can set any claudeContext.* key), and granted later.
import assert from 'node:assert/strict';
import test from 'node:test';
import { initializationOptions, trustGranted } from '../../src/core/trust';

test('the workspace trust goes beside the settings: a repository cannot vouch for itself', () => {
  // What a repository's .vscode/settings.json could put in the section.
  const fromRepository = { model: 'claude-opus-5-5', workspaceTrust: true, claudeContext: { x: 1 } };
  assert.deepEqual(initializationOptions(fromRepository, false), {
    claudeContext: fromRepository,
    workspaceTrust: false,
  });
  assert.deepEqual(initializationOptions({}, true), { claudeContext: {}, workspaceTrust: true });
  assert.deepEqual(trustGranted(), { trusted: true });
});
