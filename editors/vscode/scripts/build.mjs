#!/usr/bin/env node
// Bundles the extension (out/extension.js, for the extension host) and the chat webview
// (out/webview.js, for the browser) with esbuild; with --tests, also the unit and protocol tests
// (out/test/**.test.js, for `node --test`). --production minifies and drops source maps.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');
const common = {
  bundle: true,
  minify: production,
  sourcemap: production ? false : 'linked',
  logLevel: 'warning',
  absWorkingDir: root,
};

await esbuild.build({
  ...common,
  entryPoints: ['src/extension.ts'],
  outfile: 'out/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
});
await esbuild.build({
  ...common,
  entryPoints: ['src/webview/main.ts'],
  outfile: 'out/webview.js',
  platform: 'browser',
  format: 'iife',
  target: 'chrome120',
});
if (tests) {
  const entries = [];
  for (const dir of ['test/unit', 'test/protocol']) {
    if (!fs.existsSync(path.join(root, dir))) continue;
    for (const f of fs.readdirSync(path.join(root, dir))) if (f.endsWith('.test.ts')) entries.push(`${dir}/${f}`);
  }
  fs.rmSync(path.join(root, 'out/test'), { recursive: true, force: true });
  await esbuild.build({
    ...common,
    sourcemap: 'inline',
    entryPoints: entries,
    outdir: 'out/test',
    outbase: 'test',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outExtension: { '.js': '.mjs' },
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
}
