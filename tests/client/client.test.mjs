// createClient from the packed tarball against the real Node server (edgebucket enforcing the
// limit): options, the queue (priorities, QUEUE_FULL, TIMEOUT, abort), retries, hooks, stats,
// every header dialect end to end, the 429 learner, and use under ky and axios.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, EdgeBucketError } from 'edgebucket/client';
import { EdgeBucketError as PackageError } from 'edgebucket';
import { startServer } from './server.mjs';
import { offer } from './load.mjs';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { once } from 'node:events';
import v8 from 'node:v8';
import vm from 'node:vm';
import { devImport } from './helpers.mjs';

async function withServer(t, options) {
  const server = await startServer(options);
  t.after(() => server.close());
  return server;
}

test('bad options are EdgeBucketErrors with code INVALID_ARGUMENT, the package\'s own class', async () => {
  const cyclic = {};
  cyclic.self = cyclic;
  const bad = [
    [{ concurency: 2 }, /^createClient has no option "concurency" \(known: fetch, concurrency, maxQueue, timeout, retry, jitter, priority, cost, partition, share, probe, hooks, clock, random\)/],
    [{ concurrency: 0 }, /concurrency must be a positive integer or Infinity, got 0/],
    [{ maxQueue: -1 }, /maxQueue/],
    [{ maxQueue: 0 }, /maxQueue must be a positive integer or Infinity, got 0/],
    [{ timeout: 'soon' }, /timeout/],
    [{ retry: { limit: 1.5 } }, /retry.limit/],
    [{ retry: { tries: 3 } }, /retry has no option "tries"/],
    [{ retry: { statusCodes: [99] } }, /retry.statusCodes/],
    [{ jitter: 2 }, /jitter/],
    [{ share: '' }, /share/],
    [{ hooks: { paced: 'log' } }, /hooks.paced\[0\] must be a function/],
    [{ hooks: { sent: () => {} } }, /hooks has no option "sent"/],
    [{ fetch: 'fetch' }, /fetch/],
    [{ cost: 0 }, /cost/],
    [{ probe: 'yes' }, /probe/],
    [{ retry: { maxRetryAfter: null } }, /retry.maxRetryAfter must be a non-negative number of ms, got null/],
    [{ retry: { backoffLimit: '5000' } }, /retry.backoffLimit must be a non-negative number of ms, got "5000"/],
    [{ timeout: NaN }, /timeout must be a positive number of milliseconds or false, got NaN/],
    [{ priority: Infinity }, /priority must be a finite number, got Infinity/],
    ['fast', /must be an object/],
    // null is no default: only a missing option (undefined) is.
    [{ fetch: null }, /fetch must be a function, got null/],
    [{ concurrency: null }, /concurrency must be a positive integer or Infinity, got null/],
    [{ maxQueue: null }, /maxQueue must be a positive integer or Infinity, got null/],
    [{ jitter: null }, /jitter must be a number from 0 to 1, got null/],
    [{ share: null }, /share must be true, false or a non-empty name, got null/],
    [{ probe: null }, /probe must be true or false, got null/],
    [{ cost: null }, /cost must be a positive integer, got null/],
    [{ priority: null }, /priority must be a finite number, got null/],
    [new Map([['concurrency', 2]]), /createClient options must be an object/],
    [{ retry: { limit: null } }, /retry.limit must be a non-negative integer, got null/],
    [{ hooks: { paced: null } }, /hooks.paced\[0\] must be a function, got null/],
    // Neither null, a number nor a function holds options.
    [null, /createClient options must be an object, got null/],
    [5, /createClient options must be an object, got 5/],
    [{ retry: null }, /retry must be an object, got null/],
    [{ hooks: () => {} }, /hooks must be an object, got a function/],
    // Each range's edges.
    [{ concurrency: 2.5 }, /concurrency must be a positive integer or Infinity, got 2.5/],
    [{ cost: Infinity }, /cost must be a positive integer, got Infinity/],
    [{ retry: -1 }, /retry must be a non-negative integer, got -1/],
    [{ retry: { methods: 'GET' } }, /retry.methods must be an array of method names, got "GET"/],
    [{ retry: { methods: ['GET', 1] } }, /retry.methods must be an array of method names, got \["GET",1\]/],
    [{ retry: { statusCodes: 429 } }, /retry.statusCodes must be an array of HTTP status codes, got 429/],
    [{ retry: { statusCodes: [429, 600] } }, /retry.statusCodes must be an array of HTTP status codes, got \[429,600\]/],
    [{ retry: { statusCodes: [429.5] } }, /retry.statusCodes/],
    [{ retry: { maxRetryAfter: -1 } }, /retry.maxRetryAfter must be a non-negative number of ms, got -1/],
    [{ timeout: 0 }, /timeout must be a positive number of milliseconds or false, got 0/],
    [{ timeout: '1000' }, /timeout must be a positive number of milliseconds or false, got "1000"/],
    [{ timeout: true }, /timeout must be a positive number of milliseconds or false, got true/],
    [{ jitter: -0.1 }, /jitter must be a number from 0 to 1, got -0.1/],
    [{ jitter: '0.5' }, /jitter must be a number from 0 to 1, got "0.5"/],
    [{ share: 1 }, /share must be true, false or a non-empty name, got 1/],
    [{ partition: 'x-user' }, /partition must be a function, got "x-user"/],
    [{ clock: 5 }, /clock must be a function, got 5/],
    [{ random: 0.5 }, /random must be a function, got 0.5/],
    [{ hooks: { retry: [() => {}, 'log'] } }, /hooks.retry\[1\] must be a function, got "log"/],
    // Values JSON cannot show are still shown.
    [{ jitter: () => 0.1 }, /jitter must be a number from 0 to 1, got a function/],
    [{ share: Symbol('budget') }, /share must be true, false or a non-empty name, got Symbol\(budget\)/],
    [{ retry: { methods: cyclic } }, /retry.methods must be an array of method names, got \[object Object\]/],
  ];
  for (const [options, message] of bad) {
    assert.throws(() => createClient(options), (e) => e instanceof EdgeBucketError && e instanceof PackageError &&
      e.code === 'INVALID_ARGUMENT' && message.test(e.message), inspect(options));
  }
  // Undefined is missing, at every level; any object that is not a collection holds options.
  const options = class { concurrency = 3; share = false; get [Symbol.toStringTag]() { return 'Options'; } };
  // Each range's edges, inside.
  const good = [
    { share: false, retry: { limit: undefined }, hooks: { paced: undefined }, jitter: undefined }, new options(), undefined,
    { retry: 0 }, { retry: false }, { retry: { limit: 0, maxRetryAfter: 0, backoffLimit: 0, statusCodes: [100, 599] } },
    { timeout: false }, { jitter: 0 }, { jitter: 1 }, { concurrency: Infinity, maxQueue: Infinity }, { maxQueue: 1 },
    { share: 'budget' }, { cost: () => 2 }, { hooks: { paced: [() => {}, () => {}] } },
  ];
  for (const given of good) {
    const client = createClient(given);
    assert.equal(typeof client, 'function', JSON.stringify(given));
    client.close();
  }
  const globalFetch = globalThis.fetch;
  globalThis.fetch = undefined;
  try {
    assert.throws(() => createClient({ share: false }), (e) => e.code === 'INVALID_ARGUMENT' && /^no fetch: pass options.fetch/.test(e.message));
  } finally {
    globalThis.fetch = globalFetch;
  }
  const client = createClient({ share: false });
  await assert.rejects(client('http://127.0.0.1:9/api', { edgebucket: { cost: -1 } }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(client('http://127.0.0.1:9/api', { edgebucket: { prio: 1 } }), { code: 'INVALID_ARGUMENT', message: /^init.edgebucket has no option "prio" \(known: priority, cost, timeout\)/ });
  await assert.rejects(client('http://127.0.0.1:9/api', { edgebucket: { cost: null } }), /init.edgebucket.cost must be a positive integer, got null/);
  for (const [edgebucket, message] of [
    [null, /init.edgebucket must be an object, got null/],
    [{ priority: 'high' }, /init.edgebucket.priority must be a finite number, got "high"/],
    [{ timeout: 0 }, /init.edgebucket.timeout must be a positive number of milliseconds or false, got 0/],
  ]) {
    await assert.rejects(client('http://127.0.0.1:9/api', { edgebucket }), (e) => e.code === 'INVALID_ARGUMENT' && message.test(e.message), JSON.stringify(edgebucket));
  }
  const costly = createClient({ share: false, cost: () => 0 });
  await assert.rejects(costly('http://127.0.0.1:9/api'), (e) => e.code === 'INVALID_ARGUMENT' && /the cost option's result must be a positive integer, got 0/.test(e.message));
  // Read as text, any two Promises (or objects) would be one partition.
  for (const [partition, message] of [[async () => 'alice', /the partition option's result must be a string, got a Promise/], [() => ({ user: 1 }), /got {"user":1}/], [() => 7, /got 7/]]) {
    const partitioned = createClient({ share: false, partition });
    await assert.rejects(partitioned('http://127.0.0.1:9/api'), (e) => e.code === 'INVALID_ARGUMENT' && message.test(e.message));
  }
  // The origin's own scope, as headers.get gives for a missing header, as without the option.
  const limited = async () => new Response('ok', { headers: { 'ratelimit-policy': '"burst";q=50;w=5', ratelimit: '"burst";r=12;t=0' } });
  for (const partition of [() => '', () => null, () => undefined, undefined]) {
    const partitioned = createClient({ share: false, partition, fetch: limited });
    assert.equal((await partitioned('http://a.example/')).status, 200, String(partition));
    assert.deepEqual(partitioned.model().scopes.map((s) => s.scope), ['http://a.example'], String(partition));
  }
  // A clock given is the one read.
  let reads = 0;
  const clocked = createClient({ clock: () => (reads++, performance.now()), fetch: limited });
  await clocked('http://a.example/');
  assert.ok(reads > 0, 'the clock was read');
});

test('a request past maxQueue fails with QUEUE_FULL at once, and the dropped hook says so', async (t) => {
  const server = await withServer(t, { capacity: 1, window: 60 });
  const dropped = [];
  const client = createClient({ share: false, maxQueue: 2, hooks: { dropped: (e) => dropped.push(e.reason) } });
  assert.equal((await client(`${server.url}/api/a`)).status, 200);
  const queued = [client(`${server.url}/api/b`), client(`${server.url}/api/c`)];
  await assert.rejects(client(`${server.url}/api/d`), (e) => e instanceof EdgeBucketError && e.code === 'QUEUE_FULL');
  assert.deepEqual(dropped, ['queue-full']);
  assert.equal(client.stats().queued, 2);
  client.close();
  for (const request of queued) await assert.rejects(request, { code: 'CLOSED' });
  await assert.rejects(client(`${server.url}/api/e`), { code: 'CLOSED' });
});

test('past maxQueue the request that would go last is shed: the lowest priority, the newest among equals', { timeout: 10_000 }, async (t) => {
  const server = await withServer(t, { capacity: 1, window: 60 });
  const dropped = [];
  const client = createClient({ share: false, maxQueue: 2, hooks: { dropped: (e) => dropped.push(new URL(e.request.url).pathname) } });
  t.after(() => client.close());
  assert.equal((await client(`${server.url}/api/a`)).status, 200);
  const at = (path, priority) => client(`${server.url}${path}`, { edgebucket: { priority } }).catch((e) => e.code);
  const low = [at('/api/low1', 0), at('/api/low2', 0)];
  const high = at('/api/high', 5);
  assert.equal(await low[1], 'QUEUE_FULL', 'the newest of the lowest priority made room');
  assert.equal(await at('/api/low3', 0), 'QUEUE_FULL', 'an equal priority does not displace an older request');
  assert.deepEqual(dropped, ['/api/low2', '/api/low3']);
  assert.equal(client.stats().queued, 2);
  client.close();
  assert.deepEqual([await low[0], await high], ['CLOSED', 'CLOSED']);
});

test('maxQueue counts the requests that wait, not those a free slot is about to take', async () => {
  const slow = () => new Promise((resolve) => setTimeout(() => resolve(new Response('ok')), 50));
  const client = createClient({ share: false, probe: false, concurrency: 8, maxQueue: 1, fetch: slow });
  const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => client(`http://a.example/${i}`)));
  assert.deepEqual(results.map((r) => r.value?.status ?? r.reason.code), [...Array(9).fill(200), 'QUEUE_FULL']);
});

test('a fetch given in the options is called as a plain function, as a browser\'s own fetch must be', async () => {
  function strictFetch() {
    if (this !== undefined) throw new TypeError('Illegal invocation'); // what a browser's fetch does
    return Promise.resolve(new Response('ok'));
  }
  const client = createClient({ share: false, fetch: strictFetch });
  assert.equal((await client('http://a.example/')).status, 200);
});

test('a fetch that resolves to no Response fails that request with INVALID_RESPONSE and frees its slot', async () => {
  const answers = [undefined, { status: 200 }, new Response('ok')];
  const client = createClient({ share: false, probe: false, concurrency: 1, fetch: async () => answers.shift() });
  for (let i = 0; i < 2; i++) {
    await assert.rejects(client('http://a.example/'), (e) => e instanceof EdgeBucketError && e.code === 'INVALID_RESPONSE');
  }
  // With concurrency 1, a slot kept by either failure would leave this one queued for good.
  assert.equal((await client('http://a.example/')).status, 200);
  assert.equal(client.stats().inFlight, 0);
  client.close();
});

test("a retried response whose body is another library's stream (no cancel) is let go, and the retry made", async () => {
  for (const timeout of [false, 5000]) {
    let calls = 0;
    let destroyed = 0;
    // node-fetch's Response: its body is a Node stream, with destroy() and no cancel().
    const nodeStyle = () => ({ status: 503, headers: new Headers({ 'retry-after': '0' }), body: { destroy: () => destroyed++ } });
    const fetch = async () => (++calls === 1 ? nodeStyle() : new Response('ok'));
    const client = createClient({ share: false, probe: false, concurrency: 1, fetch, timeout });
    assert.equal((await client('http://a.example/x')).status, 200, `timeout ${timeout}`);
    assert.deepEqual([calls, destroyed, client.stats().inFlight], [2, 1, 0], `timeout ${timeout}`);
    // A body that cannot be let go at all does not fail the request either.
    calls = 0;
    const stuck = { status: 503, headers: new Headers(), body: { cancel: () => { throw new Error('locked'); } } };
    const client2 = createClient({ share: false, probe: false, concurrency: 1, fetch: async () => (++calls === 1 ? stuck : new Response('ok')), timeout, random: () => 0 });
    assert.equal((await client2('http://a.example/x')).status, 200);
    assert.equal(client2.stats().inFlight, 0);
    client.close();
    client2.close();
  }
});

test('retry.methods match a custom method whatever its case', async () => {
  let calls = 0;
  const fetch = async () => (++calls === 1 ? new Response('', { status: 503, headers: { 'retry-after': '0' } }) : new Response('ok'));
  const client = createClient({ share: false, probe: false, fetch, retry: { methods: ['purge'] } });
  assert.equal((await client('http://a.example/x', { method: 'purge' })).status, 200);
  assert.equal(calls, 2, 'retried once');
});

test('retry: by default twice, for 429 and 503, on the idempotent methods; or a limit, or false', async () => {
  /** How many times `init` is sent when every answer is `status` (Retry-After: 0). */
  async function sends(options, init, status = 503) {
    let calls = 0;
    const fetch = async () => (++calls, new Response('', { status, headers: { 'retry-after': '0' } }));
    const client = createClient({ share: false, probe: false, fetch, ...options });
    assert.equal((await client('http://a.example/x', init)).status, status);
    client.close();
    return calls;
  }
  const methods = ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'POST', 'PATCH']; // TRACE: no platform Request takes it
  const counts = await Promise.all(methods.map((method) => sends({}, { method })));
  assert.deepEqual(Object.fromEntries(methods.map((method, i) => [method, counts[i]])),
    { GET: 3, HEAD: 3, OPTIONS: 3, PUT: 3, DELETE: 3, POST: 1, PATCH: 1 });
  const limits = await Promise.all([sends({}, {}, 429), sends({}, {}, 500), sends({ retry: false }), sends({ retry: 1 }), sends({ retry: { limit: 1 } })]);
  assert.deepEqual(limits, [3, 1, 1, 2, 2]);
});

test('without hooks, a paced, retried or dropped request calls nothing and reports nothing', async (t) => {
  const reported = [];
  const original = console.error;
  console.error = (...args) => reported.push(args);
  t.after(() => { console.error = original; });
  let calls = 0;
  const fetch = async () => (++calls === 1 ? new Response('', { status: 503, headers: { 'retry-after': '0' } }) : new Response('ok'));
  const client = createClient({ share: false, concurrency: 1, maxQueue: 1, fetch });
  // The first is retried; the second is paced behind the probe, then shed for the retry (never
  // shed) waiting; the third is one too many waiting.
  const answers = await Promise.allSettled(['a', 'b', 'c'].map((name) => client(`http://a.example/${name}`)));
  assert.deepEqual(answers.map((a) => a.value?.status ?? a.reason.code), [200, 'QUEUE_FULL', 'QUEUE_FULL']);
  const { retries, paced, dropped } = client.stats();
  assert.deepEqual({ retries, paced, dropped }, { retries: 1, paced: 1, dropped: 2 });
  assert.deepEqual(reported, []);
});

test('a retry that its timeout would cut is not made: the response that asked for it is the answer', async () => {
  const answers = [
    // The wait comes from RateLimit's t, not Retry-After: known only to the pacer.
    { status: 429, headers: { ratelimit: '"p";r=0;t=30', 'ratelimit-policy': '"p";q=10;w=60' }, timeout: 5000 },
    // Retry-After fits the timeout, but not once jittered (1 s × 1.099).
    { status: 429, headers: { 'retry-after': '1' }, timeout: 1050 },
    // A 503's own backoff fits the timeout, but not once jittered (300 ms × 1.099).
    { status: 503, headers: {}, timeout: 320 },
    // A Retry-After of 0 names no wait: the 503's own backoff, as above.
    { status: 503, headers: { 'retry-after': '0' }, timeout: 320 },
  ];
  for (const { status, headers, timeout } of answers) {
    let calls = 0;
    const fetch = async () => (++calls, new Response(`no, ${status}`, { status, headers }));
    const client = createClient({ share: false, probe: false, fetch, random: () => 0.99 });
    const started = Date.now();
    const r = await client('http://a.example/x', { edgebucket: { timeout } });
    assert.equal(r.status, status, JSON.stringify(headers));
    assert.equal(await r.text(), `no, ${status}`, 'readable after the timeout');
    // Each wait is known to end past the timeout, so the answer comes at once, not at the timeout.
    assert.ok(Date.now() - started < 200, `answered at once: ${Date.now() - started} ms`);
    assert.deepEqual([calls, client.stats().retries, client.stats().dropped], [1, 0, 0]);
    client.close();
  }
});

test('a retry is cut by the timeout, however slowly the previous answer is discarded', async () => {
  let calls = 0;
  const fetch = async (request) => {
    if (++calls === 1) {
      // A 503 without Retry-After (a 300 ms backoff) whose body takes 300 ms to cancel.
      const body = new ReadableStream({ pull() {}, cancel: () => new Promise((resolve) => setTimeout(resolve, 300)) });
      return new Response(body, { status: 503 });
    }
    // A server that never answers: only the fetch's signal ends it.
    return new Promise((_, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason));
      if (request.signal.aborted) reject(request.signal.reason);
    });
  };
  const client = createClient({ share: false, probe: false, fetch, random: () => 0 });
  const started = Date.now();
  const alive = setTimeout(() => {}, 5000); // as a real fetch's socket would keep Node running
  await assert.rejects(client('http://a.example/x', { edgebucket: { timeout: 400 } }), { code: 'TIMEOUT' });
  clearTimeout(alive);
  assert.ok(Date.now() - started < 550, `cut at the timeout: ${Date.now() - started} ms`);
  assert.deepEqual([calls, client.stats().retries, client.stats().inFlight], [2, 1, 0]);
});

