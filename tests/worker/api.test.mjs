// The /v1 service API end to end: the built worker in real workerd (Miniflare), over HTTP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { start, post, admin, greedy, intervally, rawRequest, sleep, ADMIN, SERVICE } from './harness.mjs';

const EXPOSE =
  'RateLimit, RateLimit-Policy, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ' +
  'EdgeBucket-Fallback, EdgeBucket-Shadow';

// Slow refills keep every header value exact whatever the test machine's speed.
const POLICIES = {
  // A timeout the object always meets: the timed call answers as an untimed one does.
  two: { timeout: '10s', bandwidths: [greedy('burst', 3, 3, '1h'), intervally('daily', 5, 5, '1d')] },
  one: { version: 1, bandwidths: [greedy(undefined, 10, 10, '1h')] },
  other: { bandwidths: [greedy(undefined, 100, 100, '1h')] }, // unnamed like one's: replacement matches them
  legacy: { legacyHeaders: true, bandwidths: [greedy('burst', 2, 2, '1h'), intervally('daily', 10, 10, '1d')] },
  shadow: { shadow: true, bandwidths: [greedy('b', 1, 1, '1h')] },
  slow: { bandwidths: [{ capacity: 10, initialTokens: 0, refill: { kind: 'greedy', tokens: 1, period: '100ms' } }] },
};

let w;
let n = 0;
const key = () => `key-${++n}`;
before(async () => {
  w = await start({ vars: { POLICIES } });
});
after(() => w.stop());

const consume = (k, body, headers) => w.call(`/v1/buckets/${k}/consume`, post(body, headers));
const inspect = async (k) => (await w.call(`/v1/buckets/${encodeURIComponent(k)}`, admin())).json();

