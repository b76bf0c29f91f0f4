// `make demo`, the README's main job, run as a newcomer runs it: the script must finish with
// status 0 (it checks each step it describes; examples/worker_demo.mjs), print every step, and
// leave nothing listening. Needs `make worker-build` and `make package` (make demo-test does both).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

/** Runs the demo script; its status and output. */
function runDemo() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['examples/worker_demo.mjs'], { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

test('make demo: every step goes as the script says, and wrangler dev stops', { timeout: 240_000 }, async () => {
  const run = await runDemo();
  assert.equal(run.status, 0, `the demo failed:\n${run.stdout}\n${run.stderr}`);
  for (const step of ['1. Service API', '2. Reserve', '3. Gateway', '4. The pacing client', '5. Metrics', '6. Restart wrangler dev']) {
    assert.ok(run.stdout.includes(step), `step "${step}" missing from:\n${run.stdout}`);
  }
  assert.match(run.stdout, /45 × 200 and 0 × 429/);
  assert.match(run.stdout, /wrangler dev stopped\.\n/);

  // Stopped cleanly: nothing answers on the demo's port any more.
  const url = run.stdout.match(/wrangler dev on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  assert.ok(url, 'the demo prints its URL');
  await assert.rejects(fetch(`${url}/v1/policies`, { signal: AbortSignal.timeout(5000) }), /fetch failed/);
});
