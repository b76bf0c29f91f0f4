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
