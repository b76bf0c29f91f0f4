// The request queue (js/client/queue.js) on its own: what happens when deciding on an entry throws.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { source } from './helpers.mjs';

const { RequestQueue } = await source('queue.js');

test('an entry whose decision throws fails alone, and the queue goes on', async () => {
  const ran = [];
  const failed = [];
  const queue = new RequestQueue({
    concurrency: 1,
    now: () => 0,
    refund: () => {},
    acquire: (entry) => {
      if (entry.bad) throw new Error('bad input');
      return { ok: true, ticket: entry.seq };
    },
  });
  const entry = (seq, bad = false) => ({
    seq,
    bad,
    priority: 0,
    scope: 'one scope',
    notBefore: 0,
    deadline: Infinity,
    start: (ticket) => void ran.push(ticket),
    fail: (error) => failed.push([seq, error.message]),
    timedOut: () => assert.fail('nothing times out here'),
  });
  queue.add(entry(1, true));
  queue.add(entry(2));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(failed, [[1, 'bad input']]);
  assert.deepEqual(ran, [2], 'the next entry of the same scope ran');
  assert.equal(queue.size, 0);
});

/** A queue of at most `maxWaiting` waiting entries in which every entry must wait. */
function waitingQueue(t, maxWaiting) {
  const queue = new RequestQueue({
    concurrency: 1,
    maxWaiting,
    now: () => 0,
    refund: () => {},
    acquire: () => ({ ok: false, wait: 1000, reason: 'policy' }),
  });
  t.after(() => queue.close()); // its wake-up timer would otherwise keep the process alive
  return queue;
}

/** An entry that may only wait or be shed (`full`). */
const waitingEntry = (seq, fields) => ({
  seq,
  priority: 0,
  scope: 'one scope',
  notBefore: 0,
  deadline: Infinity,
  start: () => assert.fail('nothing may start'),
  fail: () => assert.fail('no decision throws'),
  timedOut: () => assert.fail('nothing times out here'),
  ...fields,
});

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

test('past maxWaiting after a pass, the first attempts that would go last are shed; retries never are', async (t) => {
  const shed = [];
  const queue = waitingQueue(t, 2);
  for (const [seq, retry] of [[1], [2, true], [3], [4], [5, true]]) {
    queue.add(waitingEntry(seq, { retry, priority: seq === 4 ? 1 : 0, full: () => shed.push(seq) }));
  }
  await settle();
  assert.deepEqual(shed, [3, 1, 4], 'the lowest priority first, the newest first among equals');
  assert.equal(queue.size, 2, 'the two retries wait');
});

test('shedding skips entries that left meanwhile (a dropped hook aborting others) and stops at close', async (t) => {
  for (const [action, expected] of [['abort 3', [4, 2]], ['close', [4]]]) {
    const shed = [];
    const queue = waitingQueue(t, 1);
    const entries = [1, 2, 3, 4].map((seq) =>
      waitingEntry(seq, {
        full() {
          shed.push(seq);
          if (action === 'close') queue.close();
          else queue.remove(entries[2]); // as an abort of 3 would
        },
      }),
    );
    for (const entry of entries) queue.add(entry);
    await settle();
    assert.deepEqual(shed, expected, action);
  }
});

test('an entry shed without a full callback just leaves; past maxWaiting with only retries left, shedding stops', async (t) => {
  const queue = waitingQueue(t, 1);
  for (const [seq, retry] of [[1], [2, true], [3, true]]) queue.add(waitingEntry(seq, { retry }));
  await settle(); // a throw while shedding would be an unhandled rejection, failing this test
  assert.deepEqual(queue.close().map((entry) => entry.seq), [2, 3], 'both retries still wait');
});

