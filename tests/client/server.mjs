// A real HTTP server enforcing a rate limit with edgebucket itself (the installed package), for
// the client's end-to-end tests, the Chromium page and `make bench-client`. It answers like the
// worker: a greedy bucket of `capacity` refilling `capacity` per `window` seconds, and the
// headers of the chosen dialect.
//
//   GET /api/…   consumes one token: 200, or 429 with Retry-After
//   GET /stats   what it admitted and rejected (unlimited)
//   any other path in `files` is served as is (unlimited)
import http from 'node:http';
import { Bucket } from 'edgebucket';

const SECOND = 1e9;

/**
 * @param {object} [options]
 * @param {number} [options.capacity] tokens, also the `q` advertised
 * @param {number} [options.window] seconds to refill from empty (`w`)
 * @param {'draft-10' | 'draft-7' | 'draft-6' | 'x-ratelimit' | 'none'} [options.dialect]
 * @param {string} [options.partition] a request header whose value selects the bucket (and `pk`)
 * @param {boolean} [options.cors] add Access-Control-Allow-Origin: *
 * @param {boolean} [options.expose] with `cors`, also Access-Control-Expose-Headers
 * @param {Record<string, { type: string, body: string | Buffer }>} [options.files]
 */
export async function startServer({
  capacity = 20,
  window = 2,
  dialect = 'draft-10',
  partition,
  cors = false,
  expose = true,
  files = {},
} = {}) {
  const buckets = new Map();
  const stats = { admitted: [], rejected: [], byKey: {} };
  const bucketFor = (key) => {
    let bucket = buckets.get(key);
    if (!bucket) {
      bucket = Bucket.builder()
        .addLimit((l) => l.capacity(capacity).refillGreedy(capacity, `${window}s`).id('burst'))
        .withNanosecondPrecision()
        .build();
      buckets.set(key, bucket);
    }
    return bucket;
  };

  const server = http.createServer((request, response) => {
    const url = new URL(request.url, 'http://127.0.0.1');
    const headers = cors ? { 'access-control-allow-origin': '*' } : {};
    if (cors && expose) headers['access-control-expose-headers'] = 'RateLimit, RateLimit-Policy, Retry-After, Date, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset';
    if (url.pathname === '/stats') {
      response.writeHead(200, { ...headers, 'content-type': 'application/json' });
      response.end(JSON.stringify({ admitted: stats.admitted.length, rejected: stats.rejected.length, byKey: stats.byKey }));
      return;
    }
    if (!url.pathname.startsWith('/api/')) {
      const file = files[url.pathname];
      response.writeHead(file ? 200 : 404, { ...headers, 'content-type': file?.type ?? 'text/plain' });
      response.end(file?.body ?? 'not found');
      return;
    }
    const key = partition ? String(request.headers[partition] ?? '') : '';
    const bucket = bucketFor(key);
    const probe = bucket.tryConsumeAndReturnRemaining(1);
    const now = performance.timeOrigin + performance.now();
    (probe.consumed ? stats.admitted : stats.rejected).push(now);
    const counts = (stats.byKey[key] ??= { admitted: 0, rejected: 0 });
    counts[probe.consumed ? 'admitted' : 'rejected'] += 1;
    // t: seconds until the bucket again holds one token, rounded up (0 if it does), as the worker sends.
    const wait = Number(bucket.estimateAbilityToConsume(1).nanosToWaitForRefill);
    const t = Math.ceil(wait / SECOND);
    const remaining = Math.max(0, Number(probe.remainingTokens));
    Object.assign(headers, rateLimitHeaders(dialect, { capacity, window, remaining, t, key }));
    if (!probe.consumed) headers['retry-after'] = String(Math.max(1, Math.ceil(Number(probe.nanosToWaitForRefill) / SECOND)));
    if (!probe.consumed && dialect === 'none') delete headers['retry-after'];
    response.writeHead(probe.consumed ? 200 : 429, { ...headers, 'content-type': 'application/json' });
    response.end(probe.consumed ? '{"ok":true}' : '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded"}');
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    stats,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

function rateLimitHeaders(dialect, { capacity, window, remaining, t, key }) {
  const pk = key ? `;pk=:${Buffer.from(key).toString('base64')}:` : '';
  switch (dialect) {
    case 'draft-10':
      return {
        'ratelimit-policy': `"burst";q=${capacity};w=${window}${pk}`,
        ratelimit: `"burst";r=${remaining};t=${t}${pk}`,
      };
    case 'draft-7':
      return { 'ratelimit-policy': `${capacity};w=${window}`, ratelimit: `limit=${capacity}, remaining=${remaining}, reset=${t}` };
    case 'draft-6':
      return {
        'ratelimit-policy': `${capacity};w=${window}`,
        'ratelimit-limit': String(capacity),
        'ratelimit-remaining': String(remaining),
        'ratelimit-reset': String(t),
      };
    case 'x-ratelimit':
      // GitHub's style: the reset as epoch seconds.
      return {
        'x-ratelimit-limit': String(capacity),
        'x-ratelimit-remaining': String(remaining),
        'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + t),
        'x-ratelimit-used': String(capacity - remaining),
      };
    default:
      return {};
  }
}
