// The package's .d.ts (ES module and CommonJS) type-checks real usage, and rejects wrong usage
// (the @ts-expect-error lines), with `tsc --noEmit`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratch } from './scratch.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = path.resolve(here, '../../../node_modules/.bin/tsc');

test('tsc --noEmit accepts the usage and its expected errors', () => {
  const dir = fs.mkdtempSync(path.join(scratch, 'types-'));
  for (const file of ['usage.ts', 'usage.cts', 'tsconfig.json']) fs.copyFileSync(path.join(here, '../types', file), path.join(dir, file));
  const run = spawnSync(tsc, ['-p', dir], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  // The check can fail: an unexpected type error is reported.
  fs.appendFileSync(path.join(dir, 'usage.ts'), '\nconst wrong: string = bucket.tryConsume(1);\n');
  const broken = spawnSync(tsc, ['-p', dir], { encoding: 'utf8' });
  assert.notEqual(broken.status, 0);
  assert.match(broken.stdout, /TS2322/);
});

test('both entry points have types under the older moduleResolution node10', () => {
  const dir = fs.mkdtempSync(path.join(scratch, 'types-legacy-'));
  for (const file of ['legacy.ts', 'tsconfig.legacy.json']) fs.copyFileSync(path.join(here, '../types', file), path.join(dir, file));
  const run = spawnSync(tsc, ['-p', path.join(dir, 'tsconfig.legacy.json')], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