test("a Retry-After on another status (a 202's polling hint) holds back nothing else", async () => {
  const fetch = async (request) =>
    new URL(request.url).pathname === '/jobs' ? new Response('', { status: 202, headers: { 'retry-after': '5' } }) : new Response('ok');
  const client = createClient({ share: false, probe: false, fetch });
  assert.equal((await client('http://a.example/jobs', { method: 'POST' })).status, 202);
  const started = Date.now();
  assert.equal((await client('http://a.example/items')).status, 200);
  assert.ok(Date.now() - started < 1000, `not held for 5 s: ${Date.now() - started} ms`);
  assert.equal(client.stats().paced, 0);
});

test('a request that cannot go before its timeout fails with TIMEOUT as soon as that is known', async (t) => {
  const server = await withServer(t, { capacity: 1, window: 60 });
  const client = createClient({ share: false });
  t.after(() => client.close());
  await client(`${server.url}/api/a`);
  const started = Date.now();
  await assert.rejects(client(`${server.url}/api/b`, { edgebucket: { timeout: 5000 } }), { code: 'TIMEOUT' });
  assert.ok(Date.now() - started < 1000, 'the 60 s wait was known: no need to sit out the 5 s');
  assert.equal(client.stats().dropped, 1);
});

/**
 * A server allowing 2 requests a minute in fixed windows, the first ending 3 s from now with
 * `spent` of them used, answering RateLimit (and on a 429 Retry-After if asked); and a client
 * with a 20 s timeout whose `send` gives a status or an error code.
 */
