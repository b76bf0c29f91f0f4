// The package in real workerd (miniflare), bundled as wrangler bundles a Worker: esbuild with
// the workerd conditions, the .wasm kept as a module (workerd forbids compiling wasm from bytes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { Miniflare } from 'miniflare';
import { scratch, scenarioSource, expected } from './scratch.mjs';

test('a bucket scenario runs in workerd', async (t) => {
  const dir = fs.mkdtempSync(path.join(scratch, 'workerd-'));
  fs.writeFileSync(path.join(dir, 'scenario.js'), scenarioSource);
  fs.writeFileSync(path.join(dir, 'worker.js'), `
import * as edgebucket from 'edgebucket';
import { scenario } from './scenario.js';
export default { async fetch() { return Response.json(await scenario(edgebucket)); } };
`);
  const out = path.join(dir, 'out');
  await esbuild.build({
    entryPoints: [path.join(dir, 'worker.js')],
    outdir: out,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    loader: { '.wasm': 'copy' },
    logLevel: 'error',
  });
  assert.ok(fs.readdirSync(out).some((f) => f.endsWith('.wasm')), 'the workerd entry imports the .wasm module');
  const mf = new Miniflare({
    modules: true,
    scriptPath: path.join(out, 'worker.js'),
    modulesRoot: out,
    modulesRules: [{ type: 'ESModule', include: ['**/*.js'] }, { type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: '2026-04-01',
  });
  t.after(() => mf.dispose());
  const response = await mf.dispatchFetch('http://localhost/');
  assert.equal(response.status, 200, await response.clone().text());
  assert.deepEqual(await response.json(), expected);
});
