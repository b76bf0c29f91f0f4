// The README's deploy step offline: `wrangler deploy --dry-run` bundles build/ with wrangler.toml
// as `wrangler deploy` would upload it, and that bundle, run in real workerd, decides.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { start, tempDir, post } from './harness.mjs';

const root = path.resolve(import.meta.dirname, '../..');
/** Workers' limit on a free plan's upload, after compression (paid plans: 10 MB). */
const FREE_PLAN_GZIP_KIB = 3 * 1024;

let out;
let dry;
before(() => {
  out = tempDir('edgebucket-deploy-'); // removed at exit
  dry = spawnSync(path.join(root, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--outdir', out], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: '1' },
    timeout: 120_000,
  });
});

test('wrangler deploy --dry-run takes wrangler.toml and build/ as they are', () => {
  assert.equal(dry.status, 0, dry.stderr + dry.stdout);
  assert.match(dry.stdout, /env\.BUCKETS \(BucketObject\)\s+Durable Object/);
  assert.match(dry.stdout, /env\.POLICIES \(/, "the [vars] policies go with it");
  const wasm = fs.readdirSync(out).filter((name) => name.endsWith('.wasm'));
  assert.equal(wasm.length, 1);
  assert.ok(fs.readFileSync(path.join(out, wasm[0])).equals(fs.readFileSync(path.join(root, 'build/index_bg.wasm'))), 'the wasm as built');
  const gzip = Number(/Total Upload: [\d.]+ KiB \/ gzip: ([\d.]+) KiB/.exec(dry.stdout)?.[1]);
  assert.ok(gzip > 0 && gzip < FREE_PLAN_GZIP_KIB, `${gzip} KiB gzip fits a free plan's ${FREE_PLAN_GZIP_KIB} KiB`);
});

test('the bundle it would upload runs in workerd with the shipped configuration', async () => {
  assert.equal(dry.status, 0, 'bundled');
  const w = await start({ script: path.join(out, 'entry.js'), tomlVars: true });
  try {
    const r = await w.call('/v1/buckets/deployed/consume', post({ tokens: 1, policy: 'api' }));
    assert.equal(r.status, 200, await r.clone().text());
    const body = await r.json();
    assert.deepEqual([body.allowed, body.policy, body.remaining], [true, 'api', 9]);
    assert.equal(r.headers.get('ratelimit'), '"burst";r=9;t=0, "per-minute";r=99;t=0');
  } finally {
    await w.stop();
  }
});
