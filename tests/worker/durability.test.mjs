// Durable state end to end: restarts of workerd with the same state directory, implicit
// configuration replacement when a policy's version rises, and the idle alarm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { start, post, admin, greedy, intervally, tempDir, sleep, origin } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const policy = (version, capacity) => ({ version, bandwidths: [greedy('b', capacity, capacity, '1h')] });

test('state survives a workerd restart: no tokens refunded', async () => {
  const persist = tempDir();
  const vars = { POLICIES: { p: policy(1, 10) } };
  let w = await start({ vars, persist });
  for (let i = 0; i < 7; i++) await w.call('/v1/buckets/k/consume', post({ policy: 'p' }));
  const before = await (await w.call('/v1/buckets/k', admin())).json();
  assert.equal(before.remaining, 3);
  await w.stop();

  w = await start({ vars, persist });
  try {
    const after = await (await w.call('/v1/buckets/k', admin())).json();
    assert.equal(after.remaining, 3, 'the same tokens after the restart');
    assert.equal(after.bandwidths[0].available, before.bandwidths[0].available);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await w.call('/v1/buckets/k/consume', post({ policy: 'p' }))).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  } finally {
    await w.stop();
  }
});

test("a policy's higher version replaces existing buckets' configuration, once", async () => {
  const persist = tempDir();
  let w = await start({ vars: { POLICIES: { p: policy(1, 10) } }, persist });
  for (let i = 0; i < 4; i++) await w.call('/v1/buckets/k/consume', post({ policy: 'p' }));
  await w.stop();

  // Version 2 doubles the capacity; the default strategy AS_IS keeps the 6 tokens.
  w = await start({ vars: { POLICIES: { p: policy(2, 20) } }, persist });
  try {
    const r = await w.call('/v1/buckets/k/consume', post({ policy: 'p' }));
    assert.equal(r.headers.get('ratelimit-policy'), '"b";q=20;w=3600');
    const body = await r.json();
    assert.deepEqual([body.version, body.remaining], [2, 5]);
    const again = await (await w.call('/v1/buckets/k/consume', post({ policy: 'p' }))).json();
    assert.deepEqual([again.version, again.remaining], [2, 4], 'replaced once, not on every request');
  } finally {
    await w.stop();
  }
});

test("a policy changed without a version bump: a gateway consume its bucket refuses goes to the policy's failure mode, not to the user as a 400", async (t) => {
  const o = await origin();
  t.after(() => o.close());
  const persist = tempDir();
  const gateway = (capacity, cost, failure) => ({
    POLICIES: { p: { failure, bandwidths: [greedy('b', capacity, capacity, '1h')] } },
    ROUTES: [{ pattern: '/r', policy: 'p', key: { source: 'constant', value: 'all' }, cost }],
    ORIGIN: o.url,
  });
  let w = await start({ vars: gateway(2, 1, 'closed'), persist });
  assert.equal((await w.call('/r')).status, 200, 'the bucket is kept with capacity 2');
  await w.stop();
  // Capacity 5 and cost 3, still version 1: the bucket keeps capacity 2 and cannot take 3.
  for (const [failure, status, label] of [['closed', 503, 'closed'], ['open', 200, 'open'], ['degrade', 200, 'local']]) {
    w = await start({ vars: gateway(5, 3, failure), persist });
    try {
      const r = await w.call('/r');
      assert.equal(r.status, status, failure);
      assert.equal(r.headers.get('edgebucket-fallback'), label);
      const line = (await w.logged((l) => l.route === '/r')).at(-1);
      assert.match(line.error ?? line.failure, /TOKENS_EXCEED_CAPACITY/, JSON.stringify(line));
    } finally {
      await w.stop();
    }
  }
  assert.equal(o.requests.length, 3, 'the first request, then open and degrade');
});

