// The acceptance run: demand at three times the allowed rate for 20 s against a real server
// enforcing the limit with edgebucket. After the first response no response may be a 429, and
// the requests the server admitted must reach 95 % of what the policy allows over the run.
//
// The margin is the policy's: allowed = capacity + rate × elapsed (elapsed from the server's
// first admission to the end). The client loses nothing to a stalled event loop (its bucket
// keeps refilling while it is late), so 5 % is 11 of 220 tokens: 1.1 s of lost refill.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'edgebucket/client';
import { startServer } from './server.mjs';
import { offer } from './load.mjs';

const CAPACITY = 20;
const WINDOW = 2; // seconds: 10 requests a second
const RATE = CAPACITY / WINDOW;
const SECONDS = Number(process.env.PACING_SECONDS ?? 20);

test(`pacing at 3× demand for ${SECONDS} s: no 429 after the first response, ≥ 95 % of the allowed`, async (t) => {
  const server = await startServer({ capacity: CAPACITY, window: WINDOW });
  t.after(() => server.close());
  const client = createClient({ maxQueue: Infinity, share: false });
  const run = await offer(client, `${server.url}/api/items`, { rate: 3 * RATE, seconds: SECONDS });
  const first = server.stats.admitted[0];
  const admitted = server.stats.admitted.filter((at) => at <= run.end).length;
  const allowed = CAPACITY + (RATE * (run.end - first)) / 1000;
  t.diagnostic(`admitted ${admitted} of ${allowed.toFixed(1)} allowed (${((100 * admitted) / allowed).toFixed(1)} %), ` +
    `${server.stats.rejected.length} rejected, ${run.offered} offered; stats ${JSON.stringify(client.stats())}`);
  assert.equal(server.stats.rejected.length, 0, 'the server rejected nothing');
  assert.equal(run.statuses.filter((s) => s === 429).length, 0, 'no response was a 429');
  assert.ok(run.statuses.every((s) => s === 200 || s === 'CLOSED'), `only 200s and requests closed at the end: ${[...new Set(run.statuses)]}`);
  assert.ok(admitted >= 0.95 * allowed, `admitted ${admitted} < 95 % of ${allowed.toFixed(1)}`);
  assert.ok(admitted <= allowed + 1, 'and never more than the policy allows');
});