test("an infinite wait is looked at again at its recheck, though nothing else wakes the queue", async (t) => {
  let asked = 0;
  const ran = [];
  const queue = new RequestQueue({
    concurrency: 1,
    now: () => performance.now(),
    refund: () => {},
    // A lost ticket's hold: infinite, until it expires 30 ms on.
    acquire: () => (++asked === 1 ? { ok: false, wait: Infinity, reason: 'probe', recheck: 30 } : { ok: true, ticket: asked }),
  });
  t.after(() => queue.close());
  queue.add(waitingEntry(1, { start: (ticket) => void ran.push(ticket) }));
  await settle();
  assert.deepEqual(ran, [], 'still held at 20 ms');
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.deepEqual(ran, [2], 'asked again once the ticket expired');
});

test('a grant for an entry that left while it was decided is refunded, never used; a wait hands nothing back and tells it nothing', async () => {
  for (const [grant, expected] of [[{ ok: true, ticket: 'T' }, ['T']], [{ ok: false, wait: 100, reason: 'policy' }, []]]) {
    const refunded = [];
    const told = [];
    let leave;
    const queue = new RequestQueue({
      concurrency: 1,
      now: () => 0,
      refund: (ticket) => refunded.push(ticket),
      acquire: () => new Promise((resolve) => {
        leave();
        resolve(grant);
      }),
    });
    const entry = waitingEntry(1, { waiting: (wait) => told.push(wait) });
    leave = () => queue.remove(entry);
    queue.add(entry);
    await settle();
    assert.deepEqual(refunded, expected, grant.reason ?? 'granted');
    assert.deepEqual(told, []);
  }
});

test('a first wait that times out at once does not hold its scope: the entries behind it ask for themselves', async (t) => {
  // A real clock: the wake-up timer, not another add, must start the second entry.
  const started = performance.now();
  const now = () => performance.now() - started;
  const ran = [];
  const timedOut = [];
  const queue = new RequestQueue({
    concurrency: 1,
    now,
    refund: () => {},
    // 5 tokens are 500 ms away, 1 token 50 ms.
    acquire: (entry) => (now() >= 50 ? { ok: true, ticket: entry.seq } : { ok: false, wait: entry.cost === 5 ? 500 : 50, reason: 'policy' }),
  });
  t.after(() => queue.close());
  const entry = (seq, cost, deadline, priority) => ({
    seq,
    cost,
    priority,
    scope: 'one scope',
    notBefore: 0,
    deadline,
    start: (ticket) => void ran.push(ticket),
    fail: (error) => assert.fail(error),
    timedOut: () => void timedOut.push(seq),
  });
  // Added second but first in line, so one pass looks at both: entry 1 (500 ms to wait, 200 to
  // go) times out at once; entry 2 (50 ms to wait, 300 to go) must then not be held by it.
  queue.add(entry(2, 1, 300, 0));
  queue.add(entry(1, 5, 200, 1));
  await new Promise((resolve) => setTimeout(resolve, 250));
  assert.deepEqual(timedOut, [1]);
  assert.deepEqual(ran, [2], 'the second entry ran on its own wake-up, before its deadline');
  assert.equal(queue.size, 0);
});

test('removing the entry that holds its scope wakes the entries behind it', async (t) => {
  // A real clock: only the removal, not a timer or another add, may start the second entry.
  const started = performance.now();
  const now = () => performance.now() - started;
  const ran = [];
  const queue = new RequestQueue({
    concurrency: 1,
    now,
    refund: () => {},
    // 5 tokens are 5 s away; 1 token 50 ms.
    acquire: (entry) => (entry.cost === 1 && now() >= 50 ? { ok: true, ticket: entry.seq } : { ok: false, wait: entry.cost === 5 ? 5000 : 50, reason: 'policy' }),
  });
  t.after(() => queue.close());
  const entry = (seq, cost, priority) => ({
    seq,
    cost,
    priority,
    scope: 'one scope',
    notBefore: 0,
    deadline: Infinity,
    start: (ticket) => void ran.push(ticket),
    fail: (error) => assert.fail(error),
    timedOut: () => assert.fail('nothing times out here'),
  });
  const big = entry(1, 5, 1);
  queue.add(big);
  queue.add(entry(2, 1, 0)); // behind the big one: held, on the big one's 5 s timer
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(ran, [], 'held by the first');
  assert.equal(queue.remove(big), true); // its request was aborted
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(ran, [2], 'the entry behind it went once it could');
});