test('a reset brings the idle deadline forward, and the alarm with it', async () => {
  const vars = { POLICIES: { fast: { idleGrace: '500ms', bandwidths: [greedy('b', 10, 10, '1s')] } } };
  const w = await start({ vars });
  try {
    // 200 tokens of debt: full again in 21 s.
    await w.call('/v1/buckets/debt/consume', post({ policy: 'fast', tokens: 200, mode: 'ignore-limits' }));
    assert.equal((await w.call('/v1/buckets/debt/reset', admin({ method: 'POST' }))).status, 200);
    const started = Date.now();
    let status;
    do {
      await sleep(100);
      status = (await w.call('/v1/buckets/debt', admin())).status;
    } while (status === 200 && Date.now() - started < 10_000);
    assert.equal(status, 404, 'deleted the grace after the reset, not 21 s later');
  } finally {
    await w.stop();
  }
});

/** Node 24 (`scripts/tools.sh node24`, run by `make worker-test`; x64 Linux only), whose node:sqlite edits workerd's state between runs. */
const NODE24 = (() => {
  const target = path.resolve(import.meta.dirname, '../../target');
  const dir = fs.existsSync(target) ? fs.readdirSync(target).find((d) => d.startsWith('node-')) : undefined;
  return dir && path.join(target, dir, 'package/bin/node');
})();

/** Overwrites the stored bucket bytes of every object under `persist` with `hex`. */
function overwriteStoredState(persist, hex) {
  const files = fs.readdirSync(persist, { recursive: true }).filter((f) => String(f).endsWith('.sqlite'));
  const script = `const { DatabaseSync } = require('node:sqlite');
    for (const file of process.argv.slice(1)) {
      const db = new DatabaseSync(file);
      if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'bucket'").get()) db.exec("UPDATE bucket SET state = X'${hex}'");
      db.close();
    }`;
  execFileSync(NODE24, ['-e', script, ...files.map((f) => path.join(persist, String(f)))]);
  return files.length;
}

test('a stored bucket that cannot be decoded is deleted at once, not kept in the failure mode until its idle deadline', { skip: !NODE24 && 'Node 24 (scripts/tools.sh node24) is missing' }, async () => {
  const persist = tempDir();
  // 10 an hour: 3 spent leaves the bucket stored for about 18 minutes.
  const vars = { POLICIES: { slow: { failure: 'open', bandwidths: [greedy('b', 10, 10, '1h')] } } };
  let w = await start({ vars, persist });
  await w.call('/v1/buckets/bad/consume', post({ policy: 'slow', tokens: 3 }));
  await w.stop();
  assert.ok(overwriteStoredState(persist, '454201FF') > 0, 'a state file to corrupt');
  w = await start({ vars, persist });
  try {
    const first = await w.call('/v1/buckets/bad/consume', post({ policy: 'slow', tokens: 5 }));
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('edgebucket-fallback'), 'open', 'the unreadable bucket: the failure mode');
    const started = Date.now();
    let fallback;
    let body;
    do {
      await sleep(100);
      const r = await w.call('/v1/buckets/bad/consume', post({ policy: 'slow', tokens: 5 }));
      fallback = r.headers.get('edgebucket-fallback');
      body = await r.json();
    } while (fallback !== null && Date.now() - started < 10_000);
    assert.equal(fallback, null, 'limited again within seconds, not 18 minutes');
    assert.equal(body.remaining, 5, 'a fresh bucket');
    assert.ok(w.errors.some((line) => line.includes('deleting an unreadable bucket')), w.errors.join('\n'));
  } finally {
    await w.stop();
  }
});