test('two bandwidths: exact draft-10 headers on every decision, 429 problem with Retry-After', async () => {
  const k = key();
  let r = await consume(k, { policy: 'two' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(r.headers.get('ratelimit-policy'), '"burst";q=3;w=3600, "daily";q=5;w=86400');
  assert.equal(r.headers.get('ratelimit'), '"burst";r=2;t=0, "daily";r=4;t=0');
  assert.equal(r.headers.get('access-control-expose-headers'), EXPOSE);
  assert.equal(r.headers.get('retry-after'), null);
  const body = await r.json();
  assert.equal(body.allowed, true);
  assert.equal(body.remaining, 2);
  assert.deepEqual(body.bandwidths.map((b) => [b.name, b.capacity, b.windowSeconds, b.available]), [
    ['burst', 3, 3600, 2],
    ['daily', 5, 86400, 4],
  ]);

  r = await consume(k, { policy: 'two', tokens: 2 });
  assert.equal(r.status, 200);
  // burst is empty and refills one token every 1200 s: t is until it holds this request's 2.
  assert.equal(r.headers.get('ratelimit'), '"burst";r=0;t=2400, "daily";r=2;t=0');

  r = await consume(k, { policy: 'two' });
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('content-type'), 'application/problem+json');
  assert.equal(r.headers.get('ratelimit'), '"burst";r=0;t=1200, "daily";r=2;t=0');
  assert.equal(r.headers.get('retry-after'), '1200');
  const problem = await r.json();
  assert.equal(problem.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
  assert.equal(problem.status, 429);
  assert.deepEqual(problem['violated-policies'], ['burst']);
  assert.equal(problem.allowed, false);
  assert.ok(problem.waitMs > 1_199_000 && problem.waitMs <= 1_200_000, `${problem.waitMs}`);
  assert.ok(Number(r.headers.get('retry-after')) * 1000 >= problem.waitMs, 'Retry-After never early');
  assert.equal((await inspect(k)).remaining, 0, 'the rejection consumed nothing');
});

test('estimate changes nothing; ignore-limits goes into debt', async () => {
  const k = key();
  await consume(k, { policy: 'one', tokens: 9 });
  let r = await consume(k, { policy: 'one', tokens: 5, mode: 'estimate' });
  assert.equal(r.status, 200, 'an estimate is a question, never a 429');
  assert.equal((await r.json()).allowed, false);
  assert.equal(r.headers.get('ratelimit'), '"one";r=1;t=1440');
  assert.equal(r.headers.get('retry-after'), null, 'Retry-After belongs to rejections');
  r = await consume(k, { policy: 'one', tokens: 1, mode: 'estimate' });
  assert.equal((await r.json()).allowed, true);
  assert.equal((await inspect(k)).remaining, 1);
  r = await consume(k, { policy: 'one', tokens: 4, mode: 'ignore-limits' });
  assert.equal(r.status, 200);
  const body = await r.json();
  assert.equal(body.bandwidths[0].available, -3);
  // Seven tokens short of another 4: 7 × 360 s.
  assert.equal(r.headers.get('ratelimit'), '"one";r=0;t=2520');
  assert.ok(body.waitMs > 0, 'the violation is reported');
});

test('an estimate on an unknown key answers as a fresh bucket, and keeps it only when it refused below capacity', async () => {
  const k = key();
  const r = await consume(k, { policy: 'one', tokens: 3, mode: 'estimate' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('ratelimit'), '"one";r=10;t=0');
  assert.equal((await w.call(`/v1/buckets/${k}`, admin())).status, 404, 'no bucket was created');
  const deleted = await w.call(`/v1/buckets/${k}`, admin({ method: 'DELETE' }));
  assert.deepEqual(await deleted.json(), { deleted: false }, 'nothing to delete');
  // Refused below capacity, it keeps the bucket: the wait it names counts from now and comes true.
  const slow = key();
  const estimate = async () => (await consume(slow, { policy: 'slow', mode: 'estimate' })).json();
  const refused = await estimate();
  assert.deepEqual([refused.allowed, refused.waitMs], [false, 100]);
  assert.equal((await inspect(slow)).bandwidths[0].available, 0, 'kept');
  await sleep(150);
  assert.equal((await estimate()).allowed, true);
});

test('reserve: within maxWait it is reserved with the wait; beyond, refused and nothing taken', async () => {
  const k = key();
  await consume(k, { policy: 'one', tokens: 10 });
  let r = await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'one', maxWait: '5 minutes' }));
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), '360');
  assert.equal((await inspect(k)).bandwidths[0].available, 0);
  r = await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'one', tokens: 2, maxWait: '1h' }));
  assert.equal(r.status, 200);
  const body = await r.json();
  assert.equal(body.allowed, true);
  assert.ok(body.waitMs > 719_000 && body.waitMs <= 720_000, `${body.waitMs}`);
  assert.equal((await inspect(k)).bandwidths[0].available, -2);
});

test('admin: inspect, replace with a strategy, reset, delete', async () => {
  const k = key();
  assert.equal((await w.call(`/v1/buckets/${k}`, admin())).status, 404);
  await consume(k, { policy: 'one', tokens: 6 });
  let state = await inspect(k);
  assert.deepEqual([state.policy, state.version, state.remaining], ['one', 1, 4]);

  let r = await w.call(`/v1/buckets/${k}/configuration`, admin({ method: 'PUT', body: JSON.stringify({ policy: 'other', strategy: 'PROPORTIONALLY' }) }));
  assert.equal(r.status, 200);
  state = await r.json();
  assert.deepEqual([state.policy, state.remaining, state.bandwidths[0].capacity], ['other', 40, 100]);
  r = await consume(k, { policy: 'one' });
  assert.equal(r.status, 409, 'the bucket moved to another policy');
  assert.equal((await r.json()).code, 'POLICY_MISMATCH');

  r = await w.call(`/v1/buckets/${k}/reset`, admin({ method: 'POST' }));
  assert.equal((await r.json()).remaining, 100);

  r = await w.call(`/v1/buckets/${k}`, admin({ method: 'DELETE' }));
  assert.deepEqual(await r.json(), { deleted: true });
  assert.equal((await w.call(`/v1/buckets/${k}`, admin())).status, 404);
  r = await w.call(`/v1/buckets/${k}`, admin({ method: 'DELETE' }));
  assert.deepEqual(await r.json(), { deleted: false });
  r = await consume(k, { policy: 'one' });
  assert.equal((await r.json()).remaining, 9, 'a deleted key starts afresh');
});

