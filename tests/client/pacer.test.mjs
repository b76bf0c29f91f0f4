// The pacing model on a manual clock: the package's real Bucket (installed tarball) driven by
// js/client/pacer.js from the repository, fed observations read by the packed readHeaders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as engine from 'edgebucket';
import { readHeaders } from 'edgebucket/client';
import { source } from './helpers.mjs';

const { Pacer, MAX_SCOPE_POLICIES } = await source('pacer.js');

const ORIGIN = 'https://api.example';

function setup(options = {}) {
  const clock = { t: 0 };
  const pacer = new Pacer({ engine, now: () => clock.t, random: () => 0, jitter: 0, ...options });
  return { clock, pacer };
}

const demand = (fields = {}) => ({ scope: ORIGIN, origin: ORIGIN, cost: 1, bytes: 0, ...fields });
const seen = (headers) => readHeaders(headers, { now: 0 });

/** Grants until the pacer says wait; returns the tickets and the refusal. */
function drain(pacer, d = demand(), max = 1000) {
  const tickets = [];
  for (let i = 0; i < max; i++) {
    const grant = pacer.acquire(d);
    if (!grant.ok) return { tickets, refusal: grant };
    tickets.push(grant.ticket);
  }
  return { tickets, refusal: null };
}

/** The probe, answered with `headers`. */
function learn(pacer, headers, status = 200, d = demand()) {
  const grant = pacer.acquire(d);
  assert.equal(grant.ok, true);
  pacer.observe(grant.ticket, status, seen(headers));
}

/** 20 answered requests, one every 100 ms (the probe answered already). */
function succeedAtTenASecond(pacer, clock) {
  for (let i = 0; i < 20; i++) {
    clock.t += 100;
    pacer.observe(pacer.acquire(demand()).ticket, 200, seen({}));
  }
}

/** A seeded PRNG, so a failing case can be replayed. */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const available = (pacer, policy) => pacer.snapshot().limits.find((l) => l.policy === policy).available;

test('one probe goes first; a server without limits is then not paced', () => {
  const { pacer } = setup();
  const probe = pacer.acquire(demand());
  assert.equal(probe.ok, true);
  // Held until the probe answers, or its ticket expires (the default TTL, 5 minutes).
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: Infinity, reason: 'probe', recheck: 300_000 });
  pacer.observe(probe.ticket, 200, seen({}));
  assert.equal(drain(pacer, demand(), 100).tickets.length, 100);
});

test('a failed probe lets the next request probe', () => {
  const { pacer } = setup();
  const probe = pacer.acquire(demand());
  pacer.release(probe.ticket);
  assert.equal(pacer.acquire(demand()).ok, true);
  assert.equal(pacer.acquire(demand()).ok, false);
});

test('q/w configure a greedy bucket, r sets its level, and waits are its exact refill times', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=5;w=1', ratelimit: '"b";r=4;t=0' });
  const { tickets, refusal } = drain(pacer);
  assert.equal(tickets.length, 4);
  assert.deepEqual(refusal, { ok: false, wait: 200, reason: 'policy' });
  clock.t = 199;
  assert.equal(pacer.acquire(demand()).ok, false);
  clock.t = 200;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('r lowers the local bucket, and raises it when the server has more than we thought', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=1' });
  const first = drain(pacer);
  assert.equal(first.tickets.length, 1, 'r=1: one more');
  // Its response says the server has 6 left (another limit was lifted): nothing else in flight.
  pacer.observe(first.tickets[0], 200, seen({ ratelimit: '"b";r=6' }));
  assert.equal(available(pacer, 'b'), 6);
  assert.equal(drain(pacer).tickets.length, 6);
});

test('corrections subtract requests the server may not have counted yet, so they never overshoot', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1000', ratelimit: '"b";r=9' });
  const [a, b, c] = [pacer.acquire(demand()), pacer.acquire(demand()), pacer.acquire(demand())].map((g) => g.ticket);
  assert.equal(available(pacer, 'b'), 6);
  // The server counted A, B, C in order (r = 8, 7, 6); the responses arrive B, A, C. The truth
  // after all three is 6; each estimate must stay at or below the truth of its moment.
  pacer.observe(b, 200, seen({ ratelimit: '"b";r=7' }));
  assert.equal(available(pacer, 'b'), 5, 'B: C sent after it, A still out: 7 - 2');
  pacer.observe(a, 200, seen({ ratelimit: '"b";r=8' }));
  assert.equal(available(pacer, 'b'), 6, 'A: B and C sent after it: 8 - 2');
  pacer.observe(c, 200, seen({ ratelimit: '"b";r=6' }));
  assert.equal(available(pacer, 'b'), 6);
});

test('a server that handles requests in another order than they were sent never makes the estimate overshoot', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1000', ratelimit: '"b";r=9' });
  const [e, x] = [pacer.acquire(demand()), pacer.acquire(demand())].map((g) => g.ticket);
  // The server handled X first (r = 8), then E (r = 7): the truth is 7. E's answer comes first.
  pacer.observe(e, 200, seen({ ratelimit: '"b";r=7' }));
  assert.equal(available(pacer, 'b'), 6, 'E: X sent after it, maybe not counted: 7 - 1');
  pacer.observe(x, 200, seen({ ratelimit: '"b";r=8' }));
  assert.equal(available(pacer, 'b'), 7, 'X: E was answered during its flight and may have come after it');
});

test('random handling and answering orders: the estimate is never above the server\'s count', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const random = mulberry32(seed);
    const { pacer } = setup();
    const quota = 1 + Math.floor(random() * 20);
    let truth = quota - 1;
    const policy = `"b";q=${quota};w=2592000`; // 30 days: no refill within the run
    learn(pacer, { 'ratelimit-policy': policy, ratelimit: `"b";r=${truth}` });
    const sent = [];
    const handled = [];
    for (let step = 0; step < 200; step++) {
      const roll = random();
      if (roll < 0.4) {
        const grant = pacer.acquire(demand());
        if (grant.ok) sent.push(grant.ticket);
      } else if (roll < 0.7 && sent.length > 0) {
        const [ticket] = sent.splice(Math.floor(random() * sent.length), 1);
        const ok = truth > 0;
        if (ok) truth -= 1;
        handled.push({ ticket, status: ok ? 200 : 429, headers: { ratelimit: `"b";r=${truth}` } });
      } else if (handled.length > 0) {
        const [answer] = handled.splice(Math.floor(random() * handled.length), 1);
        pacer.observe(answer.ticket, answer.status, seen(answer.headers));
        const estimate = available(pacer, 'b');
        assert.ok(estimate <= truth, `seed ${seed}, step ${step}: estimate ${estimate} above the server's ${truth}`);
      }
    }
  }
});

test('a refilling server, requests handled and answered after random delays: the server never refuses one', () => {
  // The server is the package's Bucket on the same manual clock, as the worker is: q=5 per second,
  // greedy. Requests reach it 0-30 ms after their grant, answers come back 0-30 ms after that.
  // While the server is full, refill is lost there until a request arrives; charged at its
  // grant, the local bucket would gain it and run ahead (the end-to-end flake of the partition
  // test: 429s short by a fraction of a millisecond). Beside it, an oracle bucket admits all the
  // demand the limit allows at once, with no flight time: the pacer must not starve.
  let [admitted, possible] = [0, 0];
  for (let seed = 1; seed <= 100; seed++) {
    const random = mulberry32(seed);
    const { pacer, clock } = setup();
    const limit = () =>
      engine.Bucket.builder()
        .addLimit((l) => l.capacity(5).refillGreedy(5, '1s'))
        .withCustomTimeMeter(() => clock.t * 1e6)
        .build();
    const [server, oracle] = [limit(), limit()];
    const answer = () => {
      const probe = server.tryConsumeAndReturnRemaining(1);
      const t = Math.ceil(Number(server.estimateAbilityToConsume(1).nanosToWaitForRefill) / 1e9);
      const headers = { 'ratelimit-policy': '"b";q=5;w=1', ratelimit: `"b";r=${probe.remainingTokens};t=${t}` };
      return { status: probe.consumed ? 200 : 429, headers };
    };
    const pending = []; // { at, run }: events on the manual clock
    const later = (delay, run) => pending.push({ at: clock.t + delay, run });
    const send = (ticket) =>
      later(Math.floor(random() * 30), () => {
        const { status, headers } = answer();
        assert.equal(status, 200, `seed ${seed}: refused at ${clock.t} ms`);
        admitted += 1;
        later(Math.floor(random() * 30), () => pacer.observe(ticket, status, seen(headers)));
      });
    send(pacer.acquire(demand()).ticket);
    while (clock.t < 5000) {
      // Demand comes in bursts after idle spells, so the server is often full.
      if (random() < 0.01) clock.t += Math.floor(random() * 1500);
      for (let i = 0; i < 3; i++) {
        if (oracle.tryConsume(1)) possible += 1;
        const grant = pacer.acquire(demand());
        if (grant.ok) send(grant.ticket);
      }
      clock.t += 1;
      pending.sort((a, b) => a.at - b.at);
      while (pending.length > 0 && pending[0].at <= clock.t) pending.shift().run();
    }
  }
  // About 73 %: each burst after an idle spell costs up to a round trip (0-60 ms) of refill.
  assert.ok(admitted >= 0.6 * possible, `admitted ${admitted} of ${possible}`);
});

test('answers in the order the server handled them leave the estimate exact once all are in', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=20;w=2592000', ratelimit: '"b";r=19' });
  let truth = 19;
  const tickets = drain(pacer, demand(), 6).tickets;
  for (const ticket of tickets) pacer.observe(ticket, 200, seen({ ratelimit: `"b";r=${--truth}` }));
  assert.equal(available(pacer, 'b'), truth);
});

test('Retry-After blocks the scope and takes precedence over t', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'retry-after': '3', 'ratelimit-policy': '"b";q=100;w=60', ratelimit: '"b";r=0;t=10' }, 429);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 3000, reason: 'retry-after' });
  clock.t = 3000;
  const after = pacer.acquire(demand());
  assert.equal(after.ok, true, 't=10 was not taken: the bucket decides after Retry-After');
});

test("a window's end is jittered once, when learned: looking again does not shrink the stretch", () => {
  const randoms = [0.5];
  const { pacer, clock } = setup({ jitter: 0.1, random: () => randoms.shift() ?? 0 });
  learn(pacer, { 'ratelimit-policy': '"w";q=100;w=60', ratelimit: '"w";r=0;t=10' });
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 10_500, reason: 'reset' });
  clock.t = 10_000;
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 500, reason: 'reset' }, 'the end is still 10.5 s');
});

