// Exactness under concurrency: 64 clients hammer one key for 10 s through the built worker in
// real workerd. The bucket (I initial tokens, capacity C well above them, greedy refill R per
// second) is kept drained, so it never reaches capacity and no refill is lost to the cap; then,
// exactly,
//
//   admitted + available(t_q) = I + floor(R × (t_q − t_0) / 1 s)
//
// with t_0 the bucket's creation (the first decision's time) and t_q the time of the final
// inspection, both on the Durable Object's own clock, which every answer reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { start, post, admin, greedy, tempDir, freePort, sleep } from './harness.mjs';

const I = 100;
const C = 500; // far above what a slow start or a restart's downtime can refill
const R = 100;
const CLIENTS = 64;
const SECONDS = 10;
const vars = {
  POLICIES: { flood: { failure: 'closed', bandwidths: [{ ...greedy('b', C, R, '1s'), initialTokens: I }] } },
  LOG_DECISIONS: 'false',
};

/** Runs the clients against `url` until the time is up; `during` runs alongside. */
async function flood(url, during = async () => {}) {
  const tally = { admitted: 0, rejected: 0, refused: 0, uncertain: 0, t0: Infinity };
  let stopAt = Infinity; // SECONDS after the first answer: the bucket's life is what is measured
  const client = async () => {
    while (Date.now() < stopAt) {
      try {
        const r = await fetch(url, post({ policy: 'flood' }));
        const body = await r.json();
        if (r.status === 200 || r.status === 429) {
          tally[r.status === 200 ? 'admitted' : 'rejected']++;
          tally.t0 = Math.min(tally.t0, body.at);
          if (stopAt === Infinity) stopAt = Date.now() + SECONDS * 1000;
        } else {
          tally.uncertain++; // the object may have decided before failing to answer
          await sleep(5);
        }
      } catch (error) {
        // Refused connections never reached workerd; anything else might have been decided.
        tally[error.cause?.code === 'ECONNREFUSED' ? 'refused' : 'uncertain']++;
        await sleep(5);
      }
    }
  };
  await Promise.all([...Array.from({ length: CLIENTS }, client), during()]);
  return tally;
}

async function finalState(w, key) {
  const state = await (await w.call(`/v1/buckets/${key}`, admin())).json();
  return { tq: state.at, available: state.bandwidths[0].available };
}

test(`${CLIENTS} clients on one key for ${SECONDS} s: admitted exactly what the policy allows`, async () => {
  const w = await start({ vars });
  try {
    const tally = await flood(new URL('/v1/buckets/flooded/consume', w.url));
    const { tq, available } = await finalState(w, 'flooded');
    const allowed = I + Math.floor((R * (tq - tally.t0)) / 1000);
    console.log(JSON.stringify({ ...tally, tq, available, allowed }));
    assert.equal(tally.uncertain + tally.refused, 0);
    assert.ok(tally.rejected > tally.admitted, 'the bucket was kept drained');
    assert.ok(tq - tally.t0 >= SECONDS * 1000);
    assert.equal(tally.admitted + available, allowed);
  } finally {
    await w.stop();
  }
});

test('the same with a workerd restart in the middle: no over-admission, no refund', async () => {
  const persist = tempDir();
  const port = await freePort();
  let w = await start({ vars, persist, port });
  const url = new URL('/v1/buckets/restarted/consume', w.url);
  try {
    const tally = await flood(url, async () => {
      await sleep(4000);
      await w.stop();
      w = await start({ vars, persist, port });
    });
    const { tq, available } = await finalState(w, 'restarted');
    const allowed = I + Math.floor((R * (tq - tally.t0)) / 1000);
    console.log(JSON.stringify({ ...tally, tq, available, allowed }));
    assert.ok(tally.refused + tally.uncertain > 0, 'the restart interrupted clients');
    assert.ok(tally.admitted > I + R * (SECONDS - 3), 'admission went on after the restart');
    // Every admission the clients saw is within the policy...
    assert.ok(tally.admitted + available <= allowed, 'zero over-admission');
    // ...and anything missing was consumed by a request whose answer the restart swallowed.
    assert.ok(allowed - (tally.admitted + available) <= tally.uncertain);
  } finally {
    await w.stop();
  }
});