test('auth: missing or wrong token is 401/403 and changes nothing', async () => {
  const k = key();
  await consume(k, { policy: 'one' });
  const cases = [
    ['GET', `/v1/buckets/${k}`],
    ['POST', `/v1/buckets/${k}/reset`],
    ['DELETE', `/v1/buckets/${k}`],
    ['PUT', `/v1/buckets/${k}/configuration`, { policy: 'other' }],
    ['GET', '/v1/metrics'],
    ['GET', '/v1/policies'],
  ];
  for (const [method, path, body] of cases) {
    for (const [authorization, status, code] of [
      [undefined, 401, 'UNAUTHORIZED'],
      [`Basic ${ADMIN}`, 401, 'UNAUTHORIZED'],
      ['Bearer wrong', 403, 'FORBIDDEN'],
      [`Bearer ${ADMIN}x`, 403, 'FORBIDDEN'],
    ]) {
      const headers = authorization ? { authorization } : {};
      const r = await w.call(path, { method, headers, body: body && JSON.stringify(body) });
      assert.equal(r.status, status, `${method} ${path} with ${authorization}`);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.equal((await r.json()).code, code);
      if (status === 401) assert.equal(r.headers.get('www-authenticate'), 'Bearer');
    }
  }
  const state = await inspect(k);
  assert.deepEqual([state.policy, state.remaining], ['one', 9], 'nothing changed');
});

test('service calls need the API key; admin endpoints are off without ADMIN_TOKEN', async () => {
  const locked = await start({ vars: { POLICIES, API_KEY: 'svc-key', ADMIN_TOKEN: undefined } });
  try {
    const call = (authorization) =>
      locked.call('/v1/buckets/k/consume', {
        method: 'POST',
        headers: authorization ? { authorization } : {},
        body: JSON.stringify({ policy: 'one' }),
      });
    assert.equal((await call()).status, 401);
    assert.equal((await call('Bearer nope')).status, 403);
    assert.equal((await call('Bearer svc-key')).status, 200);
    const r = await locked.call('/v1/buckets/k', admin());
    assert.equal(r.status, 403);
    assert.equal((await r.json()).code, 'ADMIN_DISABLED');
    const again = await call('Bearer svc-key');
    assert.equal((await again.json()).remaining, 8, 'refused calls consumed nothing');
  } finally {
    await locked.stop();
  }
});

test('empty secrets are unset: without them service and admin endpoints are disabled, not open', async () => {
  const bare = await start({ vars: { POLICIES, API_KEY: '', ADMIN_TOKEN: '' } });
  try {
    // 0xA0 is a Unicode space once decoded: it must not be trimmed into the empty token.
    const r = await bare.call('/v1/buckets/k', { headers: { authorization: 'Bearer \u00a0' } });
    assert.equal(r.status, 403);
    assert.equal((await r.json()).code, 'ADMIN_DISABLED');
    for (const [path, body] of [
      ['/v1/buckets/k/consume', { policy: 'one', tokens: 1e12, mode: 'ignore-limits' }],
      ['/v1/buckets/k/reserve', { policy: 'one', tokens: 5, maxWait: '200y' }],
    ]) {
      for (const authorization of [undefined, 'Bearer \u00a0', 'Bearer x']) {
        const headers = { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) };
        const refused = await bare.call(path, { method: 'POST', headers, body: JSON.stringify(body) });
        assert.equal(refused.status, 403, `${path} with ${authorization}`);
        assert.equal((await refused.json()).code, 'SERVICE_DISABLED');
      }
    }
  } finally {
    await bare.stop();
  }
});

test('a first request refused by initial tokens starts the refill', async () => {
  const take = () => w.call('/v1/buckets/slow-key/consume', post({ policy: 'slow' }));
  assert.equal((await take()).status, 429, 'no initial tokens');
  await new Promise((resolve) => setTimeout(resolve, 250));
  const later = await take();
  assert.equal(later.status, 200, 'the refill accrued from the first request');
  assert.ok((await later.json()).remaining >= 1);
});