/** A queue that grants every entry at once, on a clock that stays at 0. */
function grantingQueue(t, concurrency) {
  const queue = new RequestQueue({ concurrency, now: () => 0, refund: () => {}, acquire: (entry) => ({ ok: true, ticket: entry.seq }) });
  t.after(() => queue.close());
  return queue;
}

test('higher priorities go first and equal ones by seq, whatever order they were added in (a retry keeps its place)', async (t) => {
  const queue = grantingQueue(t, 1);
  const ran = [];
  let finish;
  // The first takes the only slot until finished, so that the others wait and are ordered.
  queue.add(waitingEntry(0, { start: () => new Promise((resolve) => void (finish = resolve)) }));
  await settle();
  for (const [seq, priority] of [[5, 0], [3, 0], [9, 1], [1, -1], [4, 0], [2, 0], [8, 1]]) {
    queue.add(waitingEntry(seq, { priority, start: (ticket) => void ran.push(ticket) }));
  }
  assert.equal(queue.size, 7);
  finish();
  await settle();
  assert.deepEqual(ran, [8, 9, 2, 3, 4, 5, 1]);
  assert.equal(queue.size, 0);
});

test('no more than concurrency entries run at once; a slot frees when start settles, resolved or rejected', async (t) => {
  const queue = grantingQueue(t, 2);
  const finish = new Map();
  for (const seq of [1, 2, 3, 4]) {
    queue.add(waitingEntry(seq, { start: () => new Promise((resolve, reject) => void finish.set(seq, { resolve, reject })) }));
  }
  await settle();
  assert.deepEqual([...finish.keys()], [1, 2]);
  assert.equal(queue.running, 2);
  assert.equal(queue.size, 2);
  finish.get(1).reject(new Error('the request failed'));
  await settle();
  assert.deepEqual([...finish.keys()], [1, 2, 3], 'a rejected start frees its slot');
  assert.equal(queue.running, 2);
  finish.get(2).resolve();
  await settle();
  assert.deepEqual([...finish.keys()], [1, 2, 3, 4]);
  finish.get(3).resolve();
  finish.get(4).resolve();
  await settle();
  assert.equal(queue.running, 0);
});

test('a start that throws frees its slot too, and the queue goes on', async (t) => {
  const queue = grantingQueue(t, 1);
  const ran = [];
  queue.add(waitingEntry(1, { start: () => { throw new Error('start threw'); } }));
  queue.add(waitingEntry(2, { start: (ticket) => void ran.push(ticket) }));
  await settle();
  assert.deepEqual(ran, [2]);
  assert.equal(queue.running, 0);
});

test('a wait that ends exactly at the deadline is waited out; one a millisecond longer times out at once', async (t) => {
  const told = [];
  const timedOut = [];
  const queue = new RequestQueue({ concurrency: 1, now: () => 100, refund: () => {}, acquire: () => ({ ok: false, wait: 400, reason: 'policy' }) });
  t.after(() => queue.close());
  queue.add(waitingEntry(1, { scope: 'a', deadline: 500, waiting: (grant) => told.push([1, grant]), timedOut: () => timedOut.push(1) }));
  queue.add(waitingEntry(2, { scope: 'b', deadline: 499, waiting: (grant) => told.push([2, grant]), timedOut: () => timedOut.push(2) }));
  await settle();
  assert.ok(told.length > 0 && told.every(([seq, grant]) => seq === 1 && grant.wait === 400 && grant.reason === 'policy'), JSON.stringify(told));
  assert.deepEqual(timedOut, [2]);
  assert.equal(queue.size, 1);
});

