// The package bundled with esbuild (as an application would) and the bundle run on its own,
// for the browser and the node conditions, and as a web worker or edge bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { scratch, scenarioSource, expected } from './scratch.mjs';

// `worker` is what webpack's webworker target and edge bundlers (Vercel's) add: they must get
// the inline entry, as they cannot import a .wasm module the way workerd does.
const cases = [['browser', []], ['node', []], ['browser', ['worker', 'browser']]];
for (const [platform, conditions] of cases) {
  const named = conditions.length ? `${platform}, conditions ${conditions.join(', ')}` : platform;
  test(`an esbuild bundle (${named}) runs without the package beside it`, async () => {
    const dir = fs.mkdtempSync(path.join(scratch, `bundle-${platform}-`));
    fs.writeFileSync(path.join(dir, 'scenario.js'), scenarioSource);
    fs.writeFileSync(path.join(dir, 'app.js'), `
import * as edgebucket from 'edgebucket';
import { scenario } from './scenario.js';
console.log(JSON.stringify(await scenario(edgebucket)));
`);
    const outfile = path.join(dir, 'out', 'app.mjs');
    await esbuild.build({ entryPoints: [path.join(dir, 'app.js')], outfile, bundle: true, format: 'esm', platform, conditions, logLevel: 'error' });
    // Run the bundle from a directory with no node_modules: everything must be inside it.
    const alone = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'edgebucket-bundle-'));
    fs.copyFileSync(outfile, path.join(alone, 'app.mjs'));
    assert.deepEqual(fs.readdirSync(path.dirname(outfile)), ['app.mjs'], 'one file');
    const output = execFileSync(process.execPath, [path.join(alone, 'app.mjs')], { cwd: alone, encoding: 'utf8' });
    assert.deepEqual(JSON.parse(output), expected);
    fs.rmSync(alone, { recursive: true });
  });
}
