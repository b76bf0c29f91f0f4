// Failure modes end to end: the same built worker in real workerd, deployed without its Durable
// Object binding, so every call to a bucket fails for real and each policy's failure mode decides.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, post, admin, greedy, origin } from './harness.mjs';

const POLICIES = {
  open: { failure: 'open', bandwidths: [greedy('b', 2, 2, '1h')] },
  closed: { failure: 'closed', bandwidths: [greedy('b', 2, 2, '1h')] },
  local: { failure: 'degrade', bandwidths: [greedy('b', 2, 2, '1h')] },
  trial: { failure: 'closed', shadow: true, bandwidths: [greedy('b', 2, 2, '1h')] },
};

let w;
before(async () => {
  w = await start({ vars: { POLICIES }, durableObjects: {} });
});
after(() => w.stop());

const consume = (key, policy) => w.call(`/v1/buckets/${key}/consume`, post({ policy }));

test('fail-open admits, says so, and claims no bucket state', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await consume('a', 'open');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('edgebucket-fallback'), 'open');
    assert.equal(r.headers.get('ratelimit-policy'), '"b";q=2;w=3600');
    assert.equal(r.headers.get('ratelimit'), null);
    assert.equal((await r.json()).fallback, 'open');
  }
  const line = (await w.logged((l) => l.policy === 'open', 3)).at(-1);
  assert.equal(line.fallback, 'open');
  assert.match(line.error, /BUCKETS/, 'the log says why the object could not decide');
});

test('fail-closed rejects with 503, marked as a fallback', async () => {
  const r = await consume('a', 'closed');
  assert.equal(r.status, 503);
  assert.equal(r.headers.get('edgebucket-fallback'), 'closed', 'every fallback says so');
  assert.equal((await r.json()).code, 'RATE_LIMITER_UNAVAILABLE');
  assert.equal((await w.logged((l) => l.policy === 'closed')).at(-1).fallback, 'closed');
});

test('shadow mode lets a fail-closed refusal through and reports it', async () => {
  const r = await consume('a', 'trial');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('edgebucket-fallback'), 'closed');
  assert.equal(r.headers.get('edgebucket-shadow'), 'rejected');
  assert.equal(r.headers.get('ratelimit'), null, 'no bucket state is claimed');
  assert.equal(r.headers.get('retry-after'), null);
  const body = await r.json();
  assert.deepEqual([body.allowed, body.shadowRejected, body.fallback, body.waitMs], [true, true, 'closed', 0]);
  const line = (await w.logged((l) => l.policy === 'trial')).at(-1);
  assert.deepEqual([line.fallback, line.shadowRejected], ['closed', true]);
  const estimate = await w.call('/v1/buckets/a/consume', post({ policy: 'trial', mode: 'estimate' }));
  assert.equal(estimate.status, 503, 'an estimate rejects nothing, so shadow mode changes nothing');
});

test('degrade decides exactly with an in-isolate bucket, visibly', async () => {
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    const r = await consume('a', 'local');
    statuses.push(r.status);
    assert.equal(r.headers.get('edgebucket-fallback'), 'local');
  }
  assert.deepEqual(statuses, [200, 200, 429]);
  const r = await consume('b', 'local');
  assert.equal(r.headers.get('ratelimit'), '"b";r=1;t=0', 'keys stay separate');
});

test('admin calls have no fallback: 503; fallbacks are counted', async () => {
  const r = await w.call('/v1/buckets/a', admin());
  assert.equal(r.status, 503);
  assert.match((await r.json()).detail, /BUCKETS/, 'the admin is told the cause');
  const text = await (await w.call('/v1/metrics', admin())).text();
  assert.match(text, /^edgebucket_fallbacks_total\{policy="open",mode="open"\} 3$/m);
  assert.match(text, /^edgebucket_fallbacks_total\{policy="closed",mode="closed"\} 1$/m);
  assert.match(text, /^edgebucket_fallbacks_total\{policy="local",mode="local"\} 4$/m);
});

// An object that stops answering: the binding points at a neighbour worker whose object takes
// 1.5 s and then fails, as an object stuck behind slow storage would. Nothing else in the real
// object can be made to hang on purpose; the front worker under test is the real one.
const STALLED = `
import { DurableObject } from 'cloudflare:workers';
export class Stalled extends DurableObject {
  async decide() {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    throw new Error('stalled object gave up');
  }
}
export default { fetch: () => new Response(null, { status: 404 }) };`;

test('a policy timeout lets the failure mode decide when the object is slow', async () => {
  const o = await origin();
  const slow = await start({
    vars: {
      POLICIES: {
        quick: { failure: 'open', timeout: '100ms', bandwidths: [greedy('b', 2, 2, '1h')] },
        strict: { failure: 'closed', timeout: 100, bandwidths: [greedy('b', 2, 2, '1h')] },
        patient: { failure: 'open', bandwidths: [greedy('b', 2, 2, '1h')] },
      },
      ROUTES: [{ pattern: '/api', policy: 'quick', key: { source: 'constant', value: 'all' } }],
      ORIGIN: o.url,
    },
    durableObjects: { BUCKETS: { className: 'Stalled', scriptName: 'stalled' } },
    neighbours: [{ name: 'stalled', modules: true, script: STALLED, durableObjects: { STALLED: 'Stalled' } }],
  });
  try {
    const timed = async (policy) => {
      const started = Date.now();
      const r = await slow.call('/v1/buckets/a/consume', post({ policy }));
      return { r, ms: Date.now() - started, body: await r.json() };
    };
    const quick = await timed('quick');
    assert.ok(quick.ms < 1000, `answered after ${quick.ms} ms, not at the timeout`);
    assert.deepEqual([quick.r.status, quick.r.headers.get('edgebucket-fallback'), quick.body.fallback], [200, 'open', 'open']);
    const line = (await slow.logged((l) => l.policy === 'quick')).at(-1);
    assert.equal(line.error, 'the bucket did not answer within 100 ms');

    const strict = await timed('strict');
    assert.ok(strict.ms < 1000, `answered after ${strict.ms} ms`);
    assert.deepEqual([strict.r.status, strict.body.code], [503, 'RATE_LIMITER_UNAVAILABLE']);

    const patient = await timed('patient');
    assert.ok(patient.ms >= 1400, `without a timeout the worker waits for the object (${patient.ms} ms)`);
    assert.equal(patient.r.headers.get('edgebucket-fallback'), 'open');
    assert.match((await slow.logged((l) => l.policy === 'patient')).at(-1).error, /stalled object gave up/);

    const started = Date.now();
    const forwarded = await slow.call('/api');
    assert.ok(Date.now() - started < 1000, 'a gateway route times out too');
    assert.deepEqual([forwarded.status, forwarded.headers.get('x-origin'), forwarded.headers.get('edgebucket-fallback')], [200, 'yes', 'open']);
    await forwarded.text();

    const policies = await (await slow.call('/v1/policies', admin())).json();
    assert.deepEqual([policies.quick.timeoutMs, policies.strict.timeoutMs, policies.patient.timeoutMs], [100, 100, null]);
  } finally {
    await slow.stop();
    await o.close();
  }
});