test('bad input: a 4xx problem with a code, never a 5xx, and nothing changes', async () => {
  const k = key();
  await consume(k, { policy: 'one', tokens: 2 });
  const cases = [
    ['malformed JSON', `/v1/buckets/${k}/consume`, post('{"policy":'), 400, 'INVALID_JSON'],
    ['not an object', `/v1/buckets/${k}/consume`, post('[1,2]'), 400, 'INVALID_JSON'],
    ['empty body', `/v1/buckets/${k}/consume`, post(''), 400, 'INVALID_JSON'],
    ['unknown field', `/v1/buckets/${k}/consume`, post({ policy: 'one', token: 1 }), 400, 'INVALID_REQUEST'],
    ['missing policy', `/v1/buckets/${k}/consume`, post({ tokens: 1 }), 400, 'INVALID_REQUEST'],
    ['unknown mode', `/v1/buckets/${k}/consume`, post({ policy: 'one', mode: 'always' }), 400, 'INVALID_REQUEST'],
    ['unknown policy', `/v1/buckets/${k}/consume`, post({ policy: 'nope' }), 400, 'UNKNOWN_POLICY'],
    ['tokens 0', `/v1/buckets/${k}/consume`, post({ policy: 'one', tokens: 0 }), 400, 'NON_POSITIVE_TOKENS'],
    ['tokens negative', `/v1/buckets/${k}/consume`, post({ policy: 'one', tokens: -5 }), 400, 'NON_POSITIVE_TOKENS'],
    ['tokens fractional', `/v1/buckets/${k}/consume`, post({ policy: 'one', tokens: 1.5 }), 400, 'INVALID_TOKENS'],
    ['tokens huge', `/v1/buckets/${k}/consume`, post('{"policy":"one","tokens":1e300}'), 400, 'INVALID_TOKENS'],
    ['tokens past 64 bits', `/v1/buckets/${k}/consume`, post('{"policy":"one","tokens":9223372036854775808}'), 400, 'INVALID_TOKENS'],
    ['tokens a string', `/v1/buckets/${k}/consume`, post({ policy: 'one', tokens: '1' }), 400, 'INVALID_TOKENS'],
    ['tokens null', `/v1/buckets/${k}/consume`, post({ policy: 'one', tokens: null }), 400, 'INVALID_TOKENS'],
    ['tokens above capacity', `/v1/buckets/${k}/consume`, post({ policy: 'one', tokens: 11 }), 400, 'TOKENS_EXCEED_CAPACITY'],
    ['debt past 64 bits', `/v1/buckets/${k}/consume`, post('{"policy":"one","tokens":9223372036854775807,"mode":"ignore-limits"}'), 400, 'RESERVATION_OVERFLOW'],
    ['maxWait 0', `/v1/buckets/${k}/reserve`, post({ policy: 'one', maxWait: 0 }), 400, 'NON_POSITIVE_MAX_WAIT'],
    ['maxWait unreadable', `/v1/buckets/${k}/reserve`, post({ policy: 'one', maxWait: 'soon' }), 400, 'INVALID_DURATION'],
    ['empty key', '/v1/buckets//consume', post({ policy: 'one' }), 400, 'INVALID_KEY'],
    ['over-long key', `/v1/buckets/${'k'.repeat(257)}/consume`, post({ policy: 'one' }), 400, 'INVALID_KEY'],
    ['control character in key', '/v1/buckets/a%0Ab/consume', post({ policy: 'one' }), 400, 'INVALID_KEY'],
    ['key not UTF-8', '/v1/buckets/%FF/consume', post({ policy: 'one' }), 400, 'INVALID_KEY'],
    ["a gateway bucket's key", '/v1/buckets/gateway%3Aapi%3Aip%3A1.2.3.4/consume', post({ policy: 'one' }), 400, 'INVALID_KEY'],
    ['wrong method', `/v1/buckets/${k}/consume`, { method: 'GET' }, 405, 'METHOD_NOT_ALLOWED'],
    ['unknown endpoint', `/v1/buckets/${k}/refill`, post({}), 404, 'NOT_FOUND'],
    ['oversized body', `/v1/buckets/${k}/consume`, post(JSON.stringify({ policy: 'one', pad: 'x'.repeat(20_000) })), 413, 'BODY_TOO_LARGE'],
    ['bad strategy', `/v1/buckets/${k}/configuration`, admin({ method: 'PUT', body: '{"policy":"other","strategy":"MOST"}' }), 400, 'INVALID_REQUEST'],
    ['replace to unknown policy', `/v1/buckets/${k}/configuration`, admin({ method: 'PUT', body: '{"policy":"nope"}' }), 400, 'UNKNOWN_POLICY'],
  ];
  for (const [name, path, init, status, code] of cases) {
    const r = await w.call(path, init);
    assert.equal(r.status, status, name);
    assert.equal(r.headers.get('content-type'), 'application/problem+json', name);
    const problem = await r.json();
    assert.equal(problem.code, code, name);
    assert.equal(problem.status, status, name);
    assert.ok(problem.detail.length > 0, name);
  }
  const wrongMethod = await w.call(`/v1/buckets/${k}/consume`, { method: 'GET' });
  assert.equal(wrongMethod.headers.get('allow'), 'POST');
  const patch = await w.call(`/v1/buckets/${k}`, admin({ method: 'PATCH' }));
  assert.equal(patch.headers.get('allow'), 'GET, HEAD, DELETE');
  const state = await inspect(k);
  assert.deepEqual([state.policy, state.remaining], ['one', 8], 'nothing changed');
});