test('an idle bucket is deleted by its alarm once full plus the grace; a busy one is kept', async () => {
  // 10 tokens a second: a bucket that lost 2 is full 200 ms later; grace 500 ms.
  const vars = { POLICIES: { fast: { idleGrace: '500ms', bandwidths: [greedy('b', 10, 10, '1s')] } } };
  const w = await start({ vars });
  try {
    await w.call('/v1/buckets/idle/consume', post({ policy: 'fast', tokens: 2 }));
    assert.equal((await w.call('/v1/buckets/idle', admin())).status, 200);
    // Keep another bucket busy past the first one's deadline.
    const busyUntil = Date.now() + 1600;
    while (Date.now() < busyUntil) {
      await w.call('/v1/buckets/busy/consume', post({ policy: 'fast' }));
      await sleep(100);
    }
    assert.equal((await w.call('/v1/buckets/busy', admin())).status, 200, 'a bucket in use stays');
    const deadline = Date.now() + 10_000;
    let status;
    do {
      await sleep(100);
      status = (await w.call('/v1/buckets/idle', admin())).status;
    } while (status === 200 && Date.now() < deadline);
    assert.equal(status, 404, 'the idle bucket was deleted');
    const deleted = await w.logged((l) => l.event === 'idle-alarm' && l.outcome === 'deleted');
    assert.deepEqual(deleted.map((l) => l.key), ['idle'], 'by its alarm, which logged it');
    // And the busy one goes too once left alone.
    const later = Date.now() + 10_000;
    do {
      await sleep(100);
      status = (await w.call('/v1/buckets/busy', admin())).status;
    } while (status === 200 && Date.now() < later);
    assert.equal(status, 404);
  } finally {
    await w.stop();
  }
});

test('a DELETE racing a consume leaves no bucket behind without its idle alarm', async () => {
  // Whichever the object takes first, a bucket the consume (re)creates is deleted once idle:
  // the deletion's `deleteAll` drops the alarm, and the consume must set its own again.
  const vars = { POLICIES: { fast: { idleGrace: '0s', bandwidths: [greedy('b', 2, 2, '100ms')] } } };
  const w = await start({ vars });
  try {
    const race = async (key, deleteFirst) => {
      assert.equal((await w.call(`/v1/buckets/${key}/consume`, post({ policy: 'fast' }))).status, 200);
      const remove = () => w.call(`/v1/buckets/${key}`, admin({ method: 'DELETE' }));
      const use = () => w.call(`/v1/buckets/${key}/consume`, post({ policy: 'fast' }));
      const answers = await Promise.all(deleteFirst ? [remove(), use()] : [use(), remove()]);
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 200], key);
      const deadline = Date.now() + 10_000;
      let status;
      do {
        await sleep(100);
        status = (await w.call(`/v1/buckets/${key}`, admin())).status;
      } while (status === 200 && Date.now() < deadline);
      assert.equal(status, 404, `${key}: deleted once idle`);
    };
    await Promise.all([race('delete-first', true), race('consume-first', false)]);
  } finally {
    await w.stop();
  }
});

test('a client that waits as Retry-After says is admitted, with a grace shorter than its rounding', async () => {
  // No token at first, one per 1.5 s, grace 100 ms: full, and idle, 1.6 s after the refusal;
  // Retry-After says 2 s. Deleted by then, the bucket would be fresh and refuse again, for ever.
  const slow = { idleGrace: '100ms', bandwidths: [{ id: 'b', capacity: 1, initialTokens: 0, refill: { kind: 'greedy', tokens: 1, period: '1500ms' } }] };
  const w = await start({ vars: { POLICIES: { slow } } });
  try {
    const refused = await w.call('/v1/buckets/client/consume', post({ policy: 'slow' }));
    assert.deepEqual([refused.status, refused.headers.get('retry-after')], [429, '2']);
    await sleep(2000);
    const retried = await w.call('/v1/buckets/client/consume', post({ policy: 'slow' }));
    assert.equal(retried.status, 200, 'admitted at the time Retry-After named');
  } finally {
    await w.stop();
  }
});

test('an alarm that fires before a later deadline sets itself again: a bucket that went into debt is kept', async () => {
  const vars = { POLICIES: { fast: { idleGrace: '500ms', bandwidths: [greedy('b', 10, 10, '1s')] } } };
  const w = await start({ vars });
  try {
    // Full again 200 ms after this: the alarm is set for about 700 ms from now.
    await w.call('/v1/buckets/debt/consume', post({ policy: 'fast', tokens: 2 }));
    // 200 tokens of debt move the deadline to about 21 s; the alarm is not written again.
    await w.call('/v1/buckets/debt/consume', post({ policy: 'fast', tokens: 200, mode: 'ignore-limits' }));
    const [alarm] = await w.logged((l) => l.event === 'idle-alarm');
    assert.equal(alarm.outcome, 'kept', 'the alarm at 700 ms did not delete a bucket in debt');
    assert.ok(alarm.untilMs > Date.now() + 15_000, `set again for the debt's deadline, not the old one: ${alarm.untilMs}`);
    const r = await w.call('/v1/buckets/debt', admin());
    assert.equal(r.status, 200);
    const available = (await r.json()).bandwidths[0].available;
    assert.ok(available < -150, `still in debt, not a fresh bucket: ${available}`);
  } finally {
    await w.stop();
  }
});