async function fixedWindow(t, { spent, retryAfter }) {
  const QUOTA = 2;
  let windowEnd = Date.now() + 3000;
  const firstEnd = windowEnd;
  let used = spent;
  const arrivals = [];
  const server = http.createServer((request, response) => {
    const now = Date.now();
    while (now >= windowEnd) [windowEnd, used] = [windowEnd + 60_000, 0];
    const allowed = used < QUOTA;
    if (allowed) used += 1;
    arrivals.push({ at: now, status: allowed ? 200 : 429 });
    const reset = Math.ceil((windowEnd - now) / 1000);
    response.writeHead(allowed ? 200 : 429, {
      'ratelimit-policy': `"p";q=${QUOTA};w=60`,
      ratelimit: `"p";r=${QUOTA - used};t=${reset}`,
      ...(allowed || !retryAfter ? {} : { 'retry-after': String(reset) }),
    });
    response.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const client = createClient({ share: false, timeout: 20_000 });
  t.after(() => client.close());
  const url = `http://127.0.0.1:${server.address().port}/x`;
  const send = () => client(url).then((r) => r.status, (e) => e.code);
  return { arrivals, firstEnd, send, client };
}

/**
 * After `fixedWindow`'s second arrival: it came when the window ended (the jitter stretches by up
 * to 10 %), its answer (r=1) lets the next go at once, and the next window, 57 s away, is past the
 * timeout, which is known at once.
 */
async function servedFromTheWindowsEnd({ arrivals, firstEnd, send }, what) {
  const late = arrivals[1].at - firstEnd;
  assert.ok(late >= 0 && late < 1500, `${what} ${late} ms after the window's end`);
  assert.equal(await send(), 200);
  assert.ok(arrivals[2].at - arrivals[1].at < 1000, `${arrivals[2].at - arrivals[1].at} ms later`);
  const started = Date.now();
  assert.equal(await send(), 'TIMEOUT');
  assert.ok(Date.now() - started < 1000, 'known at once');
}

test("a fixed window's t sooner than the bucket's own wait: the next request goes when the window ends", { timeout: 30_000 }, async (t) => {
  // 2 a minute in fixed windows, the first ending 3 s from now with one of its 2 spent already:
  // its answer is r=0;t=3, where the client's greedy bucket would wait 60 / 2 = 30 s.
  const window = await fixedWindow(t, { spent: 1, retryAfter: false });
  const { arrivals, send, client } = window;
  assert.equal(await send(), 200);
  // Sent when t said (stretched by the jitter, up to 10 %), not after 30 s or a TIMEOUT now.
  assert.equal(await send(), 200);
  await servedFromTheWindowsEnd(window, 'sent');
  assert.deepEqual(arrivals.map((a) => a.status), [200, 200, 200], 'no 429');
  assert.equal(client.stats().rateLimited, 0);
});

test("a fixed window's Retry-After sooner than the bucket's own wait: the retry goes when the window ends", { timeout: 30_000 }, async (t) => {
  // 2 a minute in fixed windows, the first ending 3 s from now and spent already: the first
  // request gets a 429 with Retry-After: 3 (and r=0;t=3, which Retry-After takes precedence
  // over), where the client's greedy bucket would wait 60 / 2 = 30 s.
  const window = await fixedWindow(t, { spent: 2, retryAfter: true });
  const { arrivals, send, client } = window;
  // Retried when Retry-After said (stretched by the jitter, up to 10 %), not after 30 s or a
  // timeout known at once (the 429 then the answer).
  assert.equal(await send(), 200);
  assert.deepEqual(arrivals.map((a) => a.status), [429, 200]);
  await servedFromTheWindowsEnd(window, 'retried');
  assert.deepEqual(arrivals.map((a) => a.status), [429, 200, 200], 'one 429, the first');
  assert.equal(client.stats().rateLimited, 1);
});

test('with a timeout, requests behind the first probe of a new server wait for its answer', async (t) => {
  const server = await withServer(t, { capacity: 5, window: 60 });
  const client = createClient({ share: false, timeout: 30_000 });
  t.after(() => client.close());
  const urls = ['a', 'b', 'c'].map((p) => `${server.url}/api/${p}`);
  const responses = await Promise.all(urls.map((url) => client(url)));
  assert.deepEqual(responses.map((r) => r.status), [200, 200, 200]);
  assert.equal(client.stats().dropped, 0);
});

test('the timeout also bounds a request in flight', async (t) => {
  const server = await withServer(t, { capacity: 5, window: 1 });
  const slow = (request, init) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => fetch(request, init).then(resolve, reject), 2000);
    request.signal.addEventListener('abort', () => { clearTimeout(timer); reject(request.signal.reason); });
  });
  const client = createClient({ share: false, fetch: slow, timeout: 300 });
  const started = Date.now();
  await assert.rejects(client(`${server.url}/api/a`), (e) => e instanceof EdgeBucketError && e.code === 'TIMEOUT');
  assert.ok(Date.now() - started < 1500);
});