test('HEAD on the read endpoints answers as GET does', async () => {
  const k = key();
  await consume(k, { policy: 'one', tokens: 2 });
  for (const path of ['/v1/policies', '/v1/metrics', `/v1/buckets/${k}`]) {
    const [got, head] = [await w.call(path, admin()), await w.call(path, admin({ method: 'HEAD' }))];
    assert.deepEqual([head.status, head.headers.get('content-type')], [got.status, got.headers.get('content-type')], path);
    assert.equal(head.status, 200, path);
    await Promise.all([got.text(), head.text()]);
  }
  assert.equal((await w.call('/v1/policies', { method: 'HEAD' })).status, 401, 'admin only, as GET');
  const state = await inspect(k);
  assert.deepEqual([state.policy, state.remaining], ['one', 8], 'nothing changed');
});

test('the bucket object answers RPC only: fetch is 404, a malformed command 400, nothing changes', async () => {
  const k = key();
  await consume(k, { policy: 'one', tokens: 2 });
  const namespace = await w.mf.getDurableObjectNamespace('BUCKETS');
  const stub = namespace.get(namespace.idFromName(k));
  const r = await stub.fetch('https://bucket/', { method: 'POST', body: JSON.stringify({ consume: {} }) });
  assert.equal(r.status, 404);
  assert.equal((await r.json()).code, 'RPC_ONLY');
  const [status, body] = await stub.decide('{"consume":');
  assert.equal(status, 400);
  assert.equal(JSON.parse(body).code, 'INVALID_COMMAND');
  const state = await inspect(k);
  assert.deepEqual([state.policy, state.remaining], ['one', 8], 'nothing changed');
});

test('shadow mode decides and logs but never rejects', async () => {
  const k = key();
  assert.equal((await consume(k, { policy: 'shadow' })).status, 200);
  const r = await consume(k, { policy: 'shadow' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('edgebucket-shadow'), 'rejected');
  assert.equal(r.headers.get('retry-after'), null);
  assert.equal(r.headers.get('ratelimit'), '"b";r=0;t=3600');
  const body = await r.json();
  assert.deepEqual([body.allowed, body.shadowRejected, body.waitMs], [true, true, 0]);
  const line = (await w.logged((l) => l.key === k, 2)).at(-1);
  assert.deepEqual([line.allowed, line.shadowRejected], [true, true]);
});

test('a reservation that can never be granted: 429 without Retry-After, t or a wait', async () => {
  const k = key();
  const r = await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'two', tokens: 2 ** 62, maxWait: '1d' }));
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), null);
  assert.doesNotMatch(r.headers.get('ratelimit'), /;t=/);
  const body = await r.json();
  assert.deepEqual([body.allowed, body.waitMs], [false, null]);
});