test('a bucket never deleted (initial tokens above its capacity) sets its alarm once, within what the runtime takes', async () => {
  // Its deadline is the latest Date, past the 2189 the runtime's alarms stop at.
  const vars = { POLICIES: { burst: { bandwidths: [{ id: 'b', capacity: 2, initialTokens: 5, refill: { kind: 'greedy', tokens: 2, period: '1s' } }] } } };
  const w = await start({ vars });
  try {
    for (let i = 0; i < 3; i++) assert.equal((await w.call('/v1/buckets/burst/consume', post({ policy: 'burst' }))).status, 200);
    await w.call('/v1/buckets/other/consume', post({ policy: 'burst' }));
    await w.logged((l) => l.event === 'decision' && l.key === 'other');
    assert.deepEqual(w.errors.filter((line) => line.includes('alarm')), [], 'no alarm write failed');
  } finally {
    await w.stop();
  }
});

test("a refused reservation's Retry-After holds: its bucket is kept past idle expiry until the retry", async () => {
  // 5 tokens every 4 s. Reserving 6 within 2 s from a full bucket waits for the next refill:
  // refused now, granted from 2 s until the refill at 4 s. A full bucket is otherwise deleted
  // after its 500 ms grace, and a fresh one would start a new 4 s period, refusing the retry again.
  const vars = { POLICIES: { every4s: { idleGrace: '500ms', bandwidths: [intervally('b', 5, 5, '4s')] } } };
  const w = await start({ vars });
  try {
    const reserve = () => w.call('/v1/buckets/phase/reserve', post({ policy: 'every4s', tokens: 6, maxWait: '2s' }));
    const refused = await reserve();
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '2');
    await sleep(1200);
    assert.equal((await w.call('/v1/buckets/phase', admin())).status, 200, 'kept past full plus the grace');
    await sleep(2050 - 1200);
    const retried = await reserve();
    assert.equal(retried.status, 200, 'granted at the time promised');
    assert.ok((await retried.json()).waitMs <= 2000);
  } finally {
    await w.stop();
  }
});

test("a consume after a refused reservation keeps the retry's promise: the bucket outlives its full refill", async () => {
  // 5 tokens every 2 s. With 1 left, 12 reserved within 3 s need the third refill (6 s), so the
  // reservation is refused and told to come back at 3 s, when the wait is 3 s. Spending the
  // last token then makes the bucket full again at the first refill (2 s): without the promise,
  // idle expiry would delete it at 2.5 s, and the retry would meet a fresh bucket, refused again.
  const vars = { POLICIES: { stepwise: { idleGrace: '500ms', bandwidths: [intervally('b', 5, 5, '2s')] } } };
  const w = await start({ vars });
  try {
    const consume = (tokens) => w.call('/v1/buckets/promise/consume', post({ policy: 'stepwise', tokens }));
    const reserve = () => w.call('/v1/buckets/promise/reserve', post({ policy: 'stepwise', tokens: 12, maxWait: '3s' }));
    assert.equal((await consume(4)).status, 200);
    const refused = await reserve();
    const retryAt = Date.now() + 3050;
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '3');
    assert.equal((await consume(1)).status, 200, 'the last token');
    const [alarm] = await w.logged((l) => l.event === 'idle-alarm');
    assert.equal(alarm.outcome, 'kept', 'the alarm at full refill plus the grace keeps the promised bucket');
    await sleep(retryAt - Date.now());
    const retried = await reserve();
    assert.equal(retried.status, 200, 'granted at the time promised');
  } finally {
    await w.stop();
  }
});