test('t with r on a fixed window: no more than r until t, though the bucket would refill sooner', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"w";q=100;w=60', ratelimit: '"w";r=3;t=30' });
  assert.equal(drain(pacer).tickets.length, 3);
  clock.t = 20_000; // the greedy bucket has refilled 33 by now
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 10_000, reason: 'reset' });
  clock.t = 30_000;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('r=0 with t: a window end is waited for; a token bucket rounding up to a second is not', () => {
  const fixed = setup();
  learn(fixed.pacer, { 'ratelimit-policy': '"w";q=100;w=60', ratelimit: '"w";r=0;t=30' });
  assert.deepEqual(fixed.pacer.acquire(demand()), { ok: false, wait: 30_000, reason: 'reset' });
  // 10 per second, empty: the next token is 100 ms away, and the server says t=1 (rounded up).
  const bucket = setup();
  learn(bucket.pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=0;t=1' });
  assert.deepEqual(bucket.pacer.acquire(demand()), { ok: false, wait: 100, reason: 'policy' });
  // t=2 cannot be 100 ms rounded up: a window's end, held.
  const window = setup();
  learn(window.pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=0;t=2' });
  assert.deepEqual(window.pacer.acquire(demand()), { ok: false, wait: 2000, reason: 'reset' });
});

test("r below the request's cost: t is the wait for its tokens, not a window's end", () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=100;w=1', ratelimit: '"b";r=5' });
  const out = pacer.acquire(demand({ cost: 5 }));
  pacer.observe(out.ticket, 200, seen({ ratelimit: '"b";r=3;t=1' })); // 5 tokens: 20 ms away
  assert.deepEqual(pacer.acquire(demand({ cost: 5 })), { ok: false, wait: 20, reason: 'policy' });
});

test('a slow answer counts its flight for a second at most', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=1' });
  const out = pacer.acquire(demand());
  clock.t = 5000; // a 5 s answer: t=3 is no 100 ms wait rounded up, however long the flight
  pacer.observe(out.ticket, 200, seen({ ratelimit: '"b";r=0;t=3' }));
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 3000, reason: 'reset' });
});

test('r=0 with an X-RateLimit reset, mostly a clock time: a second more', () => {
  const { pacer } = setup();
  const now = 1_000_000_000_000 - 400; // epoch ms: the reset below is 1.4 s away
  const headers = { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1000000001' };
  const grant = pacer.acquire(demand());
  pacer.observe(grant.ticket, 200, readHeaders(headers, { now }));
  const { window } = pacer.snapshot().limits[0];
  assert.equal(window, undefined, 'X-RateLimit tells no window: it is guessed from the reset, 2 s');
  // The next token is 200 ms away; 1.4 s is that rounded up to a second, give or take the clock's.
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 200, reason: 'policy' });
});

test("r=0 with t: a token bucket's wait may have been longer by the request's flight time", () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=1' });
  const out = pacer.acquire(demand());
  clock.t = 950; // answered after 950 ms: the server's wait was at most 100 + 950 ms, so t=2 fits
  pacer.observe(out.ticket, 200, seen({ ratelimit: '"b";r=0;t=2' }));
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 100, reason: 'policy' });
});

/**
 * A limit of 2 a minute whose answer named 3 s from 0: at 3 s one request goes (`why`), not a
 * burst (the next waits for the bucket's own refill), and its answer, the new window's r=1, lets
 * the next go.
 */
function oneGoesAtThreeSeconds(pacer, clock, why) {
  clock.t = 3000;
  const first = pacer.acquire(demand());
  assert.equal(first.ok, true, why);
  const second = pacer.acquire(demand());
  assert.deepEqual([second.ok, second.reason], [false, 'policy'], 'one request\'s worth, not a burst');
  assert.ok(second.wait > 20_000, `the bucket's own wait: ${second.wait} ms`);
  clock.t = 3050;
  pacer.observe(first.ticket, 200, seen({ ratelimit: '"p";r=1;t=57' }));
  assert.equal(pacer.acquire(demand()).ok, true);
}

test("a t sooner than the bucket's own wait (a fixed window ending) lets one request go then, and its r the rest", () => {
  const { pacer, clock } = setup();
  // 2 a minute: the greedy bucket's next token is 30 s away, but the window ends in 3 s.
  learn(pacer, { 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=0;t=3' });
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 3000, reason: 'reset' });
  oneGoesAtThreeSeconds(pacer, clock, 'sent when t said');
  const held = pacer.acquire(demand());
  assert.deepEqual([held.ok, held.reason], [false, 'reset']);
  assert.ok(held.wait > 20_000, `then the bucket or the window's end: ${held.wait} ms`);
  // A day's quota whose window ends in 5 minutes: 5 minutes, not the 14.4 of 86 400 s / 100.
  const daily = setup();
  learn(daily.pacer, { 'ratelimit-policy': '"d";q=100;w=86400', ratelimit: '"d";r=0;t=300' });
  assert.deepEqual(daily.pacer.acquire(demand()), { ok: false, wait: 300_000, reason: 'reset' });
});

test("a t sooner than the bucket's own wait promises the request's cost: a dearer request waits for its refill", () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"p";q=10;w=60', ratelimit: '"p";r=0;t=3' }); // a cost of 1: 6 s away
  const dear = pacer.acquire(demand({ cost: 2 }));
  assert.deepEqual([dear.ok, dear.reason, dear.wait], [false, 'policy', 12_000]);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 3000, reason: 'reset' });
  clock.t = 3000;
  // The level is raised to the 1 promised: the dear one now waits for its second unit (6 s).
  assert.deepEqual(pacer.acquire(demand({ cost: 2 })), { ok: false, wait: 6000, reason: 'policy' });
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('a promised t is jittered once, and kept once: a grant the refill let go first takes it', () => {
  // The promise's time is stretched by 5 % (30.45 s), past the refill's 30 s (not stretched here).
  const randoms = [0.5, 0];
  const { pacer, clock } = setup({ jitter: 0.1, random: () => randoms.shift() ?? 0 });
  learn(pacer, { 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=0;t=29' });
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 30_000, reason: 'policy' });
  clock.t = 30_000;
  assert.equal(pacer.acquire(demand()).ok, true, 'the refill let one go');
  clock.t = 30_450;
  assert.equal(pacer.acquire(demand()).ok, false, 'the promise went with it: no second one at 30.45 s');
});

test('a promised t counts the requests still in flight: they may take what it promised', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=2;t=3' });
  const [a, b] = drain(pacer).tickets;
  assert.ok(a && b);
  pacer.observe(a, 200, seen({ ratelimit: '"p";r=0;t=3' }));
  clock.t = 3000;
  assert.equal(pacer.acquire(demand()).ok, false, 'b is still out: the server may count it in the new window');
  // b was refused just before the window's end (and the server's clock is a second coarse).
  clock.t = 3100;
  pacer.observe(b, 429, seen({ ratelimit: '"p";r=0;t=1' }));
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 1000, reason: 'reset' });
  clock.t = 4100;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('a promised t is handed to a successor in a last word, not in a heartbeat', () => {
  const old = setup();
  learn(old.pacer, { 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=0;t=3' });
  old.clock.t = 1000;
  const state = JSON.parse(JSON.stringify(old.pacer.export()));
  const final = setup();
  final.pacer.adopt(state);
  assert.deepEqual(final.pacer.acquire(demand()), { ok: false, wait: 2000, reason: 'reset' });
  const heartbeat = setup();
  heartbeat.pacer.adopt(state, { spent: true });
  assert.equal(heartbeat.pacer.acquire(demand()).reason, 'policy', 'the old leader may have granted it since');
});

test("a Retry-After sooner than the bucket's own wait (a fixed window ending) lets one request go then, and its r the rest", () => {
  const { pacer, clock } = setup();
  // 2 a minute: the greedy bucket's next token is 30 s away, but the server says to come back in 3 s.
  learn(pacer, { 'retry-after': '3', 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=0;t=3' }, 429);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 3000, reason: 'retry-after' });
  oneGoesAtThreeSeconds(pacer, clock, 'sent when Retry-After said, not after the bucket\'s 30 s');
  assert.equal(pacer.acquire(demand()).ok, false);
  // A day's quota, a 503, a Retry-After without `t`: 5 minutes, not the 14.4 of 86 400 s / 100.
  const daily = setup();
  learn(daily.pacer, { 'retry-after': '300', 'ratelimit-policy': '"d";q=100;w=86400', ratelimit: '"d";r=0' }, 503);
  assert.deepEqual(daily.pacer.acquire(demand()), { ok: false, wait: 300_000, reason: 'retry-after' });
  daily.clock.t = 300_000;
  assert.equal(daily.pacer.acquire(demand()).ok, true);
  assert.equal(daily.pacer.acquire(demand()).reason, 'policy');
});

test('a Retry-After promises nothing sooner than itself: a shorter t is not taken, and its jitter is not doubled', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'retry-after': '10', 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=0;t=3' }, 429);
  clock.t = 3000;
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 7000, reason: 'retry-after' }, 't=3 was not taken');
  clock.t = 10_000;
  assert.equal(pacer.acquire(demand()).ok, true);
  assert.equal(pacer.acquire(demand()).ok, false);
  // Stretched once, with the block: 3.15 s, the promise's time too.
  const randoms = [0.5];
  const jittered = setup({ jitter: 0.1, random: () => randoms.shift() ?? 0 });
  learn(jittered.pacer, { 'retry-after': '3', 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=0;t=3' }, 429);
  jittered.clock.t = 3149;
  assert.deepEqual(jittered.pacer.acquire(demand()), { ok: false, wait: 1, reason: 'retry-after' });
  jittered.clock.t = 3150;
  assert.equal(jittered.pacer.acquire(demand()).ok, true);
  assert.equal(jittered.pacer.acquire(demand()).reason, 'policy', 'one request\'s worth');
});

test('a Retry-After leaves a limit whose own wait is shorter, or which shows room, as it was', () => {
  const { pacer, clock } = setup();
  learn(pacer, {
    'retry-after': '3',
    'ratelimit-policy': '"slow";q=2;w=60, "fast";q=60;w=60, "roomy";q=10;w=60',
    ratelimit: '"slow";r=0;t=3, "fast";r=0;t=1, "roomy";r=5;t=60',
  }, 429);
  const promises = Object.fromEntries(pacer.export().limits.map((l) => [l.policy, l.promise]));
  assert.deepEqual(promises, { slow: { cost: 1, for: 3000 }, fast: null, roomy: null });
  clock.t = 3000;
  assert.equal(pacer.acquire(demand()).ok, true, 'slow promised one; fast refilled three');
  assert.equal(pacer.acquire(demand()).reason, 'policy');
  // Alone, the fast limit goes by its own refill after the Retry-After: three, then a second apart.
  const fast = setup();
  learn(fast.pacer, { 'retry-after': '3', 'ratelimit-policy': '"fast";q=60;w=60', ratelimit: '"fast";r=0;t=1' }, 429);
  assert.equal(fast.pacer.export().limits[0].promise, null);
  fast.clock.t = 3000;
  const { tickets, refusal } = drain(fast.pacer);
  assert.equal(tickets.length, 3);
  assert.deepEqual(refusal, { ok: false, wait: 1000, reason: 'policy' });
});

test('a 429 with a Retry-After but no rate headers names no limit: it makes no promise, and keeps one', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=1' });
  const sent = pacer.acquire(demand());
  assert.equal(sent.ok, true);
  pacer.observe(sent.ticket, 429, seen({ 'retry-after': '3' }));
  assert.equal(pacer.export().limits[0].promise, null);
  clock.t = 3000;
  assert.equal(pacer.acquire(demand()).reason, 'policy', 'the local bucket, and the 429 learner');
  // A promise that a `t` made is kept through such a block.
  const other = setup();
  learn(other.pacer, { 'ratelimit-policy': '"p";q=2;w=60', ratelimit: '"p";r=2' });
  const [a, b] = drain(other.pacer).tickets;
  other.pacer.observe(a, 200, seen({ ratelimit: '"p";r=0;t=5' }));
  other.pacer.observe(b, 429, seen({ 'retry-after': '2' }));
  assert.deepEqual(other.pacer.export().limits[0].promise, { cost: 1, for: 5000 });
  other.clock.t = 2000;
  assert.deepEqual(other.pacer.acquire(demand()), { ok: false, wait: 3000, reason: 'reset' });
  other.clock.t = 5000;
  assert.equal(other.pacer.acquire(demand()).ok, true);
});

test('a 429 naming only t (the draft, B.3.1) means nothing until then', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': 'quota;q=100;w=60', ratelimit: 'quota;t=5' }, 429);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 5000, reason: 'reset' });
});

test('a quota of 0 holds until t', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=0;w=60', ratelimit: '"b";r=0;t=42' });
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 42_000, reason: 'reset' });
});

