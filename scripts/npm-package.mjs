// Assembles the npm package in pkg/dist from the wasm cargo built and the JS sources in js/,
// then packs it: `node scripts/npm-package.mjs <edgebucket.wasm>` (see `make package`).
//
// 1. wasm-bindgen (the version pinned in Cargo.lock) writes the ESM glue ("web" target);
// 2. wasm-opt from the npm package binaryen (never Debian's) shrinks the module;
// 3. the module is also written as base64 for the inline entry (Node, browsers, bundlers);
// 4. js/ is copied beside it, and esbuild bundles the CommonJS build and edgebucket/client;
// 5. `npm pack` writes target/npm/edgebucket-<version>.tgz, the tarball the tests install.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { buildClient } from './client-package.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'pkg/dist');
const wasmDir = path.join(dist, 'wasm');
const input = path.resolve(process.argv[2] ?? 'target/wasm32-unknown-unknown/release/edgebucket.wasm');
const run = (cmd, args, options = {}) => execFileSync(cmd, args, { stdio: 'inherit', cwd: root, ...options });

fs.rmSync(dist, { recursive: true, force: true });
run('wasm-bindgen', ['--target', 'web', '--no-typescript', '--out-dir', wasmDir, '--out-name', 'edgebucket', input]);

const wasm = path.join(wasmDir, 'edgebucket_bg.wasm');
// The features rustc's wasm32 target emits; wasm-opt must be told, not guess.
const features = ['bulk-memory', 'nontrapping-float-to-int', 'sign-ext', 'mutable-globals', 'reference-types', 'multivalue'];
run(path.join(root, 'node_modules/.bin/wasm-opt'), ['-O3', '--strip-debug', '--strip-producers', ...features.map((f) => `--enable-${f}`), wasm, '-o', wasm]);
fs.writeFileSync(path.join(wasmDir, 'inline.js'), `export const wasmBase64 = '${fs.readFileSync(wasm).toString('base64')}';\n`);

for (const file of fs.readdirSync(path.join(root, 'js'))) {
  if (file.endsWith('.js')) fs.copyFileSync(path.join(root, 'js', file), path.join(dist, file));
}
fs.copyFileSync(path.join(root, 'js/index.d.ts'), path.join(dist, 'index.d.ts'));
fs.copyFileSync(path.join(root, 'js/index.d.ts'), path.join(dist, 'index.d.cts'));

await esbuild.build({
  entryPoints: [path.join(dist, 'entry-inline.js')],
  outfile: path.join(dist, 'edgebucket.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'neutral',
  target: 'es2022',
  logLevel: 'error',
  // The glue's async init refers to import.meta.url; the CommonJS build only uses initSync.
  define: { 'import.meta.url': 'undefined' },
});

// edgebucket/client: js/client/ bundled per runtime (scripts/client-package.mjs).
await buildClient(root, dist);

const out = path.join(root, 'target/npm');
fs.mkdirSync(out, { recursive: true });
run('npm', ['pack', '--silent', '--pack-destination', out], { cwd: path.join(root, 'pkg'), stdio: ['ignore', 'inherit', 'inherit'] });