test('a reservation beyond capacity that no wait within its maxWait can grant promises no retry', async () => {
  const k = key();
  // 10 tokens, 10 per hour: 12 need 2 more than a full bucket, 12 minutes.
  const r = await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'one', tokens: 12, maxWait: '11m' }));
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), null);
  assert.equal(r.headers.get('ratelimit'), '"one";r=10', 'no t: the bandwidth never holds 12');
  assert.equal((await r.json()).waitMs, null);
  const granted = await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'one', tokens: 12, maxWait: '12m' }));
  assert.equal(granted.status, 200);
  assert.equal((await granted.json()).waitMs, 720_000);
});

test('with LOG_DECISIONS "false", a shadow rejection is still logged', async () => {
  const quiet = await start({ vars: { POLICIES, LOG_DECISIONS: 'false' } });
  try {
    const shadowConsume = () => quiet.call('/v1/buckets/q/consume', post({ policy: 'shadow' }));
    assert.equal((await shadowConsume()).status, 200);
    const r = await shadowConsume();
    assert.equal(r.headers.get('edgebucket-shadow'), 'rejected');
    const [line] = await quiet.logged((l) => l.key === 'q');
    assert.equal(line.shadowRejected, true);
    assert.equal(quiet.logs.filter((l) => l.key === 'q').length, 1, 'the plain admission before it was not logged');
  } finally {
    await quiet.stop();
  }
});

test('shadow mode grants a refused reservation with no wait to obey', async () => {
  const k = key();
  assert.equal((await consume(k, { policy: 'shadow' })).status, 200);
  const r = await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'shadow', maxWait: '1s' }));
  assert.equal(r.status, 200);
  const body = await r.json();
  assert.deepEqual([body.allowed, body.shadowRejected, body.waitMs], [true, true, 0]);
  assert.equal((await inspect(k)).bandwidths[0].available, 0, 'nothing was reserved');
});

test('a chunked body is refused with 413 once past the limit, before the upload ends', async () => {
  const url = new URL(`/v1/buckets/${key()}/consume`, w.url);
  let sent = 0;
  const status = await new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: post('').headers });
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      response.resume();
      request.destroy();
      resolve(response.statusCode);
    });
    request.on('error', () => {}); // the worker may close the connection while we still write
    const chunk = Buffer.alloc(8192, 0x20);
    const more = () => {
      if (answered) return undefined;
      if (sent >= 4 * 1024 * 1024) return reject(new Error('the whole 4 MiB went in without an answer'));
      sent += chunk.length;
      request.write(chunk);
      setTimeout(more, 5);
    };
    more();
  });
  assert.equal(status, 413);
  assert.ok(sent < 1024 * 1024, `answered after ${sent} bytes`);
});

test('a Content-Length beside Transfer-Encoding: chunked frames nothing: the chunks decide, and the limit holds', async () => {
  // RFC 9112 §6.3. Taken at its word, `Content-Length: 0` let a body of any size be read whole.
  const chunk = (text) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
  const head = (authorization) =>
    `POST /v1/buckets/${key()}/consume HTTP/1.1\r\n${authorization}Content-Type: application/json\r\n` +
    'Content-Length: 0\r\nTransfer-Encoding: chunked\r\nConnection: close';
  const status = async (request) => {
    let timer;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, 5000, { status: 'no answer within 5 s' })));
    const answer = await Promise.race([request, late]);
    clearTimeout(timer);
    return answer.status;
  };
  const padding = Array.from({ length: 16 }, () => chunk(' '.repeat(65_536))).join('');
  const whole = `${chunk('{"policy":"one"')}${padding}${chunk('}')}0\r\n\r\n`;
  assert.equal(await status(rawRequest(w.url, head(`Authorization: Bearer ${SERVICE}\r\n`), whole)), 413);
  // Without a token, a body that never ends: the 401 comes once at most 64 KiB were read.
  const unfinished = Array.from({ length: 4 }, () => chunk('x'.repeat(65_536))).join('');
  assert.equal(await status(rawRequest(w.url, head(''), unfinished)), 401);
});

