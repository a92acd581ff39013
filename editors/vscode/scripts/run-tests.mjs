#!/usr/bin/env node
// `npm test`: the generated files are current, the code typechecks, the VSIX is built (for the
// end-to-end tests), then one `node --test` run over the unit, protocol and end-to-end tests.
// Without the release binaries, code-server or chromium, the protocol and end-to-end tests are
// skipped with the reason, unless CI=true or CLAUDE_CONTEXT_E2E=1 (then they fail).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
const node = process.execPath;
run(node, ['scripts/gen.mjs', '--check']);
run(node, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', '.', '--noEmit']);
run(node, ['scripts/build.mjs', '--tests']);
const binary = path.resolve(root, '../../target/release/claude-context');
if (fs.existsSync(binary)) run('./scripts/package', [], { stdio: ['ignore', 'ignore', 'inherit'] });
else console.log(`# ${binary} not built: the VSIX is not rebuilt`);
run(node, ['--test', '--test-concurrency=1', 'out/test/unit/', 'out/test/protocol/', 'test/e2e/']);
