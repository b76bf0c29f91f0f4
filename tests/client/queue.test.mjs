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
    release: () => {},
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

test('past maxWaiting after a pass, the newest first attempts are shed; retries never are', async (t) => {
  const shed = [];
  const queue = new RequestQueue({
    concurrency: 1,
    maxWaiting: 2,
    now: () => 0,
    release: () => {},
    acquire: () => ({ ok: false, wait: 1000, reason: 'policy' }), // everything waits
  });
  const entry = (seq, retry = false) => ({
    seq,
    retry,
    priority: seq === 4 ? 1 : 0, // a higher priority does not save the newest
    scope: 'one scope',
    notBefore: 0,
    deadline: Infinity,
    start: () => assert.fail('nothing may start'),
    fail: () => assert.fail('no decision throws'),
    timedOut: () => assert.fail('nothing times out here'),
    full: () => shed.push(seq),
  });
  t.after(() => queue.close()); // its wake-up timer would otherwise keep the process alive
  for (const [seq, retry] of [[1], [2, true], [3], [4], [5, true]]) queue.add(entry(seq, retry));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(shed, [4, 3, 1], 'newest first, whatever their priority');
  assert.equal(queue.size, 2, 'the two retries wait');
});