test('a 429 on a quota of 0 without t slows the scope (the 429 learner), a window alone paces nothing', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"free";q=0;w=60', ratelimit: '"free";r=0' }, 429);
  const next = pacer.acquire(demand());
  assert.equal(next.ok, false, 'not sent at once');
  assert.ok(next.wait >= 500, `waits ${next.wait} ms`);
});

test("a 429 whose limits all show room was refused for something else: the learner slows the scope", () => {
  const roomy = {
    'draft-10 with a window': { 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=50;t=30' },
    'X-RateLimit with a reset': { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '50', 'x-ratelimit-reset': '30' },
  };
  for (const [name, headers] of Object.entries(roomy)) {
    const { pacer, clock } = setup();
    learn(pacer, headers);
    clock.t += 1000;
    pacer.observe(pacer.acquire(demand()).ticket, 429, seen(headers));
    assert.notEqual(pacer.snapshot().scopes[0].learnedRate, undefined, `${name}: the learner started`);
    const next = pacer.acquire(demand());
    assert.equal(next.ok, false, `${name}: not sent again at once`);
    assert.equal(next.reason, 'learned', name);
    clock.t += next.wait;
    pacer.observe(pacer.acquire(demand()).ticket, 429, seen(headers));
    const second = pacer.acquire(demand());
    assert.ok(!second.ok && second.wait >= 500, `${name}: backs off, waits ${second.wait} ms`);
  }
  // The same limit exhausted explains its 429: held until its reset, no learner.
  const { pacer, clock } = setup();
  learn(pacer, roomy['draft-10 with a window']);
  clock.t += 1000;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({ 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=0;t=30' }));
  assert.equal(pacer.snapshot().scopes[0].learnedRate, undefined);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 30_000, reason: 'reset' });
});

test('a concurrency quota of 0 is left to the server rather than holding every request for good', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"c";q=0;qu="concurrent-requests"' });
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('a changed policy replaces the configuration, keeping tokens as they are (AS_IS)', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=9' });
  const { tickets } = drain(pacer, demand(), 3);
  assert.equal(available(pacer, 'b'), 6);
  pacer.observe(tickets[1], 200, seen({}));
  pacer.observe(tickets[2], 200, seen({}));
  pacer.observe(tickets[0], 200, seen({ 'ratelimit-policy': '"b";q=2;w=10' }));
  assert.equal(pacer.snapshot().limits[0].quota, 2);
  // 6 lowered to the new capacity, 2; less the request just answered, which a full server may
  // have counted only now (in flight at capacity).
  assert.equal(available(pacer, 'b'), 1);
  assert.equal(drain(pacer).tickets.length, 1);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 5000, reason: 'policy' });
  clock.t = 5000;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('a quota lowered while requests are out: their refusals leave no debt beyond one refill', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"p";q=100;w=10', ratelimit: '"p";r=99;t=0' });
  const { tickets } = drain(pacer, demand(), 50);
  assert.equal(tickets.length, 50);
  clock.t = 50;
  // The server now allows 5 per 10 s, none left: it takes the first and refuses the rest.
  const lowered = { 'ratelimit-policy': '"p";q=5;w=10', ratelimit: '"p";r=0;t=2' };
  for (const [i, ticket] of tickets.entries()) pacer.observe(ticket, i === 0 ? 200 : 429, seen(lowered));
  // It holds nothing it could owe: the next token, 2 s away, not 49 tokens of debt (98 s).
  const next = pacer.acquire(demand());
  assert.deepEqual([next.ok, next.reason], [false, 'policy']);
  assert.ok(next.wait <= 2000, `waits ${next.wait} ms`);
  clock.t += next.wait;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('several policies: a request goes only when every one of them allows it', () => {
  const { pacer } = setup();
  learn(pacer, {
    'ratelimit-policy': '"burst";q=10;w=1, "hourly";q=3;w=3600',
    ratelimit: '"burst";r=9, "hourly";r=2',
  });
  const { tickets, refusal } = drain(pacer);
  assert.equal(tickets.length, 2);
  assert.equal(refusal.reason, 'policy');
  assert.equal(refusal.wait, 1_200_000, 'the hourly one: 20 minutes a request');
});

test('a request not charged to the limit it reports cannot raise it: a second scope in a shared partition', () => {
  const { pacer } = setup();
  const alice = demand({ scope: `${ORIGIN} alice` });
  const bob = demand({ scope: `${ORIGIN} bob` });
  const policy = (r) => ({ 'ratelimit-policy': '"u";q=10;w=1000;pk=:QQ==:', ratelimit: `"u";r=${r};pk=:QQ==:` });
  learn(pacer, policy(9), 200, alice);
  const probe = pacer.acquire(bob).ticket; // bob knows no policy yet: charged to none
  let truth = 8; // the server counts bob's probe first ...
  const sent = drain(pacer, alice, 5).tickets; // ... then alice's five, answered before bob's
  for (const ticket of sent) pacer.observe(ticket, 200, seen(policy(--truth)));
  assert.equal(truth, 3);
  pacer.observe(probe, 200, seen(policy(8)));
  assert.ok(available(pacer, 'u') <= 3, `estimate ${available(pacer, 'u')} above the server's 3`);
});

test('a policy the server starts to report while requests are out: their answers cannot raise it', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"a";q=100;w=1000', ratelimit: '"a";r=99' });
  const out = drain(pacer, demand(), 5).tickets; // charged to "a" only
  const both = (b) => ({ 'ratelimit-policy': '"a";q=100;w=1000, "b";q=10;w=1000', ratelimit: `"a";r=90, "b";r=${b}` });
  // The server counted them in order (b: 9, 8, 7, 6, 5); the answers arrive last first.
  [...out].reverse().forEach((ticket, i) => {
    pacer.observe(ticket, 200, seen(both(5 + i)));
    assert.ok(available(pacer, 'b') <= 5, `answer ${i + 1}: estimate ${available(pacer, 'b')} above the server's 5`);
  });
});

test("a refusal's reset is held but does not stretch the window guessed from resets", () => {
  const { pacer } = setup();
  const x = (remaining, reset) => seen({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': `${remaining}`, 'x-ratelimit-reset': `${reset}` });
  learn(pacer, { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59', 'x-ratelimit-reset': '60' });
  const [banned, later] = [pacer.acquire(demand()), pacer.acquire(demand())].map((g) => g.ticket);
  pacer.observe(banned, 429, x(0, 86_400)); // a day's ban
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 86_400_000, reason: 'reset' });
  pacer.observe(later, 200, x(0, 30));
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 30_000, reason: 'reset' }, 'the window is still 60 s');
});

test('a policy a full RateLimit-Policy no longer lists is lifted; a RateLimit alone lifts nothing', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"a";q=100;w=60, "penalty";q=3;w=3600', ratelimit: '"a";r=99, "penalty";r=2' });
  const [first, second] = [pacer.acquire(demand()), pacer.acquire(demand())];
  assert.equal(first.ok, true);
  assert.equal(second.ok, true);
  assert.equal(pacer.acquire(demand()).reason, 'policy', 'the penalty is spent');
  pacer.observe(first.ticket, 200, seen({ ratelimit: '"a";r=98' }));
  assert.equal(pacer.acquire(demand()).reason, 'policy', 'RateLimit names the policies that limited this request, not all');
  pacer.observe(second.ticket, 200, seen({ 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=97' }));
  assert.equal(pacer.acquire(demand()).ok, true, 'the penalty was lifted');
});

test('partition keys: scopes the server puts in one partition share a budget', () => {
  const { pacer } = setup();
  const alice = demand({ scope: `${ORIGIN} alice` });
  const bob = demand({ scope: `${ORIGIN} bob` });
  const carol = demand({ scope: `${ORIGIN} carol` });
  const policy = (pk, r) => ({ 'ratelimit-policy': `"u";q=5;w=100;pk=:${pk}:`, ratelimit: `"u";r=${r};pk=:${pk}:` });
  learn(pacer, policy('QQ==', 4), 200, alice);
  learn(pacer, policy('QQ==', 3), 200, bob); // same partition as alice
  learn(pacer, policy('Qw==', 4), 200, carol);
  assert.equal(pacer.snapshot().limits.length, 2);
  assert.equal(drain(pacer, alice).tickets.length + drain(pacer, bob).tickets.length, 3);
  assert.equal(drain(pacer, carol).tickets.length, 4);
});

test('concurrent-requests limits requests in flight, not a rate', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"c";q=2;qu="concurrent-requests"' });
  const { tickets, refusal } = drain(pacer);
  assert.equal(tickets.length, 2);
  assert.deepEqual(refusal, { ok: false, wait: Infinity, reason: 'concurrency', recheck: 300_000 });
  let woken = 0;
  pacer.onChange(() => woken++);
  pacer.observe(tickets[0], 200, seen({}));
  assert.equal(woken, 1);
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('content-bytes policies count request bytes; unknown units are not paced', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"bytes";q=1000;w=10;qu="content-bytes", "odd";q=1;w=100;qu="acme-points"' });
  assert.equal(pacer.snapshot().limits.length, 1, 'acme-points ignored');
  assert.equal(pacer.acquire(demand({ bytes: 600 })).ok, true);
  assert.equal(pacer.acquire(demand({ bytes: 0 })).ok, true, 'no body, no bytes');
  assert.deepEqual(pacer.acquire(demand({ bytes: 600 })), { ok: false, wait: 2000, reason: 'policy' });
  // A body larger than the quota waits for a full bucket rather than forever.
  const big = pacer.acquire(demand({ bytes: 5000 }));
  assert.equal(big.wait, 6000);
});

test('cost is in units of the policy', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=10', ratelimit: '"b";r=10' });
  assert.equal(pacer.acquire(demand({ cost: 7 })).ok, true);
  assert.deepEqual(pacer.acquire(demand({ cost: 4 })), { ok: false, wait: 1000, reason: 'policy' });
  assert.equal(pacer.acquire(demand({ cost: 3 })).ok, true);
});

test('jitter stretches waits by up to the given fraction, never shortens them', () => {
  for (const [random, wait] of [[0, 200], [0.5, 210], [0.999, 220]]) {
    const { pacer } = setup({ jitter: 0.1, random: () => random });
    learn(pacer, { 'ratelimit-policy': '"b";q=5;w=1', ratelimit: '"b";r=0' });
    assert.equal(pacer.acquire(demand()).wait, wait);
  }
});

test("a Retry-After is jittered once, when learned: looking again does not shrink the stretch", () => {
  const randoms = [0.5, 0, 0, 0];
  const { pacer, clock } = setup({ jitter: 0.1, random: () => randoms.shift() ?? 0 });
  learn(pacer, { 'retry-after': '10' }, 429);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 10_500, reason: 'retry-after' });
  clock.t = 9_990;
  assert.equal(pacer.acquire(demand()).wait, 510, 'the end is still 10.5 s, not 10 s plus a new stretch of what is left');
  clock.t = 10_000;
  assert.equal(pacer.acquire(demand()).ok, false);
  clock.t = 10_500;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('an unknown window is guessed from the longest reset seen (X-RateLimit without a window)', () => {
  const { pacer } = setup();
  learn(pacer, { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59', 'x-ratelimit-reset': '30' });
  const [limit] = pacer.snapshot().limits;
  assert.equal(limit.quota, 60);
  // 59 until the reset (30 s) whatever the bucket: the allowance.
  assert.equal(drain(pacer).tickets.length, 59);
});

test('a cached response teaches nothing, but its Retry-After is obeyed', () => {
  const { pacer, clock } = setup();
  learn(pacer, { age: '30', 'ratelimit-policy': '"b";q=1;w=100', ratelimit: '"b";r=0;t=100' });
  const probe = drain(pacer, demand(), 50);
  assert.equal(probe.tickets.length, 1, 'not the policy, nor that there is none: the next request probes alone');
  assert.equal(probe.refusal.reason, 'probe');
  pacer.observe(probe.tickets[0], 200, seen({}));
  assert.equal(drain(pacer, demand(), 50).tickets.length, 50, 'a fresh answer without limits ends the probe');
  learn(pacer, { age: '30', 'retry-after': '40' }, 200);
  assert.equal(pacer.acquire(demand()).ok, true, 'Retry-After blocks only on a 429 or 503');
  learn(pacer, { age: '30', 'retry-after': '40' }, 503);
  const refusal = pacer.acquire(demand());
  assert.equal(refusal.reason, 'retry-after');
  assert.equal(refusal.wait, 10_000, 'the 10 s left');
  clock.t += refusal.wait;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('a rate learned from Retry-After 429s gives way to the rate the headers tell; one from a silent 429 does not', () => {
  // A zero Retry-After names no wait: such a 429 is as silent as one without.
  for (const refusal of [{ 'retry-after': '1' }, {}, { 'retry-after': '0' }]) {
    const { pacer, clock } = setup();
    // Another process spent the quota: the probe itself meets the 429, before any success.
    learn(pacer, refusal, 429);
    assert.equal(pacer.snapshot().scopes[0].learnedRate, 1, 'a first guess of one a second');
    clock.t += 1000;
    learn(pacer, { 'ratelimit-policy': '"p";q=50;w=1', ratelimit: '"p";r=49;t=0' });
    const learned = pacer.snapshot().scopes[0].learnedRate;
    if (refusal['retry-after'] > 0) {
      assert.equal(learned, undefined, 'the headers pace the scope now');
      assert.equal(drain(pacer, demand(), 100).tickets.length, 49, 'at the rate the server told');
    } else {
      assert.equal(learned, 1, 'a server that says nothing on its refusals: its 429s may have other causes');
    }
  }
});

test('cached answers do not end the probe, but three of them do: an origin served from a cache is not fetched one at a time', () => {
  const { pacer } = setup();
  for (let i = 1; i <= 3; i++) {
    const probe = drain(pacer, demand(), 10);
    assert.equal(probe.tickets.length, 1, `cached answer ${i}: still probing`);
    pacer.observe(probe.tickets[0], 200, seen({ age: '120' }));
  }
  assert.equal(drain(pacer, demand(), 10).tickets.length, 10);
});

test('429s that say nothing: the learner measures the success rate, then backs off multiplicatively', () => {
  const { pacer, clock } = setup();
  learn(pacer, {});
  // 20 successes at 10 per second.
  succeedAtTenASecond(pacer, clock);
  clock.t += 100;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({}));
  const rate = pacer.snapshot().scopes[0].learnedRate;
  assert.ok(rate > 8 && rate < 10, `about 90 % of 10/s, got ${rate}`);
  const refusal = pacer.acquire(demand());
  assert.equal(refusal.reason, 'learned');
  assert.ok(refusal.wait > 90 && refusal.wait <= 125, `one interval, got ${refusal.wait}`);
  // A second 429 in a row: ×0.75 and a backoff.
  clock.t += refusal.wait;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({}));
  assert.ok(Math.abs(pacer.snapshot().scopes[0].learnedRate - rate * 0.75) < 1e-9);
  assert.equal(pacer.acquire(demand()).reason, 'retry-after');
});

test('the 429s of one burst are one congestion event: the learned rate is cut once, with no backoff', () => {
  const { pacer, clock } = setup();
  learn(pacer, {});
  succeedAtTenASecond(pacer, clock);
  // Eight requests out at once; the server, empty, refuses them all.
  const burst = drain(pacer, demand(), 8).tickets;
  assert.equal(burst.length, 8);
  clock.t += 20;
  for (const ticket of burst) pacer.observe(ticket, 429, seen({}));
  const rate = pacer.snapshot().scopes[0].learnedRate;
  assert.ok(rate > 8 && rate < 10, `about 90 % of 10/s, cut once: got ${rate}`);
  const refusal = pacer.acquire(demand());
  assert.equal(refusal.reason, 'learned', 'no backoff for the burst');
  assert.ok(refusal.wait <= 125, `one interval, got ${refusal.wait}`);
  // A request sent after the 429s were seen is another event: ×0.75 and a backoff.
  clock.t += refusal.wait;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({}));
  const after = pacer.snapshot().scopes[0].learnedRate;
  assert.ok(Math.abs(after - rate * 0.75) < 1e-9, `×0.75: ${after} against ${rate}`);
  assert.equal(pacer.acquire(demand()).reason, 'retry-after', 'backing off');
});

test("a 429 of a counted burst empties the learner's bucket for refunds too: a grant before it gets nothing back", () => {
  const { pacer, clock } = setup();
  learn(pacer, {});
  succeedAtTenASecond(pacer, clock);
  const early = pacer.acquire(demand()).ticket; // out with the burst the server will refuse
  clock.t += 10;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({})); // counted: rate learned, bucket emptied
  clock.t += pacer.acquire(demand()).wait;
  const unused = pacer.acquire(demand());
  assert.equal(unused.ok, true, 'granted after the counted 429');
  clock.t += 5;
  pacer.observe(early, 429, seen({})); // the same burst: the server is empty now, after that grant
  pacer.refund(unused.ticket); // never sent
  assert.equal(pacer.acquire(demand()).reason, 'learned', 'no token handed back to a bucket the server just emptied');
});

test('a 429 with only a Retry-After: waited out, and a rate is learned for after it', () => {
  const { pacer, clock } = setup();
  learn(pacer, {});
  succeedAtTenASecond(pacer, clock);
  clock.t += 100;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({ 'retry-after': '2' }));
  const rate = pacer.snapshot().scopes[0].learnedRate;
  assert.ok(rate > 8 && rate < 10, `about 90 % of 10/s, got ${rate}`);
  const blocked = pacer.acquire(demand());
  assert.deepEqual([blocked.reason, blocked.wait], ['retry-after', 2000], 'the Retry-After, not a backoff on top');
  clock.t += 2000;
  // Then paced: a second's burst of the learned rate, not as fast as the server refuses.
  const { tickets, refusal } = drain(pacer, demand(), 100);
  assert.equal(tickets.length, Math.floor(rate), 'a second of the learned rate');
  assert.equal(refusal.reason, 'learned');
});

test('a 429 whose wait is zero or past says nothing: the learner slows the scope, and backs off', () => {
  const zeroWaits = {
    'Retry-After 0': { 'retry-after': '0' },
    'Retry-After before Date': { 'retry-after': 'Sat, 01 Jan 2000 00:00:00 GMT', date: 'Sat, 01 Jan 2000 00:00:10 GMT' },
    'r=0;t=0 without a policy': { ratelimit: '"a";r=0;t=0' },
    't=0 alone': { ratelimit: '"a";t=0' },
    'X-RateLimit reset 0': { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '0' },
  };
  for (const [name, headers] of Object.entries(zeroWaits)) {
    const { pacer, clock } = setup();
    learn(pacer, {});
    clock.t += 1000;
    pacer.observe(pacer.acquire(demand()).ticket, 429, seen(headers));
    const first = pacer.acquire(demand());
    assert.equal(first.ok, false, `${name}: not sent again at once`);
    assert.ok(first.wait >= 500, `${name}: waits ${first.wait} ms`);
    const rate = pacer.snapshot().scopes[0].learnedRate;
    clock.t += first.wait;
    pacer.observe(pacer.acquire(demand()).ticket, 429, seen(headers));
    assert.ok(Math.abs(pacer.snapshot().scopes[0].learnedRate - rate * 0.75) < 1e-9, `${name}: slowed again`);
    const second = pacer.acquire(demand());
    assert.ok(!second.ok && second.wait >= 500, `${name}: waits ${second.wait} ms`);
  }
});

/** A pacer whose first answer after the probe was a 429 without headers, a second later. */
function afterASilent429() {
  const { pacer, clock } = setup();
  learn(pacer, {});
  clock.t += 1000;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({}));
  return { pacer, clock };
}