test('legacy X-RateLimit headers describe the tightest bandwidth', async () => {
  const k = key();
  const r = await consume(k, { policy: 'legacy' });
  assert.equal(r.headers.get('x-ratelimit-limit'), '2');
  assert.equal(r.headers.get('x-ratelimit-remaining'), '1');
  assert.equal(r.headers.get('x-ratelimit-reset'), '1800');
  assert.equal(r.headers.get('ratelimit'), '"burst";r=1;t=0, "daily";r=9;t=0');
});

test('legacy X-RateLimit-Reset is never before Retry-After, in debt or on a tie', async () => {
  const k = key();
  assert.equal((await consume(k, { policy: 'legacy', tokens: 10, mode: 'ignore-limits' })).status, 200);
  const r = await consume(k, { policy: 'legacy' });
  assert.equal(r.status, 429);
  // burst is 8 in debt and full in 18,000 s; daily is empty until its refill a day on.
  assert.equal(r.headers.get('ratelimit'), '"burst";r=0;t=16200, "daily";r=0;t=86400');
  assert.equal(r.headers.get('retry-after'), '86400');
  assert.equal(r.headers.get('x-ratelimit-limit'), '10', "daily's: it lets a request through last");
  assert.equal(r.headers.get('x-ratelimit-remaining'), '0');
  assert.equal(r.headers.get('x-ratelimit-reset'), '86400');
});