/** A full garbage collection, twice (weak references cleared, finalizers run in between). */
function collectGarbage() {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  gc();
  gc();
}

test("a fetch in flight hears the timeout and the caller's abort after a garbage collection", async (t) => {
  // Node's Request follows its signal only weakly (nodejs/undici#4068): before the client held
  // the request it passes on, a collection cut the link and both waited for the server.
  const silent = http.createServer(() => {}).listen(0, '127.0.0.1'); // accepts, never answers
  await once(silent, 'listening');
  t.after(() => { silent.closeAllConnections(); silent.close(); });
  const url = `http://127.0.0.1:${silent.address().port}`;
  const client = createClient({ share: false, probe: false, timeout: 500 });
  const controller = new AbortController();
  const started = Date.now();
  const settled = (promise) => promise.then((r) => [`status ${r.status}`], (e) => [e instanceof EdgeBucketError ? e.code : e.name, Date.now() - started]);
  const timed = settled(client(`${url}/a`));
  const aborted = settled(client(`${url}/b`, { signal: controller.signal, edgebucket: { timeout: false } }));
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(client.stats().inFlight, 2);
  collectGarbage();
  setTimeout(() => controller.abort(), 200);
  const [timeout, abort] = await Promise.all([timed, aborted]);
  assert.equal(timeout[0], 'TIMEOUT');
  assert.ok(timeout[1] < 1500, `TIMEOUT after ${timeout[1]} ms`);
  assert.equal(abort[0], 'AbortError');
  assert.ok(abort[1] < 1500, `aborted after ${abort[1]} ms`);
});