/** `count` requests one second apart, each granted and answered 200. */
function succeedEverySecond(pacer, clock, count) {
  for (let i = 0; i < count; i++) {
    clock.t += 1000;
    const grant = pacer.acquire(demand());
    assert.equal(grant.ok, true);
    pacer.observe(grant.ticket, 200, seen({}));
  }
}

test('the learner probes upward after a calm, 5 % a second', () => {
  const { pacer, clock } = afterASilent429();
  const first = pacer.snapshot().scopes[0].learnedRate;
  assert.equal(first, 1, 'no success to time: one a second');
  succeedEverySecond(pacer, clock, 6);
  const raised = pacer.snapshot().scopes[0].learnedRate;
  // The 429 at 1 s, the calm until 3 s, successes each second until 7 s: four seconds of growth.
  assert.ok(Math.abs(raised - 1.05 ** 4) < 1e-9, `four seconds of 5 % after the 2 s calm, got ${raised}`);
});

test('a slow learned rate grows 5 % a second too, not 5 % a request (at most doubling a step)', () => {
  const { pacer, clock } = afterASilent429();
  // Header-less 429s in a row drive the rate to its floor, one request a minute.
  for (let i = 0; i < 30; i++) {
    const wait = pacer.acquire(demand());
    if (!wait.ok) clock.t += wait.wait;
    const grant = wait.ok ? wait : pacer.acquire(demand());
    assert.equal(grant.ok, true);
    pacer.observe(grant.ticket, 429, seen({}));
  }
  assert.equal(pacer.snapshot().scopes[0].learnedRate, 1 / 60);
  // Then a healthy server and unlimited demand: every request goes as soon as it may.
  const start = clock.t;
  while (pacer.snapshot().scopes[0].learnedRate < 1) {
    const grant = pacer.acquire(demand());
    if (!grant.ok) {
      clock.t += grant.wait;
      continue;
    }
    pacer.observe(grant.ticket, 200, seen({}));
    const rate = pacer.snapshot().scopes[0].learnedRate;
    assert.ok(clock.t - start < 5 * 60_000, `back to 1/s within 5 minutes; at ${rate}/s after ${clock.t - start} ms`);
  }
  // At 5 % a second from 1/60, 84 s; the first minute-long wait and the doubling cap add to it.
  assert.ok(clock.t - start >= 84_000, `no faster than 5 % a second: ${clock.t - start} ms`);
});