test('one structured log line per decision, and Prometheus counters', async () => {
  const k = key();
  await consume(k, { policy: 'one', tokens: 10 });
  await consume(k, { policy: 'one' });
  const lines = await w.logged((l) => l.key === k, 2);
  assert.equal(lines.length, 2);
  assert.deepEqual(
    lines.map((l) => [l.event, l.policy, l.op, l.tokens, l.allowed, l.remaining]),
    [
      ['decision', 'one', 'try', 10, true, 0],
      ['decision', 'one', 'try', 1, false, 0],
    ],
  );
  assert.ok(lines[1].waitMs > 0 && typeof lines[1].latencyMs === 'number');
  // An estimate that finds no tokens is no rejection; a granted reservation logs its wait.
  await consume(k, { policy: 'one', mode: 'estimate' });
  await w.call(`/v1/buckets/${k}/reserve`, post({ policy: 'one', maxWait: '1h' }));
  const [estimate, reserved] = await w.logged((l) => l.key === k && l.op !== 'try', 2);
  assert.deepEqual([estimate.op, estimate.allowed], ['estimate', false]);
  assert.deepEqual([reserved.op, reserved.allowed], ['reserve', true]);
  assert.ok(reserved.waitMs > 350_000 && reserved.waitMs <= 360_000, `a token per 6 minutes: ${reserved.waitMs}`);
  const metrics = async () => {
    const r = await w.call('/v1/metrics', admin());
    assert.equal(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const text = await r.text();
    return { text, count: (name) => Number(text.match(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm'))?.[1] ?? 0) };
  };
  // Every error answer is counted, the gateway's 404 (no routes here) as the API's.
  const notFound = 'edgebucket_errors_total{code="NOT_FOUND"}';
  const before = (await metrics()).count(notFound);
  assert.equal((await w.call('/nowhere')).status, 404);
  assert.equal((await w.call('/v1/nowhere', admin())).status, 404);
  const { text, count } = await metrics();
  assert.equal(count(notFound), before + 2, 'both 404s counted');
  assert.ok(count('edgebucket_decisions_total{policy="one",outcome="allowed"}') >= 1);
  assert.ok(count('edgebucket_decisions_total{policy="one",outcome="rejected"}') >= 1);
  assert.ok(count('edgebucket_decisions_total{policy="one",outcome="estimate"}') >= 1, 'estimates apart');
  assert.ok(count('edgebucket_errors_total{code="UNAUTHORIZED"}') >= 1, 'the auth test counted errors');
  assert.match(text, /^edgebucket_decision_latency_seconds_bucket\{le="\+Inf"\} \d+$/m);
  assert.match(text, /^# TYPE edgebucket_decision_latency_seconds histogram$/m);
});

test("the shipped wrangler.toml configuration loads", async () => {
  const shipped = await start({ tomlVars: true });
  try {
    const r = await shipped.call('/v1/policies', admin());
    assert.equal(r.status, 200);
    const policies = await r.json();
    assert.deepEqual(Object.keys(policies).sort(), ['api', 'api-premium', 'demo', 'login']);
    assert.equal(policies.api.failure, 'degrade');
    assert.equal(policies.api.bandwidths.length, 2);
    // The README's example: a key moved to the premium policy, tokens carried over in proportion.
    assert.equal((await shipped.call('/v1/buckets/user-42/consume', post({ policy: 'api', tokens: 1 }))).status, 200);
    const moved = await shipped.call(
      '/v1/buckets/user-42/configuration',
      admin({ method: 'PUT', body: JSON.stringify({ policy: 'api-premium', strategy: 'PROPORTIONALLY' }) }),
    );
    assert.equal(moved.status, 200);
    const state = await moved.json();
    assert.equal(state.policy, 'api-premium');
    const perMinute = state.bandwidths.find((b) => b.name === 'per-minute');
    assert.deepEqual([perMinute.capacity, perMinute.available], [1000, 990], '99 of 100 is 990 of 1000');
  } finally {
    await shipped.stop();
  }
});

test('a POLICIES table with an integer past 2^53 is refused; the same policy as a JSON string is read exactly', async () => {
  // 2^53 + 2, a JavaScript number, as wrangler hands a TOML table over: it may be a rounded 2^53 + 1.
  const table = await start({ vars: { POLICIES: { p: { bandwidths: [greedy('b', 2 ** 53 + 2, 1, '1s')] } } } });
  try {
    const r = await table.call('/v1/buckets/k/consume', post({ policy: 'p' }));
    assert.equal(r.status, 500);
    const problem = await r.json();
    assert.equal(problem.code, 'CONFIGURATION_ERROR');
    assert.match(problem.detail, /POLICIES holds the integer 9007199254740994 .* give POLICIES as a JSON string/);
  } finally {
    await table.stop();
  }
  const json = JSON.stringify({ p: { bandwidths: [greedy('b', 1, 1, '1s')] } }).replace('"capacity":1', '"capacity":9007199254740993');
  const text = await start({ vars: { POLICIES: json } });
  try {
    const r = await text.call('/v1/buckets/k/consume', post({ policy: 'p' }));
    assert.equal(r.status, 200);
    // Read as text: JSON.parse would round these two as wrangler rounded the table.
    const bucket = await (await text.call('/v1/buckets/k', admin())).text();
    assert.match(bucket, /"capacity":9007199254740993,/);
    assert.match(bucket, /"available":9007199254740992,/);
  } finally {
    await text.stop();
  }
});

test('a broken configuration is the operator\'s 500, with a message', async () => {
  const broken = await start({ vars: { POLICIES: { p: { bandwidths: [greedy('b', 0, 1, '1s')] } } } });
  try {
    const r = await broken.call('/v1/buckets/k/consume', post({ policy: 'p' }));
    assert.equal(r.status, 500);
    const problem = await r.json();
    assert.equal(problem.code, 'CONFIGURATION_ERROR');
    assert.match(problem.detail, /policy "p": NON_POSITIVE_CAPACITY/);
  } finally {
    await broken.stop();
  }
  // Among two Authorization lines (joined by a comma) the gateway could not find it to keep it
  // from the origin.
  const comma = await start({ vars: { POLICIES, API_KEY: 'svc,key' } });
  try {
    const r = await comma.call('/v1/buckets/k/consume', { method: 'POST', headers: { authorization: 'Bearer svc,key' }, body: JSON.stringify({ policy: 'one' }) });
    assert.equal(r.status, 500);
    const problem = await r.json();
    assert.deepEqual([problem.code, problem.detail.startsWith('API_KEY cannot hold a comma')], ['CONFIGURATION_ERROR', true], problem.detail);
  } finally {
    await comma.stop();
  }
});