test("a body still arriving hears the caller's abort after a garbage collection", async (t) => {
  // The timeout bounds the wait for a response; the body is the caller's to read, and its
  // signal cuts it as fetch's own would.
  const stalling = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }); res.write('part'); });
  stalling.listen(0, '127.0.0.1'); // answers at once, then never finishes the body
  await once(stalling, 'listening');
  t.after(() => { stalling.closeAllConnections(); stalling.close(); });
  const client = createClient({ share: false, probe: false, timeout: 500 });
  const controller = new AbortController();
  const response = await client(`http://127.0.0.1:${stalling.address().port}/`, { signal: controller.signal });
  collectGarbage();
  const started = Date.now();
  setTimeout(() => controller.abort(), 200);
  const outcome = await response.text().then(() => 'read', (e) => e.name);
  assert.equal(outcome, 'AbortError');
  assert.ok(Date.now() - started < 1500, `the body was cut after ${Date.now() - started} ms`);
});

test('an AbortSignal takes a request out of the queue with the signal\'s reason', async (t) => {
  const server = await withServer(t, { capacity: 1, window: 60 });
  const client = createClient({ share: false });
  t.after(() => client.close());
  await client(`${server.url}/api/a`);
  const controller = new AbortController();
  const waiting = client(`${server.url}/api/b`, { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(client.stats().queued, 1);
  controller.abort();
  await assert.rejects(waiting, { name: 'AbortError' });
  assert.equal(client.stats().queued, 0);
  await assert.rejects(client(`${server.url}/api/c`, { signal: AbortSignal.abort() }), { name: 'AbortError' });
});

test('the dropped hook tells the client\'s timeout from the caller\'s signal, an AbortSignal.timeout included', async (t) => {
  const server = await withServer(t, { capacity: 1, window: 60 });
  const dropped = [];
  const client = createClient({ share: false, hooks: { dropped: ({ reason, error }) => dropped.push({ reason, error }) } });
  t.after(() => client.close());
  await client(`${server.url}/api/a`);
  await assert.rejects(client(`${server.url}/api/b`, { edgebucket: { timeout: 5000 } }), { code: 'TIMEOUT' });
  await assert.rejects(client(`${server.url}/api/c`, { signal: AbortSignal.timeout(100) }), { name: 'TimeoutError' });
  assert.deepEqual(dropped.map((e) => [e.reason, e.error instanceof EdgeBucketError ? e.error.code : e.error.name]), [['timeout', 'TIMEOUT'], ['aborted', 'TimeoutError']]);
});

test('an abort whose reason is a revoked Proxy still ends the request, with that reason', async (t) => {
  // Telling a TIMEOUT from the caller's own abort reads the reason's prototype, which throws for a
  // revoked Proxy: the request, already out of the queue, was never settled.
  const server = await withServer(t, { capacity: 1, window: 60 });
  const client = createClient({ share: false });
  t.after(() => client.close());
  await client(`${server.url}/api/a`);
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const controller = new AbortController();
  const waiting = client(`${server.url}/api/b`, { signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(client.stats().queued, 1);
  controller.abort(proxy);
  // (Wrapped: a promise resolved with the Proxy itself would read its `then`, and throw.)
  const settled = await Promise.race([waiting.then(() => 'resolved', (error) => ({ error })), new Promise((resolve) => setTimeout(() => resolve('unsettled'), 1000))]);
  assert.equal(settled.error, proxy, 'rejected with the reason');
  assert.equal(client.stats().queued, 0);
  const early = new AbortController();
  early.abort(proxy);
  const atOnce = await client(`${server.url}/api/c`, { signal: early.signal }).then(() => 'resolved', (error) => ({ error }));
  assert.equal(atOnce.error, proxy, 'an aborted signal: rejected with its reason at once');
});

test('a 429 answered after the client closed or the request was aborted is not retried: the request ends at once', { timeout: 15_000 }, async (t) => {
  const ends = [
    ['close', (client) => client.close(), { code: 'CLOSED' }],
    ['abort', (_, controller) => controller.abort(), { name: 'AbortError' }],
  ];
  for (const [why, end, expected] of ends) {
    // 429s carry only Retry-After (2 s). The request ends while its 429 is on the way back.
    const server = await withServer(t, { capacity: 1, window: 2, dialect: 'retry-after-only' });
    const controller = new AbortController();
    const fetchThenEnd = async (request, init) => {
      const response = await fetch(request, init);
      if (response.status === 429) end(client, controller);
      return response;
    };
    const client = createClient({ share: false, fetch: fetchThenEnd });
    t.after(() => client.close());
    await client(`${server.url}/api/probe`);
    const started = Date.now();
    await assert.rejects(client(`${server.url}/api/b`, { signal: controller.signal }), expected, why);
    assert.ok(Date.now() - started < 1500, `${why}: ended at once, not after the Retry-After`);
    assert.equal(client.stats().rateLimited, 1, why);
  }
});

test('waits and timeouts longer than setTimeout\'s 24.8 days are neither cut short nor spun on', async (t) => {
  const server = await withServer(t, { capacity: 1, window: 30 * 86_400 });
  let reads = 0;
  const client = createClient({ share: false, timeout: 2 ** 31 + 1000, clock: () => (reads++, performance.now()) });
  t.after(() => client.close());
  assert.equal((await client(`${server.url}/api/a`)).status, 200, 'a timeout past 2^31 ms does not fire at once');
  // The next token is 30 days away (past this client's timeout, so this request has none): it
  // waits, and the queue sleeps until then.
  const controller = new AbortController();
  const waiting = client(`${server.url}/api/b`, { signal: controller.signal, edgebucket: { timeout: false } });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const before = reads;
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.ok(reads - before < 5, `the queue woke ${reads - before} times in 300 ms`);
  controller.abort();
  await assert.rejects(waiting, { name: 'AbortError' });
});

test('a hook that throws is reported and the request it observed goes on', async (t) => {
  const server = await withServer(t, { capacity: 5, window: 1 });
  const reported = [];
  const original = console.error;
  console.error = (...args) => reported.push(args);
  t.after(() => {
    console.error = original;
  });
  const client = createClient({ share: false, hooks: { paced: () => { throw new Error('a bug in a hook'); } } });
  t.after(() => client.close());
  const responses = await Promise.all([client(`${server.url}/api/a`), client(`${server.url}/api/b`)]);
  assert.deepEqual(responses.map((r) => r.status), [200, 200]);
  await new Promise((resolve) => setTimeout(resolve, 20));
  console.error = original;
  assert.equal(reported.length, 1, 'the second request was paced behind the probe');
  assert.equal(reported[0][1].message, 'a bug in a hook');
});

// Node 24 has Web Locks, so sharing is on by default there (EDGEBUCKET_NODE24: tests/client/run.sh).
const runtimes = [['this Node', process.execPath], ['Node 24', process.env.EDGEBUCKET_NODE24]];
for (const [name, node] of runtimes) {
  test(`${name}: a process that used the client and aborted a waiting request exits without close()`, { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
    const child = spawnSync(node, [fileURLToPath(new URL('./idle-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(child.signal, null, `still running after 10 s: ${child.stdout}${child.stderr}`);
    assert.equal(child.status, 0, child.stderr);
    const { outcome, webLocks } = JSON.parse(child.stdout);
    assert.equal(outcome, 'AbortError');
    if (name === 'Node 24') assert.equal(webLocks, true, 'the case where sharing is on');
  });
}

test('a malformed Content-Length neither crashes the process nor stalls the queue', async (t) => {
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'ratelimit-policy': '"bytes";q=1000;w=1;qu="content-bytes"', ratelimit: '"bytes";r=900;t=0' });
      response.end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${server.address().port}/upload`;
  const client = createClient({ share: false, timeout: 5000 });
  assert.equal((await client(url, { method: 'POST', body: 'abc' })).status, 200, 'the policy is learned');
  // Counted by its body instead; whether fetch then sends the header is fetch's business.
  const odd = await client(url, { method: 'POST', body: 'x', headers: { 'content-length': '1.5' } }).then((r) => r.status, (e) => e.name);
  assert.ok(odd === 200 || odd === 'TypeError', String(odd));
  assert.equal((await client(url, { method: 'POST', body: 'next' })).status, 200, 'the queue goes on');
  assert.equal(client.stats().queued, 0);
});

test("a retry's backoff after a 503 does not hold back the origin's other requests", async (t) => {
  const arrivals = [];
  const server = http.createServer((request, response) => {
    arrivals.push(request.url);
    response.writeHead(request.url === '/flaky' ? 503 : 200);
    response.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${server.address().port}`;
  let others;
  const client = createClient({
    share: false,
    retry: { limit: 1, backoffLimit: 2000 },
    hooks: {
      // After the first 503 the retry waits out its backoff (300 ms) in the queue; 50 ms into
      // it, three more requests to the same origin are sent.
      retry: () => {
        others = new Promise((resolve) => setTimeout(resolve, 50)).then(() =>
          Promise.all([1, 2, 3].map(() => client(`${base}/ok`).then((r) => r.status))));
      },
    },
  });
  assert.equal((await client(`${base}/flaky`)).status, 503, 'retried once, then handed back');
  assert.deepEqual(await others, [200, 200, 200]);
  assert.deepEqual(arrivals, ['/flaky', '/ok', '/ok', '/ok', '/flaky'], 'the others went during the backoff');
});

test('priorities: a higher priority goes first, ties in arrival order', async (t) => {
  const server = await withServer(t, { capacity: 1, window: 1 });
  const client = createClient({ share: false });
  t.after(() => client.close());
  await client(`${server.url}/api/first`);
  const order = [];
  const send = (name, priority) => client(`${server.url}/api/${name}`, { edgebucket: { priority } }).then(() => order.push(name));
  await Promise.all([send('low', 0), send('high', 5), send('mid', 1), send('high2', 5)]);
  assert.deepEqual(order, ['high', 'high2', 'mid', 'low']);
});

test('retries: a 429 is retried after its Retry-After, for idempotent methods only, a bounded number of times', async (t) => {
  // Servers that limit without advertising it: their 429s carry only Retry-After (2 s here).
  const options = { capacity: 1, window: 2, dialect: 'retry-after-only' };
  const first = async (client, server) => assert.equal((await client(`${server.url}/api/probe`)).status, 200);
  const retries = [];
  const server = await withServer(t, options);
  const client = createClient({ share: false, hooks: { retry: (e) => retries.push([e.attempt, e.delay, e.response.status]) } });
  t.after(() => client.close());
  await first(client, server);
  // The probe learnt nothing, so the next goes at once, meets a 429 and is retried after it.
  const started = Date.now();
  assert.equal((await client(`${server.url}/api/b`)).status, 200);
  assert.ok(Date.now() - started >= 1900, 'waited out Retry-After');
  assert.deepEqual(retries, [[1, 2000, 429]]);
  assert.deepEqual([client.stats().retries, client.stats().rateLimited, client.stats().sent], [1, 1, 3]);

  const cases = [
    ['retry: 0 hands the 429 back', { retry: 0 }, {}],
    ['a Retry-After beyond maxRetryAfter is not waited for', { retry: { limit: 1, maxRetryAfter: 500 } }, {}],
    ['POST is not idempotent', {}, { method: 'POST', body: 'x' }],
  ];
  for (const [why, clientOptions, init] of cases) {
    const fresh = await withServer(t, options);
    const other = createClient({ share: false, ...clientOptions });
    t.after(() => other.close());
    await first(other, fresh);
    assert.equal((await other(`${fresh.url}/api/b`, init)).status, 429, why);
    assert.equal(other.stats().retries, 0, why);
  }
});

test('hooks and stats: paced events carry the wait and its reason', async (t) => {
  const server = await withServer(t, { capacity: 2, window: 1 });
  const paced = [];
  const client = createClient({ share: false, hooks: { paced: [(e) => paced.push(e.reason)] } });
  t.after(() => client.close());
  await Promise.all(Array.from({ length: 6 }, (_, i) => client(`${server.url}/api/${i}`)));
  const stats = client.stats();
  assert.equal(stats.requests, 6);
  assert.equal(stats.responses, 6);
  assert.equal(stats.rateLimited, 0);
  assert.equal(server.stats.rejected.length, 0);
  assert.ok(paced.includes('probe') && paced.includes('policy'), JSON.stringify(paced));
  const [limit] = client.model().limits;
  assert.equal(limit.policy, 'burst');
  assert.equal(limit.quota, 2);
  assert.equal(limit.window, 1000);
});

for (const dialect of ['draft-7', 'draft-6', 'x-ratelimit']) {
  test(`${dialect} end to end: 3× demand for 4 s without a 429`, async (t) => {
    const server = await withServer(t, { capacity: 10, window: 1, dialect });
    const client = createClient({ share: false, maxQueue: Infinity });
    const run = await offer(client, `${server.url}/api/x`, { rate: 30, seconds: 4 });
    const admitted = server.stats.admitted.length;
    t.diagnostic(`${dialect}: admitted ${admitted}, rejected ${server.stats.rejected.length}`);
    assert.equal(server.stats.rejected.length, 0);
    assert.ok(run.statuses.every((s) => s === 200 || s === 'CLOSED'));
    // Paced, not starved: at least half of capacity + rate × 4 s (a legacy reset may be coarse).
    assert.ok(admitted >= 25, `admitted ${admitted}`);
  });
}

test('partition keys end to end: two users of one origin each get their own budget', async (t) => {
  const server = await withServer(t, { capacity: 5, window: 1, partition: 'x-user' });
  const client = createClient({ share: false, maxQueue: Infinity, partition: (request) => request.headers.get('x-user') });
  const send = (url) => client(url, { headers: { 'x-user': Math.random() < 0.5 ? 'alice' : 'bob' } });
  send.close = client.close;
  const run = await offer(send, `${server.url}/api/x`, { rate: 30, seconds: 3 });
  assert.equal(server.stats.rejected.length, 0, JSON.stringify(server.stats.byKey));
  assert.ok(server.stats.byKey.alice.admitted >= 10 && server.stats.byKey.bob.admitted >= 10, JSON.stringify(server.stats.byKey));
  assert.equal(client.model().limits.length, 2);
  assert.ok(run.offered >= 90);
});

test('without a pk, the client\'s partition keeps budgets apart (X-RateLimit per user)', async (t) => {
  const server = await withServer(t, { capacity: 5, window: 60, dialect: 'x-ratelimit', partition: 'x-user' });
  const client = createClient({ share: false, timeout: 3000, partition: (request) => request.headers.get('x-user') });
  const send = (user) => client(`${server.url}/api/x`, { headers: user === null ? {} : { 'x-user': user } }).then((r) => r.status, (e) => e.code);
  const statuses = [];
  for (const user of ['alice', 'alice', 'alice', 'bob', 'bob', 'alice', 'alice', 'bob', 'bob', 'bob']) statuses.push(await send(user));
  assert.deepEqual(statuses, Array(10).fill(200), 'each user spends only their own 5');
  assert.equal(server.stats.rejected.length, 0);
  assert.equal(client.model().limits.length, 2, 'one limit per partition');
  assert.equal(await send('alice'), 'TIMEOUT', "alice's own budget is spent, whatever bob has left");
  assert.equal(await send(null), 200, "without the header (headers.get's null), the origin's own scope, with a budget of its own");
  assert.equal(client.model().limits.length, 3);
});

test('X-RateLimit without a reset: 429s slow the client instead of repeating every second', async (t) => {
  let used = 0;
  const server = http.createServer((request, response) => {
    const allowed = used < 5; // 5 per minute, a window the headers never tell
    if (allowed) used += 1;
    response.writeHead(allowed ? 200 : 429, { 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': String(5 - used) });
    response.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const client = createClient({ share: false, retry: false });
  const url = `http://127.0.0.1:${server.address().port}/x`;
  const statuses = [];
  // Until the client knows it cannot send within the request's timeout: a fast TIMEOUT, no 429.
  while (statuses.length < 20 && statuses.at(-1) !== 'TIMEOUT') {
    statuses.push(await client(url, { edgebucket: { timeout: 2000 } }).then((r) => r.status, (e) => e.code));
  }
  assert.deepEqual(statuses.slice(0, 5), Array(5).fill(200));
  const rejected = statuses.filter((s) => s === 429).length;
  assert.ok(rejected <= 5 && statuses.at(-1) === 'TIMEOUT', `${rejected} 429s: ${statuses}`);
});

test('headers hidden (no rate-limit headers at all): the 429 learner keeps 429s rare', async (t) => {
  const server = await withServer(t, { capacity: 10, window: 1, dialect: 'none' });
  const client = createClient({ share: false, maxQueue: Infinity });
  await offer(client, `${server.url}/api/x`, { rate: 30, seconds: 8 });
  const admitted = server.stats.admitted.length;
  const rejected = server.stats.rejected.length;
  t.diagnostic(`learner: admitted ${admitted}, rejected ${rejected}, rate ${client.model().scopes[0].learnedRate?.toFixed(2)}/s`);
  // A reactive client at 3× demand would see two 429s per success; the learner, one per several seconds.
  assert.ok(rejected <= admitted / 5, `${rejected} 429s for ${admitted} successes`);
  assert.ok(admitted >= 0.6 * (10 + 10 * 8), `admitted ${admitted}`);
});

test('usable as ky\'s fetch', async (t) => {
  const { default: ky } = await devImport('ky');
  const server = await withServer(t, { capacity: 3, window: 1 });
  const client = createClient({ share: false });
  t.after(() => client.close());
  const api = ky.create({ prefixUrl: server.url, fetch: client, retry: 0 });
  const bodies = await Promise.all(Array.from({ length: 8 }, (_, i) => api.get(`api/${i}`, { edgebucket: { priority: i } }).json()));
  assert.deepEqual(bodies, Array(8).fill({ ok: true }));
  assert.equal(server.stats.rejected.length, 0);
  assert.equal(client.stats().requests, 8);
});

test('usable as axios\'s fetch (adapter "fetch", env.fetch)', async (t) => {
  const { default: axios } = await devImport('axios');
  const server = await withServer(t, { capacity: 3, window: 1 });
  const client = createClient({ share: false });
  t.after(() => client.close());
  const api = axios.create({ baseURL: server.url, adapter: 'fetch', env: { fetch: client } });
  const responses = await Promise.all(Array.from({ length: 8 }, (_, i) => api.get(`/api/${i}`)));
  assert.deepEqual(responses.map((r) => r.data), Array(8).fill({ ok: true }));
  assert.equal(server.stats.rejected.length, 0);
  assert.equal(client.stats().requests, 8);
});