test("a retry's own backoff holds only itself, and it goes once its notBefore comes; past its deadline it times out at once", async (t) => {
  const started = performance.now();
  const now = () => performance.now() - started;
  const ran = [];
  const told = [];
  const timedOut = [];
  const queue = new RequestQueue({ concurrency: 1, now, refund: () => {}, acquire: (entry) => ({ ok: true, ticket: entry.seq }) });
  t.after(() => queue.close());
  const entry = (seq, priority, notBefore, deadline) =>
    waitingEntry(seq, {
      priority,
      notBefore,
      deadline,
      retry: true,
      start: (ticket) => void ran.push([ticket, now() >= notBefore]),
      waiting: (grant) => told.push([seq, grant.reason]),
      timedOut: () => timedOut.push(seq),
    });
  queue.add(entry(1, 1, 60, Infinity)); // first in line, backing off for 60 ms
  queue.add(entry(2, 0, 0, Infinity)); // same scope, behind it: goes at once
  queue.add(entry(3, 0, 1000, 500)); // its backoff ends after its deadline
  await settle();
  assert.deepEqual(ran, [[2, true]]);
  assert.deepEqual(timedOut, [3]);
  assert.deepEqual([...new Set(told.map(String))], ['1,retry'], 'only the entry backing off was told to wait');
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.deepEqual(ran, [[2, true], [1, true]], 'woken at its notBefore, not before');
});

test('close hands back what waits, disarms the wake-up and stops the queue; removing afterwards finds nothing', async () => {
  let asked = 0;
  const queue = new RequestQueue({ concurrency: 1, now: () => performance.now(), refund: () => {}, acquire: () => (++asked, { ok: false, wait: 30, reason: 'policy' }) });
  const entries = [1, 2].map((seq) => waitingEntry(seq, { scope: `scope ${seq}` }));
  for (const entry of entries) queue.add(entry);
  await settle();
  const askedBeforeClose = asked;
  assert.deepEqual(queue.close(), entries);
  assert.equal(queue.size, 0);
  assert.equal(queue.remove(entries[0]), false);
  queue.pump();
  queue.add(waitingEntry(3));
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(asked, askedBeforeClose, 'nothing is asked after close, not even at the wake-up');
});

test("entries behind a scope's wait are held by it without being asked: told its wait, or timed out now if it ends past their deadline", async (t) => {
  const asked = new Set();
  const told = [];
  const timedOut = [];
  const queue = new RequestQueue({
    concurrency: 1,
    now: () => 0,
    refund: () => {},
    acquire: (entry) => (asked.add(entry.seq), { ok: false, wait: 1000, reason: 'policy' }),
  });
  t.after(() => queue.close());
  queue.add(waitingEntry(1, { priority: 1 }));
  queue.add(waitingEntry(2, { deadline: 500, timedOut: () => timedOut.push(2) }));
  queue.add(waitingEntry(3, { waiting: (grant) => told.push(grant) }));
  await settle();
  assert.deepEqual([...asked], [1], 'only the first of the scope is asked');
  assert.deepEqual(timedOut, [2]);
  assert.ok(told.length > 0 && told.every((grant) => grant.wait === 1000 && grant.reason === 'policy'), JSON.stringify(told));
  assert.equal(queue.size, 2);
});

test('an entry that leaves while the pass decides on another is not asked for', async () => {
  const asked = [];
  const refunded = [];
  let open;
  const gate = new Promise((resolve) => {
    open = resolve;
  });
  const queue = new RequestQueue({
    concurrency: 3,
    now: () => 0,
    refund: (ticket) => refunded.push(ticket),
    acquire: async (entry) => {
      asked.push(entry.seq);
      if (entry.seq === 0) await gate; // the next pass then looks at 1 and 2 together
      if (entry.seq === 1) queue.remove(entries[2]); // 2 is aborted meanwhile
      return { ok: true, ticket: entry.seq };
    },
  });
  const entries = [0, 1, 2].map((seq) => waitingEntry(seq, { scope: `scope ${seq}`, start: () => {} }));
  for (const entry of entries) queue.add(entry);
  open();
  await settle();
  assert.deepEqual(asked, [0, 1]);
  assert.deepEqual(refunded, []);
});