test('the learned rate grows only while requests use it, so a long calm cannot make it unbounded', () => {
  const { pacer, clock } = afterASilent429();
  // An hour of one request a second, each a success: the rate grows to twice that (one 5 % step
  // past it at most), no further.
  succeedEverySecond(pacer, clock, 3600);
  const rate = pacer.snapshot().scopes[0].learnedRate;
  assert.ok(rate >= 2 && rate <= 2 * 1.05, `about twice the 1/s in use, got ${rate}`);
});

test('a first learned rate is timed over a second at least, however fast the successes before the 429 were', () => {
  const { pacer, clock } = setup();
  learn(pacer, {});
  for (let i = 0; i < 10; i++) pacer.observe(pacer.acquire(demand()).ticket, 200, seen({}));
  clock.t += 1e-6;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({}));
  // 11 successes in a microsecond were a burst the server's capacity let through, not its rate.
  assert.equal(pacer.snapshot().scopes[0].learnedRate, 9.9);
  const wait = pacer.acquire(demand());
  assert.equal(wait.reason, 'learned');
  assert.ok(wait.wait >= 100 && wait.wait <= 102, String(wait.wait));
});

test("a refund gives the 429 learner's bucket back only what the grant took from it", () => {
  const { pacer, clock } = setup();
  learn(pacer, {});
  const before = pacer.acquire(demand()); // granted before any rate was learned
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen({}));
  assert.equal(pacer.acquire(demand()).reason, 'learned', 'the learned bucket is empty');
  pacer.refund(before.ticket);
  assert.equal(pacer.acquire(demand()).reason, 'learned', 'it took nothing from the learned bucket: nothing comes back');
  clock.t += 1000;
  const after = pacer.acquire(demand());
  assert.equal(after.ok, true);
  assert.equal(pacer.acquire(demand()).ok, false);
  pacer.refund(after.ticket);
  const again = pacer.acquire(demand());
  assert.equal(again.ok, true, 'its token came back');
  clock.t += 1000;
  const charged = pacer.acquire(demand());
  assert.equal(charged.ok, true);
  clock.t += 1;
  pacer.observe(again.ticket, 429, seen({})); // the server says it is empty, after `charged` was granted
  pacer.refund(charged.ticket);
  assert.equal(pacer.acquire(demand()).reason, 'learned', 'a 429 since the grant: the bucket stays empty');
});

test('a ticket never handed back stops counting as in flight after ticketTtl', () => {
  const { pacer, clock } = setup({ ticketTtl: 1000 });
  learn(pacer, { 'ratelimit-policy': '"c";q=1;qu="concurrent-requests"' });
  clock.t = 100;
  assert.equal(pacer.acquire(demand()).ok, true);
  clock.t = 400;
  // The wait says when to look again: nothing else would wake a queue held by a lost ticket.
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: Infinity, reason: 'concurrency', recheck: 700 });
  clock.t = 1100;
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('a lost probe ticket holds its scope only until it expires', () => {
  const { pacer, clock } = setup({ ticketTtl: 1000 });
  assert.equal(pacer.acquire(demand()).ok, true);
  clock.t = 250;
  assert.equal(pacer.acquire(demand()).recheck, 750);
  clock.t = 1000;
  assert.equal(pacer.acquire(demand()).ok, true, 'the next request probes');
});

test('a grant never used comes back whole; a released one stays spent', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=10;t=100' });
  const used = pacer.acquire(demand({ cost: 4 }));
  const unused = pacer.acquire(demand({ cost: 3 }));
  assert.equal(available(pacer, 'b'), 3);
  pacer.refund(unused.ticket);
  assert.equal(available(pacer, 'b'), 6, 'the bucket has the 3 back');
  assert.equal(pacer.snapshot().limits[0].inFlight, 1);
  pacer.release(used.ticket);
  assert.equal(available(pacer, 'b'), 6, 'a request sent may have been counted');
  // The window's allowance (r=10 until t) gets them back too: 6 more go, not 3.
  assert.equal(drain(pacer).tickets.length, 6);
});

test('a successor adopts the learned state (tab handoff), never richer than its predecessor', () => {
  const old = setup();
  learn(old.pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=3' });
  const state = JSON.parse(JSON.stringify(old.pacer.export())); // as BroadcastChannel clones it
  const next = setup();
  next.pacer.adopt(state);
  assert.equal(next.pacer.acquire(demand()).ok, true, 'known: no probe');
  assert.equal(drain(next.pacer).tickets.length, 2);
});

test("a successor adopting a heartbeat (not its predecessor's last word) starts every level empty", () => {
  const old = setup();
  learn(old.pacer, { 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=6;t=50' });
  const state = JSON.parse(JSON.stringify(old.pacer.export()));
  const next = setup();
  next.pacer.adopt(state, { spent: true });
  assert.equal(next.pacer.acquire(demand()).ok, false, 'what it showed may all be spent');
  const final = setup();
  final.pacer.adopt(state);
  assert.equal(drain(final.pacer).tickets.length, 6, 'a final state is taken as it is');
  // The 429 learner's bucket is emptied the same way, and a final state hands on its level.
  const learnt = afterASilent429();
  const justEmptied = JSON.parse(JSON.stringify(learnt.pacer.export()));
  learnt.clock.t += 1000; // one a second: a token back
  const refilled = JSON.parse(JSON.stringify(learnt.pacer.export()));
  const adopting = (state, options) => {
    const next = setup();
    next.pacer.adopt(state, options);
    return next.pacer.acquire(demand());
  };
  assert.equal(adopting(justEmptied).reason, 'learned', 'the server has just said it is empty: no burst after a handover');
  assert.equal(adopting(refilled).ok, true, 'the level it had');
  assert.equal(adopting(refilled, { spent: true }).reason, 'learned');
  const { learnedLevel, ...olderVersion } = refilled.scopes[0];
  assert.equal(learnedLevel, 1);
  assert.equal(adopting({ ...refilled, scopes: [olderVersion] }).reason, 'learned', 'no level sent: empty');
});

test('idle scopes are forgotten with the limits only they used; busy ones are kept', () => {
  const { clock, pacer } = setup();
  const user = (i) => demand({ scope: `${ORIGIN} user${i}` });
  const headers = { 'ratelimit-policy': '"p";q=10;w=1', ratelimit: '"p";r=9;t=0' };
  for (let i = 0; i < 100; i++) learn(pacer, headers, 200, user(i));
  const busy = pacer.acquire(user(7)); // in flight across the sweep
  assert.equal(busy.ok, true);
  assert.equal(pacer.snapshot().scopes.length, 100);
  assert.equal(pacer.snapshot().limits.length, 100, 'no pk: one limit per scope');
  clock.t += 61_000;
  learn(pacer, headers, 200, user(0)); // the sweep runs as user 0 is asked for: user 0, in use again, is kept
  assert.deepEqual(pacer.snapshot().scopes.map((s) => s.scope).sort(), [`${ORIGIN} user0`, `${ORIGIN} user7`]);
  assert.equal(pacer.snapshot().limits.length, 2);
  pacer.observe(busy.ticket, 200, seen(headers));
  assert.equal(available(pacer, 'p'), 9);
});

test('a scope keeps the policies it saw last: names that vary per resource do not pile up', () => {
  const { clock, pacer } = setup();
  const named = (name) => ({ ratelimit: `"${name}";r=50;t=0` });
  for (let i = 0; i < 200; i++) learn(pacer, named(`GET /items/${i}`));
  learn(pacer, named('GET /items/0')); // dropped, and back as the newest
  learn(pacer, named('GET /items/140')); // kept, and now the newest
  for (const name of ['a', 'b', 'c', 'd']) learn(pacer, named(name)); // drop 137, 138, 139, 141
  clock.t += 11_000;
  learn(pacer, named('d')); // the sweep drops the limits no scope keeps
  const kept = pacer.snapshot().limits.map((limit) => limit.policy);
  assert.equal(kept.length, MAX_SCOPE_POLICIES);
  for (const name of ['GET /items/0', 'GET /items/140', 'GET /items/142', 'd']) assert.ok(kept.includes(name), name);
  for (const name of ['GET /items/136', 'GET /items/139', 'GET /items/141']) assert.ok(!kept.includes(name), name);
});

test('two limits of one name, one with a partition key, are both paced', () => {
  // The server: "a" 10 per fixed minute, and "a" for partition x 1000 per minute, honest r and t.
  const { clock, pacer } = setup();
  const policy = '"a";q=10;w=60, "a";q=1000;w=60;pk=:eA==:';
  let [used, refused] = [0, 0];
  for (; clock.t < 120_000; clock.t += 50) {
    if (clock.t % 60_000 === 0) used = 0;
    const grant = pacer.acquire(demand());
    if (!grant.ok) continue;
    const status = used < 10 ? 200 : 429;
    if (status === 200) used += 1;
    else refused += 1;
    const t = Math.ceil((60_000 - (clock.t % 60_000)) / 1000);
    const ratelimit = `"a";r=${10 - used};t=${t}, "a";r=${1000 - used};t=${t};pk=:eA==:`;
    pacer.observe(grant.ticket, status, seen({ 'ratelimit-policy': policy, ratelimit }));
  }
  assert.equal(refused, 0, 'the limit without a key was kept'); // 2,380 when one replaced the other
  assert.deepEqual(pacer.snapshot().limits.map((l) => [l.partitionKey, l.quota]), [['', 10], ['eA==', 1000]]);
});

test('a complete listing that names a policy under a new partition key forgets the old key', () => {
  const { pacer } = setup();
  const [A, B] = [':QQ==:', ':Qg==:'];
  learn(pacer, { 'ratelimit-policy': `"p";q=10;w=60;pk=${A}`, ratelimit: `"p";r=9;t=60;pk=${A}` });
  const [first, second] = [pacer.acquire(demand()).ticket, pacer.acquire(demand()).ticket];
  pacer.observe(first, 200, seen({ 'ratelimit-policy': `"p";q=10;w=60;pk=${A}`, ratelimit: `"p";r=0;t=600;pk=${A}` }));
  // The server moves the client to partition B (new credentials, a new address).
  pacer.observe(second, 200, seen({ 'ratelimit-policy': `"p";q=10;w=60;pk=${B}`, ratelimit: `"p";r=9;t=60;pk=${B}` }));
  const grant = pacer.acquire(demand());
  assert.ok(grant.ok, `held by the old key: ${JSON.stringify(grant)}`);
  assert.deepEqual(pacer.export().scopes[0].policies, [['p', 'Qg==']]);
});

test("a listing without partition keys does not lift a partition's hold", () => {
  const { pacer } = setup();
  const A = ':QQ==:';
  // RateLimit items carry the client's partition key and join the policy listed without one.
  learn(pacer, { 'ratelimit-policy': '"p";q=10;w=60', ratelimit: `"p";r=9;t=60;pk=${A}` });
  const [first, second] = [pacer.acquire(demand()).ticket, pacer.acquire(demand()).ticket];
  pacer.observe(first, 200, seen({ 'ratelimit-policy': '"p";q=10;w=60', ratelimit: `"p";r=0;t=600;pk=${A}` }));
  pacer.observe(second, 200, seen({ 'ratelimit-policy': '"p";q=10;w=60' })); // a 304, say: the policy alone
  const grant = pacer.acquire(demand());
  assert.equal(grant.ok, false, `partition A has nothing left for 600 s: ${JSON.stringify(grant)}`);
});

test('a move between no partition key and a key forgets the old hold, either way', () => {
  const B = ':Qg==:';
  const unkeyed = (r, t) => ({ 'ratelimit-policy': '"p";q=10;w=60', ratelimit: `"p";r=${r};t=${t}` });
  const keyed = (r, t) => ({ 'ratelimit-policy': `"p";q=10;w=60;pk=${B}`, ratelimit: `"p";r=${r};t=${t};pk=${B}` });
  for (const [from, to] of [[unkeyed, keyed], [keyed, unkeyed]]) {
    const { pacer } = setup();
    learn(pacer, from(9, 60));
    const [first, second] = [pacer.acquire(demand()).ticket, pacer.acquire(demand()).ticket];
    pacer.observe(first, 200, seen(from(0, 600)));
    pacer.observe(second, 200, seen(to(9, 60))); // logged in, or out
    const grant = pacer.acquire(demand());
    assert.ok(grant.ok, `held by the old partition: ${JSON.stringify(grant)}`);
  }
  // A listing that says nothing of partitions adds its policy; the next keyed one drops it again.
  const { pacer } = setup();
  learn(pacer, keyed(9, 60));
  learn(pacer, { 'ratelimit-policy': '"p";q=10;w=60' });
  learn(pacer, keyed(8, 60));
  assert.deepEqual(pacer.export().scopes[0].policies, [['p', 'Qg==']]);
});

test('a limit back from a concurrency cap to a rate is charged only what was sent since', () => {
  const { clock, pacer } = setup();
  const policy = '"a";q=10;w=60';
  learn(pacer, { 'ratelimit-policy': policy, ratelimit: '"a";r=9;t=60' });
  for (let i = 0; i < 600; i++) { // an hour at the server's pace
    clock.t += 6_000;
    const grant = pacer.acquire(demand());
    assert.ok(grant.ok, `request ${i}: ${JSON.stringify(grant)}`);
    pacer.observe(grant.ticket, 200, seen({ 'ratelimit-policy': policy, ratelimit: '"a";r=9;t=6' }));
  }
  clock.t += 6_000;
  learn(pacer, { 'ratelimit-policy': '"a";q=5;qu="concurrent-requests"' });
  const capped = pacer.acquire(demand()).ticket;
  clock.t += 100;
  pacer.observe(capped, 200, seen({ 'ratelimit-policy': policy, ratelimit: '"a";r=9;t=6' }));
  const grant = pacer.acquire(demand());
  assert.ok(grant.ok, `the server says 9 are left; the client waits ${JSON.stringify(grant)}`);
});

test('a quota lowered far below the units in flight neither throws nor wedges the pacer', () => {
  const { clock, pacer } = setup();
  const upload = demand({ bytes: 1_000_000 });
  learn(pacer, { 'ratelimit-policy': '"up";q=1000000;w=1;qu="content-bytes"' }, 200, upload);
  const out = pacer.acquire(upload);
  assert.equal(out.ok, true);
  // A debt of a megabyte at one byte per 30 days: more than the engine could count.
  pacer.observe(out.ticket, 200, seen({ 'ratelimit-policy': '"up";q=1;w=2592000;qu="content-bytes"' }));
  assert.equal(pacer.acquire(demand()).ok, true, 'requests without a body are not held');
  clock.t += 300_001; // past ticketTtl: expired tickets are settled on the next acquire
  assert.equal(pacer.acquire(demand({ scope: 'other', origin: 'https://other.example' })).ok, true);
  const grant = pacer.acquire(demand({ bytes: 1 }));
  assert.ok(!grant.ok && grant.wait <= 2592000 * 1000, `wait ${grant.wait} ms: a byte a window`);
});

test('a limit that turns into a concurrency cap drops its rate bucket', () => {
  for (const cap of [100_000, 1_000_000_000]) {
    const { clock, pacer } = setup();
    learn(pacer, { 'ratelimit-policy': '"a";q=2;w=60' });
    const [first, second] = [pacer.acquire(demand()).ticket, pacer.acquire(demand()).ticket];
    pacer.observe(first, 200, seen({ 'ratelimit-policy': '"a";q=2;w=60', ratelimit: '"a";r=0;t=60' }));
    // Charged against the cap as its capacity, the old bucket took a debt of the cap, or threw.
    pacer.observe(second, 200, seen({ 'ratelimit-policy': `"a";q=${cap};qu="concurrent-requests"` }));
    assert.equal(available(pacer, 'a'), undefined, `cap ${cap}: no bucket`);
    clock.t += 60_000;
    learn(pacer, { 'ratelimit-policy': '"a";q=2;w=60' });
    const grant = pacer.acquire(demand());
    assert.ok(grant.ok || grant.wait <= 60_000, `cap ${cap}: wait ${grant.wait} ms`);
  }
});

test("a scope waiting on the 429 learner's slowest rate is not idle: the rate is kept, not learned again", () => {
  // The most jitter: one request a minute waits 66 s, longer than IDLE_SCOPE_MS.
  const { pacer, clock } = setup({ random: () => 0.9999, jitter: 0.1 });
  const learnedRate = () => pacer.snapshot().scopes.find((s) => s.scope === ORIGIN)?.learnedRate;
  const other = demand({ scope: `${ORIGIN} other` });
  learn(pacer, {}, 200, other);
  for (let i = 0; i < 40; i++) {
    let grant = pacer.acquire(demand());
    if (learnedRate() === 1 / 60) {
      // Another scope's request sweeps while this one waits, and again as it goes.
      clock.t += 61_000;
      learn(pacer, {}, 200, other);
      grant = pacer.acquire(demand());
    }
    while (!grant.ok) {
      assert.notEqual(grant.reason, 'probe', `429 #${i}: the scope was forgotten and probes again`);
      clock.t += grant.wait;
      grant = pacer.acquire(demand());
    }
    clock.t += 10;
    pacer.observe(grant.ticket, 429, seen({}));
  }
  assert.equal(learnedRate(), 1 / 60, 'still the slowest rate after 40 silent 429s');
});

// ---- the 429 learner on its own (learner.js), with the package's Bucket on a manual clock ----

const { Learner } = await source('learner.js');

function learnerSetup() {
  const clock = { t: 0 };
  const makeBucket = (configuration, previous) => {
    const parsed = engine.BucketConfiguration.fromJSON(configuration);
    if (previous) {
      previous.replaceConfiguration(parsed, engine.TokensInheritanceStrategy.AS_IS);
      return previous;
    }
    return engine.Bucket.builder().withConfiguration(parsed).withCustomTimeMeter(() => clock.t * 1e6).build();
  };
  return { clock, learner: new Learner(makeBucket) };
}

test("a first rate is measured over the last 10 s, from the first success among them, and needs two of them", () => {
  const cases = [
    // successes, the 429's time, the rate learned
    [[0, 11_000, 19_000, 20_000], 21_000, 0.9], // 0 and 11 000 (exactly 10 s before) are out: 2 in 2 s
    [[0, 12_000, 20_000], 21_000, 0.9 * 2 * 1000 / 9000], // 12 000 is in: timed from it
    [[20_000], 21_000, 1], // one success times nothing: the first guess
    [[], 1000, 1],
  ];
  for (const [successes, at, rate] of cases) {
    const { learner } = learnerSetup();
    for (const t of successes) learner.success(t);
    assert.equal(learner.rejected(at), 0, 'no backoff for a first 429');
    assert.ok(Math.abs(learner.rate - rate) < 1e-12, `${successes}: ${learner.rate}, not ${rate}`);
  }
});

test('the learner remembers the last 256 successes: a faster burst is measured over those', () => {
  // 300 successes a millisecond apart, then a 429 a second after the first: 256 in the second.
  const { learner } = learnerSetup();
  for (let t = 0; t < 300; t++) learner.success(t);
  learner.rejected(1000);
  assert.ok(Math.abs(learner.rate - 0.9 * 256) < 1e-9, String(learner.rate));
});

test('consecutive 429s back off 0.5 s, doubling, 30 s at most; a success starts them again', () => {
  const { learner } = learnerSetup();
  const backoffs = [];
  for (let i = 1; i <= 9; i++) backoffs.push(learner.rejected(i * 1000));
  assert.deepEqual(backoffs, [0, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  learner.success(10_000);
  assert.deepEqual([learner.rejected(11_000), learner.rejected(12_000)], [0, 500]);
});

test('a 429 to a request granted at the moment the last counted 429 came back is of the same burst', () => {
  const { learner } = learnerSetup();
  learner.rejected(1000);
  assert.equal(learner.rejected(1500, 1000), 0, 'granted at 1000: the same event');
  assert.equal(learner.rate, 1, 'not cut');
  assert.equal(learner.rejected(2000, 1001), 500, 'granted after it: another event, backing off');
  assert.equal(learner.rate, 0.75);
});

test("a refund gives a token back to a grant made after the bucket was last emptied, not at that moment", () => {
  const { learner, clock } = learnerSetup();
  clock.t = 1000;
  learner.rejected(1000);
  assert.equal(learner.level, 0);
  learner.refund(learner.bucket, 1000);
  assert.equal(learner.level, 0, 'granted as the 429 came back: before it, for all it knew');
  learner.refund(learner.bucket, 1001);
  assert.equal(learner.level, 1);
  // An adopted rate was never emptied here: a grant since gets its token back.
  const adopted = learnerSetup();
  adopted.learner.adopt(2);
  adopted.learner.refund(adopted.learner.bucket, 0);
  assert.equal(adopted.learner.level, 1);
});

test('adopt takes a positive number as the rate and a positive level, rounded down; anything else as none', () => {
  const cases = [
    // rate, options, [rate, level] after
    [0, undefined, [undefined, undefined]],
    [-1, undefined, [undefined, undefined]],
    ['2', undefined, [undefined, undefined]],
    [NaN, undefined, [undefined, undefined]],
    [null, undefined, [undefined, undefined]],
    [2, undefined, [2, 0]],
    [2, { level: 1 }, [2, 1]],
    [2, { level: 1.7 }, [2, 1]],
    [2, { level: -3 }, [2, 0]], // a debt counts as empty
    [2, { level: 2, empty: true }, [2, 0]],
  ];
  for (const [rate, options, expected] of cases) {
    const { learner } = learnerSetup();
    learner.adopt(rate, options);
    assert.deepEqual([learner.rate, learner.level], expected, `adopt(${rate}, ${JSON.stringify(options)})`);
  }
});

test('an adopted rate grows from its first success on, while requests use at least half of it', () => {
  const cases = [
    // adopted rate, successes, rate after
    [2, [0, 1000], 2 * 1.05], // exactly half in use: grows
    [2, [0, 2000], 2], // a quarter: does not
    [10, [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000], 10 * 1.05],
  ];
  for (const [adopted, successes, rate] of cases) {
    const { learner } = learnerSetup();
    learner.adopt(adopted);
    for (const t of successes) learner.success(t);
    assert.ok(Math.abs(learner.rate - rate) < 1e-9, `${adopted} with ${successes}: ${learner.rate}, not ${rate}`);
  }
  // Successes before the adoption do not make its first step: growth counts from then.
  const { learner } = learnerSetup();
  for (let t = 0; t < 256; t++) learner.success(t);
  learner.adopt(1);
  learner.success(256);
  assert.equal(learner.rate, 1);
});

test('a rate faster than the successes remembered is measured over those remembered', () => {
  // 600 a second adopted, then a success every millisecond: 256 remembered over 255 ms, 1004 a
  // second, more than half of 600.
  const { learner } = learnerSetup();
  learner.adopt(600);
  for (let t = 0; t <= 1000; t++) learner.success(t);
  assert.ok(Math.abs(learner.rate - 630) < 1e-9, String(learner.rate));
});

// ---- gaps found by mutation testing of pacer.js ----

test('without probe, requests go to an unknown server at once', () => {
  const { pacer } = setup({ probe: false });
  assert.equal(drain(pacer, demand(), 5).tickets.length, 5);
});

test('a refunded probe lets the next request probe; an unsubscribed listener is not called', () => {
  const { pacer } = setup();
  let woken = 0;
  const unsubscribe = pacer.onChange(() => woken++);
  pacer.refund(pacer.acquire(demand()).ticket);
  assert.equal(woken, 1);
  unsubscribe();
  const probe = pacer.acquire(demand());
  assert.equal(probe.ok, true, 'the refunded probe holds nothing');
  pacer.observe(probe.ticket, 200, seen({}));
  assert.equal(woken, 1);
});

test('answers, releases and refunds of expired tickets are taken without them: nothing throws', () => {
  const headers = { 'ratelimit-policy': '"b";q=10;w=60', ratelimit: '"b";r=9' };
  const answered = (status, headers) => (pacer, ticket) => pacer.observe(ticket, status, seen(headers));
  const cases = {
    'an answer with r and t': [answered(200, { ratelimit: '"b";r=3;t=30' }), (pacer) => {
      // Without its entry, only the other request out is known to be unseen: 3 - 1.
      assert.equal(available(pacer, 'b'), 2);
    }],
    'a 429 that says nothing': [answered(429, {}), (pacer) => {
      assert.equal(pacer.snapshot().scopes[0].learnedRate, 1);
    }],
    'a release': [(pacer, ticket) => pacer.release(ticket), (pacer) => assert.equal(available(pacer, 'b'), 7)],
    'a refund': [(pacer, ticket) => pacer.refund(ticket), (pacer) => assert.equal(available(pacer, 'b'), 7, 'nothing back')],
  };
  for (const [name, [late, check]] of Object.entries(cases)) {
    const { pacer, clock } = setup({ ticketTtl: 1000 });
    learn(pacer, headers);
    const lost = pacer.acquire(demand()).ticket;
    clock.t = 1000;
    assert.equal(pacer.acquire(demand()).ok, true, `${name}: the lost ticket expires as the next is granted`);
    late(pacer, lost);
    check(pacer);
  }
});

test("a lost probe's late release does not end its successor's probe", () => {
  const { pacer, clock } = setup({ ticketTtl: 1000 });
  const lost = pacer.acquire(demand()).ticket;
  clock.t = 1000;
  assert.equal(pacer.acquire(demand()).ok, true, 'the next probe');
  pacer.release(lost);
  assert.equal(pacer.acquire(demand()).reason, 'probe');
});

test('whether a 429 is explained by the limits it reports, or slows the scope through the 429 learner', () => {
  const cases = [
    // name, the first answer's headers, the 429's headers, whether the learner starts
    ['a known window, r=0 without t: its bucket paces', { 'ratelimit-policy': '"a";q=10;w=1', ratelimit: '"a";r=5' },
      { 'ratelimit-policy': '"a";q=10;w=1', ratelimit: '"a";r=0' }, false],
    ['X-RateLimit without any reset: the window is a guess', { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '5' },
      { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0' }, true],
    ['X-RateLimit, a reset seen before: the window is guessed from it', { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': '30' },
      { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0' }, false],
    ['a quota of 0 with t', { 'ratelimit-policy': '"a";q=0;w=60' },
      { 'ratelimit-policy': '"a";q=0;w=60', ratelimit: '"a";r=0;t=42' }, false],
    ['r equal to the cost: room for it', { 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=50' },
      { 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=1' }, true],
    ['a policy without state', { 'ratelimit-policy': '"a";q=10;w=1' }, { 'ratelimit-policy': '"a";q=10;w=1' }, true],
    ['only a unit not paced', { 'ratelimit-policy': '"odd";q=1;w=100;qu="acme-points"' },
      { 'ratelimit-policy': '"odd";q=1;w=100;qu="acme-points"', ratelimit: '"odd";r=0;t=100' }, true],
    ['only a concurrency cap', { 'ratelimit-policy': '"c";q=2;qu="concurrent-requests"' },
      { 'ratelimit-policy': '"c";q=2;qu="concurrent-requests"' }, true],
  ];
  for (const [name, first, refusal, learns] of cases) {
    const { pacer, clock } = setup();
    learn(pacer, first);
    clock.t += 1000;
    const grant = pacer.acquire(demand());
    assert.equal(grant.ok, true, name);
    pacer.observe(grant.ticket, 429, seen(refusal));
    assert.equal(pacer.snapshot().scopes[0].learnedRate !== undefined, learns, name);
  }
});

test('a 400, 500 or 503 without Retry-After is no success for the 429 learner: its rate does not grow', () => {
  for (const status of [400, 500, 503]) {
    const { pacer, clock } = afterASilent429();
    for (let i = 0; i < 6; i++) {
      clock.t += 1000;
      const grant = pacer.acquire(demand());
      assert.equal(grant.ok, true);
      pacer.observe(grant.ticket, status, seen({}));
    }
    assert.equal(pacer.snapshot().scopes[0].learnedRate, 1, `${status}`);
  }
});

test('a cached 429 without Retry-After teaches nothing, the 429 learner included', () => {
  const { pacer } = setup();
  learn(pacer, {});
  learn(pacer, { age: '30' }, 429);
  assert.equal(pacer.snapshot().scopes[0].learnedRate, undefined);
  assert.equal(pacer.acquire(demand()).ok, true);
});

test('steady pacing keeps the fraction of a token refilled: a correction to the same whole level leaves it', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=0' });
  clock.t = 150; // 1.5 tokens
  const out = pacer.acquire(demand());
  assert.equal(out.ok, true);
  pacer.observe(out.ticket, 200, seen({ ratelimit: '"b";r=0' })); // 0 whole tokens: as the bucket has
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 50, reason: 'policy' });
});

test('in flight at capacity, the level is capped to whole tokens: the fraction above them is not kept', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=10' });
  const { tickets } = drain(pacer, demand(), 10);
  pacer.observe(tickets[0], 200, seen({}));
  clock.t = 150; // 1.5 tokens, 9 in flight: room for 1
  assert.equal(pacer.acquire(demand()).ok, true);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 100, reason: 'policy' });
});

test('a quota of 1: a request costs 1 at most, and one in flight holds the token even once it refilled', () => {
  const { pacer, clock } = setup();
  learn(pacer, { 'ratelimit-policy': '"one";q=1;w=1', ratelimit: '"one";r=1' });
  const out = pacer.acquire(demand({ cost: 5 }));
  assert.equal(out.ok, true, 'costs 1: the quota');
  clock.t = 1000;
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 1000, reason: 'policy' }, 'the server may count it only now');
  pacer.observe(out.ticket, 200, seen({}));
  clock.t = 2000;
  assert.equal(pacer.acquire(demand({ cost: 5 })).ok, true);
});

test('a request ending its flight never raises the level: only a debt beyond those still out is forgiven', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=10' });
  const { tickets } = drain(pacer, demand(), 10);
  pacer.release(tickets[0]);
  assert.equal(available(pacer, 'b'), 0);
  pacer.observe(tickets[1], 200, seen({}));
  assert.equal(available(pacer, 'b'), 0);
});

test('a policy raised without r keeps the tokens the bucket had (AS_IS), not a fresh full bucket', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=2' });
  learn(pacer, { 'ratelimit-policy': '"b";q=20;w=100' });
  assert.equal(available(pacer, 'b'), 1);
  assert.equal(drain(pacer).tickets.length, 1);
});

test('r and t without a policy: no more than r until t, though no bucket paces', () => {
  const { pacer } = setup();
  learn(pacer, { ratelimit: '"b";r=0;t=30' });
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 30_000, reason: 'reset' });
});

test('a quota lowered to 0 drops its bucket, and t holds', () => {
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=60', ratelimit: '"b";r=5' });
  learn(pacer, { 'ratelimit-policy': '"b";q=0;w=60', ratelimit: '"b";r=0;t=42' });
  assert.equal(available(pacer, 'b'), undefined);
  assert.deepEqual(pacer.acquire(demand()), { ok: false, wait: 42_000, reason: 'reset' });
});

test('X-RateLimit without a reset is paced with the guessed window, a second', () => {
  const { pacer } = setup();
  learn(pacer, { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '10' });
  const { tickets, refusal } = drain(pacer);
  assert.equal(tickets.length, 10);
  assert.deepEqual(refusal, { ok: false, wait: 100, reason: 'policy' });
});

test("t with r: a token bucket's rounding is told by the request's own flight, from its grant", () => {
  const cases = [
    // granted at, answered at, RateLimit, the next wait
    [10_000, 10_050, '"b";r=0;t=2', { ok: false, wait: 2000, reason: 'reset' }], // 100 ms + 50 ms is not 2 s
    [10_000, 10_950, '"b";r=0;t=2', { ok: false, wait: 100, reason: 'policy' }],
    [10_000, 10_050, '"b";r=1;t=1', { ok: false, wait: 1000, reason: 'reset' }], // r=1 left until t: a window
  ];
  for (const [granted, answered, ratelimit, wait] of cases) {
    const { pacer, clock } = setup();
    learn(pacer, { 'ratelimit-policy': '"b";q=10;w=1', ratelimit: '"b";r=1' });
    clock.t = granted;
    const out = pacer.acquire(demand());
    clock.t = answered;
    pacer.observe(out.ticket, 200, seen({ ratelimit }));
    drain(pacer);
    assert.deepEqual(pacer.acquire(demand()), wait, `${ratelimit} after ${answered - granted} ms`);
  }
});

test('export and adopt at other clocks: allowances and blocks keep their ends, expired ones are not handed on', () => {
  const { pacer, clock } = setup();
  const blocked = demand({ scope: `${ORIGIN} b` });
  learn(pacer, { 'ratelimit-policy': '"w";q=100;w=60', ratelimit: '"w";r=3;t=30' });
  learn(pacer, { 'retry-after': '20' }, 429, blocked);
  clock.t = 10_000;
  assert.deepEqual(pacer.snapshot().scopes.map((s) => s.blockedFor), [0, 10_000]);
  const state = JSON.parse(JSON.stringify(pacer.export()));
  assert.deepEqual(state.limits[0].allowance, { remaining: 3, for: 20_000 });
  assert.deepEqual(state.scopes.map((s) => s.blockedFor), [0, 10_000]);
  clock.t = 40_000;
  assert.equal(pacer.export().limits[0].allowance, null, 'past its end');
  const next = setup();
  next.clock.t = 5000;
  next.pacer.adopt(state);
  assert.equal(drain(next.pacer).tickets.length, 3);
  assert.deepEqual(next.pacer.acquire(demand()), { ok: false, wait: 20_000, reason: 'reset' });
  assert.deepEqual(next.pacer.acquire(blocked), { ok: false, wait: 10_000, reason: 'retry-after' });
  // Nothing to adopt leaves nothing.
  for (const nothing of [undefined, null, {}]) {
    const empty = setup();
    empty.pacer.adopt(nothing);
    assert.deepEqual(empty.pacer.snapshot(), { limits: [], scopes: [] }, JSON.stringify(nothing));
  }
});

test("a reset counts towards the guessed window from admitted answers, a refusal's only before any, and is handed on", () => {
  const cases = [
    // [status, t] answers in turn, then [longestReset, admittedReset]
    [[[429, 600]], [600_000, false]],
    [[[429, 600], [200, 30]], [30_000, true]],
    [[[200, 60], [200, 30]], [60_000, true]],
    [[[200, 60], [429, 600]], [60_000, true]],
  ];
  for (const [answers, expected] of cases) {
    const { pacer } = setup();
    learn(pacer, { 'ratelimit-policy': '"w";q=100;w=60' });
    const { tickets } = drain(pacer, demand(), answers.length);
    answers.forEach(([status, t], i) => pacer.observe(tickets[i], status, seen({ ratelimit: `"w";r=50;t=${t}` })));
    const reset = (state) => state.limits.map((limit) => [limit.longestReset, limit.admittedReset]);
    const state = JSON.parse(JSON.stringify(pacer.export()));
    assert.deepEqual(reset(state), [expected], JSON.stringify(answers));
    const next = setup();
    next.pacer.adopt(state);
    assert.deepEqual(reset(next.pacer.export()), [expected], `${JSON.stringify(answers)}, adopted`);
  }
});

test('a scope is not forgotten while it is blocked or a limit of it holds; once its hold is past, it is', () => {
  const other = demand({ scope: `${ORIGIN} other` });
  const cases = [
    // name, the scope's first answer's status and headers, whether the sweep at 61 s keeps it
    ['held for an hour', 200, { 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=0;t=3600' }, true],
    ['one limit of two held', 200, { 'ratelimit-policy': '"a";q=100;w=60, "b";q=100;w=60', ratelimit: '"a";r=50, "b";r=0;t=3600' }, true],
    ['blocked for an hour', 429, { 'retry-after': '3600' }, true],
    ['held for 30 s', 200, { 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=0;t=30' }, false],
  ];
  for (const [name, status, headers, kept] of cases) {
    const { pacer, clock } = setup();
    learn(pacer, headers, status);
    clock.t = 61_000;
    learn(pacer, {}, 200, other); // the sweep runs
    assert.equal(pacer.snapshot().scopes.some((s) => s.scope === ORIGIN), kept, name);
    if (kept) assert.notEqual(pacer.acquire(demand()).reason, 'probe', name);
  }
});

test('a full listing lifts an old partition whatever state it carries for the new one', () => {
  const A = ':QQ==:';
  const listings = {
    'another key, r without t': { 'ratelimit-policy': '"p";q=10;w=60;pk=:Qg==:', ratelimit: '"p";r=9;pk=:Qg==:' },
    'no key, r without t': { 'ratelimit-policy': '"p";q=10;w=60', ratelimit: '"p";r=9' },
    'no key, t without r': { 'ratelimit-policy': '"p";q=10;w=60', ratelimit: '"p";t=60' },
  };
  for (const [name, headers] of Object.entries(listings)) {
    const { pacer } = setup();
    learn(pacer, { 'ratelimit-policy': `"p";q=10;w=60;pk=${A}`, ratelimit: `"p";r=9;t=60;pk=${A}` });
    const [first, second] = [pacer.acquire(demand()).ticket, pacer.acquire(demand()).ticket];
    pacer.observe(first, 200, seen({ 'ratelimit-policy': `"p";q=10;w=60;pk=${A}`, ratelimit: `"p";r=0;t=600;pk=${A}` }));
    pacer.observe(second, 200, seen(headers));
    const grant = pacer.acquire(demand());
    assert.ok(grant.ok, `${name}: held by the old key: ${JSON.stringify(grant)}`);
  }
});

test('a refund on a limit with no bucket (r and t without a policy) or no allowance (no t) gives back what it took', () => {
  const cases = [
    [{ ratelimit: '"b";r=5;t=30' }, 5],
    [{ 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=5' }, 5],
  ];
  for (const [headers, left] of cases) {
    const { pacer } = setup();
    learn(pacer, headers);
    pacer.refund(pacer.acquire(demand()).ticket);
    assert.equal(drain(pacer).tickets.length, left, JSON.stringify(headers));
  }
});

test("answers whose headers tell the rate keep their successes for the 429 learner's first measure", () => {
  const { pacer, clock } = setup();
  const roomy = { 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=50' };
  learn(pacer, roomy);
  for (let i = 0; i < 20; i++) {
    clock.t += 100;
    pacer.observe(pacer.acquire(demand()).ticket, 200, seen(roomy));
  }
  clock.t += 100;
  pacer.observe(pacer.acquire(demand()).ticket, 429, seen(roomy)); // room shown: refused for something else
  const rate = pacer.snapshot().scopes[0].learnedRate;
  assert.ok(Math.abs(rate - 9) < 1e-9, `90 % of the 21 successes in 2.1 s, got ${rate}`);
});

test('adopting a concurrency cap, or a state without levels (an older version), never makes a bucket richer', () => {
  const old = setup();
  learn(old.pacer, { 'ratelimit-policy': '"c";q=1;qu="concurrent-requests"' });
  const next = setup();
  next.pacer.adopt(JSON.parse(JSON.stringify(old.pacer.export())));
  assert.equal(next.pacer.acquire(demand()).ok, true);
  assert.equal(next.pacer.acquire(demand()).reason, 'concurrency');
  // A successor with a bucket of its own (it paced alone): a level not sent leaves it as it is.
  const { pacer } = setup();
  learn(pacer, { 'ratelimit-policy': '"b";q=10;w=100', ratelimit: '"b";r=2' });
  const state = JSON.parse(JSON.stringify(pacer.export()));
  delete state.limits[0].level;
  pacer.adopt(state);
  assert.equal(available(pacer, 'b'), 2);
});

test('idle scopes are looked for every 10 s, not at every request', () => {
  const { pacer, clock } = setup();
  const other = demand({ scope: `${ORIGIN} other` });
  const kept = () => pacer.snapshot().scopes.some((s) => s.scope === ORIGIN);
  learn(pacer, {});
  clock.t = 5000;
  learn(pacer, {}); // last used at 5 s
  clock.t = 61_000;
  learn(pacer, {}, 200, other); // a sweep: idle 56 s
  clock.t = 70_999;
  learn(pacer, {}, 200, other); // idle 65.999 s, but no sweep yet
  assert.equal(kept(), true);
  clock.t = 71_000;
  learn(pacer, {}, 200, other);
  assert.equal(kept(), false);
});

test('a limit a scope stopped listing is kept while requests on it are out: listed again, it has their charges', () => {
  const { pacer, clock } = setup();
  const policy = { 'ratelimit-policy': '"p";q=10;w=100' };
  learn(pacer, { ...policy, ratelimit: '"p";r=5' });
  const { tickets } = drain(pacer, demand(), 5);
  pacer.observe(tickets[0], 200, seen({ 'ratelimit-policy': '"other";q=1000;w=100' })); // "p" lifted
  clock.t = 11_000;
  learn(pacer, {}); // a sweep, with four requests still out on "p"
  pacer.observe(tickets[1], 200, seen(policy)); // listed again
  assert.equal(available(pacer, 'p'), 1, '0 and 11 s of refill at 1 per 10 s, not a fresh bucket');
});
