// readHeaders over a table of real-world header sets, then malformed and hostile ones. Runs
// against the packed package (`edgebucket/client`), with structured-headers bundled inside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readHeaders, BOUNDS } from 'edgebucket/client';

const S = 1000;
// Sat, 21 Nov 2026 13:00:00 GMT: the server's Date in these sets; the client is 2 s ahead.
const SERVER_NOW = Date.UTC(2026, 10, 21, 13, 0, 0);
const CLIENT_NOW = SERVER_NOW + 2 * S;
const DATE = 'Sat, 21 Nov 2026 13:00:00 GMT';

const read = (headers, now = CLIENT_NOW) => readHeaders(headers, { now });
const limit = (fields) => ({ partitionKey: '', unit: 'requests', ...fields });

const realWorld = [
  {
    name: 'draft-10: two policies with a partition key (the draft, §3.2 and §4.2)',
    headers: {
      'RateLimit-Policy': '"burst";q=100;w=60;pk=:dXNlcjE=:, "daily";q=1000;w=86400;pk=:dXNlcjE=:',
      RateLimit: '"burst";r=42;t=17;pk=:dXNlcjE=:, "daily";r=900;t=3600;pk=:dXNlcjE=:',
    },
    dialect: 'draft-10',
    limits: [
      limit({ policy: 'burst', partitionKey: 'dXNlcjE=', quota: 100, window: 60 * S, remaining: 42, reset: 17 * S }),
      limit({ policy: 'daily', partitionKey: 'dXNlcjE=', quota: 1000, window: 86400 * S, remaining: 900, reset: 3600 * S }),
    ],
  },
  {
    name: 'draft-10: the edgebucket worker (two bandwidths, t=0 while tokens remain)',
    headers: {
      'RateLimit-Policy': '"burst";q=50;w=5, "hourly";q=1000;w=3600',
      RateLimit: '"burst";r=12;t=0, "hourly";r=940;t=0',
      'Access-Control-Expose-Headers': 'RateLimit, RateLimit-Policy, Retry-After',
    },
    dialect: 'draft-10',
    limits: [
      limit({ policy: 'burst', quota: 50, window: 5 * S, remaining: 12, reset: 0 }),
      limit({ policy: 'hourly', quota: 1000, window: 3600 * S, remaining: 940, reset: 0 }),
    ],
  },
  {
    name: 'draft-10: express-rate-limit (spaces after ";", pk), items in the other order',
    headers: {
      RateLimit: '"100-in-1min"; r=99; t=60; pk=:ZDE0OTZjNjg5MDc2:',
      'RateLimit-Policy': '"100-in-1min"; q=100; w=60; pk=:ZDE0OTZjNjg5MDc2:',
    },
    dialect: 'draft-10',
    limits: [limit({ policy: '100-in-1min', partitionKey: 'ZDE0OTZjNjg5MDc2', quota: 100, window: 60 * S, remaining: 99, reset: 60 * S })],
  },
  {
    name: 'draft-10: a quota unit, and the pk given only in RateLimit',
    headers: {
      'RateLimit-Policy': '"peruser";q=65535;qu="content-bytes";w=10',
      RateLimit: '"peruser";r=30000;t=5;pk=:QXBwLTk5OQ==:',
    },
    dialect: 'draft-10',
    limits: [limit({ policy: 'peruser', partitionKey: 'QXBwLTk5OQ==', unit: 'content-bytes', quota: 65535, window: 10 * S, remaining: 30000, reset: 5 * S })],
  },
  {
    name: 'draft-10: token names and `t` without `r` (the draft, appendix B.3.1)',
    headers: { 'RateLimit-Policy': 'quota;q=100;w=1', RateLimit: 'quota;t=1' },
    dialect: 'draft-10',
    limits: [limit({ policy: 'quota', quota: 100, window: 1 * S, reset: 1 * S })],
  },
  {
    name: 'draft-10: a service limit for a policy never described, and an unknown parameter',
    headers: { RateLimit: '"default";r=50;t=30;acme-burst=?1' },
    dialect: 'draft-10',
    limits: [limit({ policy: 'default', remaining: 50, reset: 30 * S })],
  },
  {
    name: 'draft-10: "request" (the registry table) is "requests"',
    headers: { 'RateLimit-Policy': '"a";q=5;w=1;qu="request"' },
    dialect: 'draft-10',
    limits: [limit({ policy: 'a', quota: 5, window: 1 * S })],
  },
  {
    name: 'draft-10: the pk in RateLimit-Policy only',
    headers: { 'RateLimit-Policy': '"user";q=10;w=1;pk=:dXNlcjE=:', RateLimit: '"user";r=3;t=1' },
    dialect: 'draft-10',
    limits: [limit({ policy: 'user', partitionKey: 'dXNlcjE=', quota: 10, window: 1 * S, remaining: 3, reset: 1 * S })],
  },
  {
    name: 'draft-7: express-rate-limit (a dictionary, and the policy matched by quota)',
    headers: { RateLimit: 'limit=100, remaining=99, reset=60', 'RateLimit-Policy': '100;w=60' },
    dialect: 'draft-7',
    limits: [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 99, reset: 60 * S })],
  },
  {
    name: 'draft-7: several policies, the expiring limit is the hourly one',
    headers: { RateLimit: 'limit=1000, remaining=10, reset=1800', 'RateLimit-Policy': '10;w=1, 1000;w=3600' },
    dialect: 'draft-7',
    limits: [
      limit({ policy: 'w=1', quota: 10, window: 1 * S }),
      limit({ policy: 'w=3600', quota: 1000, window: 3600 * S, remaining: 10, reset: 1800 * S }),
    ],
  },
  {
    name: 'draft-6: express-rate-limit (three fields and a policy)',
    headers: {
      'RateLimit-Policy': '100;w=60',
      'RateLimit-Limit': '100',
      'RateLimit-Remaining': '99',
      'RateLimit-Reset': '60',
    },
    dialect: 'draft-6',
    limits: [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 99, reset: 60 * S })],
  },
  {
    name: 'draft-6 of 2021: policies in RateLimit-Limit itself',
    headers: { 'RateLimit-Limit': '10, 10;w=1, 50;w=60', 'RateLimit-Remaining': '9', 'RateLimit-Reset': '1' },
    dialect: 'draft-6',
    limits: [
      limit({ policy: 'w=1', quota: 10, window: 1 * S, remaining: 9, reset: 1 * S }),
      limit({ policy: 'w=60', quota: 50, window: 60 * S }),
    ],
  },
  {
    name: 'draft-6 of 2021: the expiring limit with a window of its own',
    headers: { 'RateLimit-Limit': '100;w=60', 'RateLimit-Remaining': '7', 'RateLimit-Reset': '12' },
    dialect: 'draft-6',
    limits: [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 7, reset: 12 * S })],
  },
  {
    name: 'draft-6: a policy and the state, no RateLimit-Limit',
    headers: { 'RateLimit-Policy': '100;w=60', 'RateLimit-Remaining': '7', 'RateLimit-Reset': '12' },
    dialect: 'draft-6',
    limits: [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 7, reset: 12 * S })],
  },
  {
    name: 'GitLab: draft-6 names with an epoch-seconds RateLimit-Reset, read against the server Date',
    headers: {
      date: DATE,
      'RateLimit-Limit': '60',
      'RateLimit-Observed': '67',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': String(SERVER_NOW / 1000 + 30),
      'Retry-After': '30',
    },
    dialect: 'draft-6',
    retryAfter: 30 * S,
    limits: [limit({ policy: 'default', quota: 60, remaining: 0, reset: 30 * S })],
  },
  {
    name: 'Twitch Helix: Ratelimit-Reset in epoch seconds',
    headers: { date: DATE, 'Ratelimit-Limit': '800', 'Ratelimit-Remaining': '799', 'Ratelimit-Reset': String(SERVER_NOW / 1000 + 60) },
    dialect: 'draft-6',
    limits: [limit({ policy: 'default', quota: 800, remaining: 799, reset: 60 * S })],
  },
  {
    name: 'draft-7 dictionary with an epoch-milliseconds reset',
    headers: { date: DATE, RateLimit: `limit=100, remaining=5, reset=${SERVER_NOW + 45 * S}`, 'RateLimit-Policy': '100;w=60' },
    dialect: 'draft-7',
    limits: [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 5, reset: 45 * S })],
  },
  {
    name: 'GitHub: epoch-seconds reset read against the server Date, used, resource',
    headers: {
      date: DATE,
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': '4987',
      'x-ratelimit-reset': String(SERVER_NOW / 1000 + 1200),
      'x-ratelimit-used': '13',
      'x-ratelimit-resource': 'core',
    },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'core', quota: 5000, remaining: 4987, reset: 1200 * S })],
  },
  {
    name: 'GitHub: only limit and used',
    headers: { date: DATE, 'x-ratelimit-limit': '60', 'x-ratelimit-used': '60', 'x-ratelimit-resource': 'search' },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'search', quota: 60, remaining: 0 })],
  },
  {
    name: 'GitHub: remaining as sent, though limit less used says otherwise',
    headers: { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '100', 'x-ratelimit-used': '13' },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', quota: 5000, remaining: 100 })],
  },
  {
    name: 'X-RateLimit-Remaining alone',
    headers: { 'X-RateLimit-Remaining': '3' },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', remaining: 3 })],
  },
  {
    name: 'X-RateLimit with a delta-seconds reset',
    headers: { 'X-RateLimit-Limit': '60', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '42' },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', quota: 60, remaining: 0, reset: 42 * S })],
  },
  {
    name: 'X-RateLimit with an epoch-milliseconds reset',
    headers: { date: DATE, 'X-RateLimit-Limit': '60', 'X-RateLimit-Remaining': '1', 'X-RateLimit-Reset': String(SERVER_NOW + 2500) },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', quota: 60, remaining: 1, reset: 2500 })],
  },
  {
    name: 'Twitter: X-Rate-Limit-* spelling',
    headers: { date: DATE, 'x-rate-limit-limit': '900', 'x-rate-limit-remaining': '899', 'x-rate-limit-reset': String(SERVER_NOW / 1000 + 900) },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', quota: 900, remaining: 899, reset: 900 * S })],
  },
  {
    name: 'Discord: decimal epoch reset and Reset-After (which wins)',
    headers: {
      date: DATE,
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(SERVER_NOW / 1000 + 1.5),
      'X-RateLimit-Reset-After': '1.234',
    },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', quota: 5, remaining: 0, reset: 1234 })],
  },
  {
    name: 'an RFC 3339 reset',
    headers: { date: DATE, 'X-RateLimit-Remaining': '3', 'X-RateLimit-Reset': '2026-11-21T13:00:30Z' },
    dialect: 'x-ratelimit',
    limits: [limit({ policy: 'default', remaining: 3, reset: 30 * S })],
  },
  {
    name: 'draft-10 and X-RateLimit together (the worker with legacy headers): draft-10 wins',
    headers: {
      'RateLimit-Policy': '"burst";q=50;w=5',
      RateLimit: '"burst";r=12;t=0',
      'X-RateLimit-Limit': '50',
      'X-RateLimit-Remaining': '12',
      'X-RateLimit-Reset': '4',
    },
    dialect: 'draft-10',
    limits: [limit({ policy: 'burst', quota: 50, window: 5 * S, remaining: 12, reset: 0 })],
  },
];

for (const { name, headers, dialect, limits, retryAfter } of realWorld) {
  test(`real world: ${name}`, () => {
    const seen = read(new Headers(headers));
    assert.equal(seen.dialect, dialect);
    assert.equal(seen.retryAfter, retryAfter);
    assert.deepEqual(seen.limits, limits);
    // A plain object (Node's IncomingHttpHeaders, axios) reads the same, and so does a Map
    // with the names as sent (its own get would match them case-sensitively).
    assert.deepEqual(read(headers).limits, limits);
    assert.deepEqual(read(new Map(Object.entries(headers))).limits, limits);
  });
}

test('Retry-After: delay-seconds, and all three HTTP-date forms against the server Date (skew)', () => {
  const forms = {
    '120': 120 * S,
    'Sat, 21 Nov 2026 13:00:05 GMT': 5 * S, // IMF-fixdate
    'Saturday, 21-Nov-26 13:00:05 GMT': 5 * S, // obsolete RFC 850
    'Sat Nov 21 13:00:05 2026': 5 * S, // asctime
  };
  for (const [value, expected] of Object.entries(forms)) {
    const seen = read({ date: DATE, 'retry-after': value });
    assert.equal(seen.retryAfter, expected, value);
    assert.equal(seen.skew, 2 * S);
    assert.equal(seen.date, SERVER_NOW);
  }
  // asctime pads a one-digit day with a space.
  assert.equal(read({ date: 'Tue, 01 Dec 2026 12:00:00 GMT', 'retry-after': 'Tue Dec  1 12:00:09 2026' }).retryAfter, 9 * S);
  // Without Date, an HTTP-date is read against the client's clock.
  assert.equal(read({ 'retry-after': 'Sat, 21 Nov 2026 13:00:05 GMT' }).retryAfter, 3 * S);
  // A date in the past means now.
  assert.equal(read({ date: DATE, 'retry-after': 'Sat, 21 Nov 2026 12:00:00 GMT' }).retryAfter, 0);
  // Decimal seconds, though the RFC has only integers.
  assert.equal(read({ 'retry-after': '0.25' }).retryAfter, 250);
});

test('Retry-After with RateLimit: both are read (the pacer gives Retry-After precedence)', () => {
  const seen = read({ 'retry-after': '20', 'ratelimit-policy': '"dynamic";q=100;w=60', ratelimit: '"dynamic";r=15;t=40' });
  assert.equal(seen.retryAfter, 20 * S);
  assert.deepEqual(seen.limits, [limit({ policy: 'dynamic', quota: 100, window: 60 * S, remaining: 15, reset: 40 * S })]);
});

test('a four-digit year is that year, below 100 too (Date.UTC would add 1900)', () => {
  // Against a server Date of year 50, ten seconds later is ten seconds, not 1950's distance.
  assert.equal(read({ date: 'Sat, 21 Nov 0050 13:00:00 GMT', 'retry-after': 'Sat, 21 Nov 0050 13:00:10 GMT' }).retryAfter, 10 * S);
  const seen = read({ date: 'Sat, 21 Nov 0050 13:00:00 GMT' });
  assert.equal(seen.date, -60_561_255_600_000); // 0050-11-21T13:00:00Z
});

test('an RFC 850 two-digit year more than 50 years ahead is the last century', () => {
  assert.equal(read({ 'retry-after': 'Sunday, 06-Nov-94 08:49:37 GMT' }).retryAfter, 0);
  const seen = read({ date: 'Sun, 06 Nov 1994 08:49:30 GMT', 'retry-after': 'Sunday, 06-Nov-94 08:49:37 GMT' });
  assert.equal(seen.retryAfter, 7 * S);
});

test('HTTP-dates: every month, and each field at its bounds', () => {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  months.forEach((month, i) => {
    assert.equal(read({ date: `Sat, 21 ${month} 2026 13:00:00 GMT` }).date, Date.UTC(2026, i, 21, 13), month);
  });
  const dates = {
    'Sat, 21 Nov 2026 13:01:05 GMT': Date.UTC(2026, 10, 21, 13, 1, 5),
    'Sat, 21 Nov 2026 23:59:59 GMT': Date.UTC(2026, 10, 21, 23, 59, 59),
    'Sat, 21 Nov 2026 13:59:00 GMT': Date.UTC(2026, 10, 21, 13, 59),
    'Sat, 21 Nov 2026 13:00:60 GMT': Date.UTC(2026, 10, 21, 13, 1), // a leap second: the next second's start
    'Sat, 01 Nov 2026 13:00:00 GMT': Date.UTC(2026, 10, 1, 13),
    'Thu, 31 Dec 2026 13:00:00 GMT': Date.UTC(2026, 11, 31, 13),
    'Sunday, 01-Nov-26 13:00:00 GMT': Date.UTC(2026, 10, 1, 13),
    'Sat Jan  3 13:00:00 2026': Date.UTC(2026, 0, 3, 13),
    'Sat, 21 Foo 2026 13:00:00 GMT': undefined,
    'Sat, 21 Nov 2026 24:00:00 GMT': undefined,
    'Sat, 21 Nov 2026 13:60:00 GMT': undefined,
    'Sat, 21 Nov 2026 13:00:61 GMT': undefined,
    'Sat, 00 Nov 2026 13:00:00 GMT': undefined,
    'Sat, 31 Nov 2026 13:00:00 GMT': undefined,
  };
  for (const [value, expected] of Object.entries(dates)) assert.equal(read({ date: value }).date, expected, value);
  // RFC 850's two-digit year: 50 years ahead is still ahead (the client's clock is in 2026).
  assert.equal(read({ date: 'Friday, 01-Jan-76 00:00:00 GMT' }).date, Date.UTC(2076, 0, 1));
  assert.equal(read({ date: 'Friday, 01-Jan-77 00:00:00 GMT' }).date, Date.UTC(1977, 0, 1));
});

test('RFC 3339 resets: fractions, offsets, and each field at its bounds', () => {
  const reset = (value, date = DATE) => read({ date, 'x-ratelimit-reset': value }).limits[0]?.reset;
  const times = {
    '2026-11-21T13:00:30Z': 30 * S,
    '2026-11-21 13:00:30z': 30 * S,
    '2026-11-21T13:00:30.25Z': 30_250,
    '2026-11-21T13:00:30.123456789Z': 30_123,
    '2026-11-21T18:30:30+05:30': 30 * S,
    '2026-11-21T05:00:30-08:00': 30 * S,
    '2026-11-22T12:59:30+23:59': 30 * S,
    '2026-11-21T13:00:60Z': 60 * S, // a leap second
    '2026-11-21T23:59:59Z': (10 * 3600 + 59 * 60 + 59) * S,
    '2026-11-21T13:59:00Z': 59 * 60 * S,
    '2026-03-31T00:00:00Z': 0, // in the past: now
    '2026-11-21T13:00:30+24:00': undefined,
    '2026-11-21T13:00:30+05:60': undefined,
    '2026-11-21T13:00:61Z': undefined,
    '2026-11-21T24:00:00Z': undefined,
    '2026-11-21T13:60:00Z': undefined,
    '2026-00-21T13:00:30Z': undefined,
    '2026-13-21T13:00:30Z': undefined,
    '2026-11-00T13:00:30Z': undefined,
    '2026-02-30T13:00:30Z': undefined,
    'x2026-11-21T13:00:30Z': undefined,
    '2026-11-21T13:00:30Zx': undefined,
    '2026-11-21T13:00:30.Z': undefined,
  };
  for (const [value, expected] of Object.entries(times)) assert.equal(reset(value), expected, value);
  // The first and last months, against a Date of the day before.
  assert.equal(reset('2026-12-01T00:00:10Z', 'Mon, 30 Nov 2026 23:59:50 GMT'), 20 * S);
  assert.equal(reset('2027-01-01T00:00:10Z', 'Thu, 31 Dec 2026 23:59:50 GMT'), 20 * S);
});

test("a policy alone takes X-RateLimit's state for the same quota; its own state is never overwritten", () => {
  const x = { 'x-ratelimit-limit': '20', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '30' };
  const seen = read({ 'ratelimit-policy': '"fw";q=20;w=60', ...x });
  assert.equal(seen.dialect, 'draft-10');
  assert.deepEqual(seen.limits, [limit({ policy: 'fw', quota: 20, window: 60 * S, remaining: 0, reset: 30 * S })]);
  assert.deepEqual(read({ 'ratelimit-policy': '20;w=60', ...x }).limits, [limit({ policy: 'w=60', quota: 20, window: 60 * S, remaining: 0, reset: 30 * S })]);
  // Another quota is another limit; RateLimit's own state stays; two policies take none.
  assert.deepEqual(read({ 'ratelimit-policy': '"fw";q=50;w=60', ...x }).limits, [limit({ policy: 'fw', quota: 50, window: 60 * S })]);
  const own = read({ 'ratelimit-policy': '"fw";q=20;w=60', ratelimit: '"fw";r=5;t=3', ...x }).limits;
  assert.deepEqual(own, [limit({ policy: 'fw', quota: 20, window: 60 * S, remaining: 5, reset: 3 * S })]);
  assert.equal(read({ 'ratelimit-policy': '"a";q=20;w=60, "b";q=20;w=3600', ...x }).limits.some((l) => 'remaining' in l), false);
  // Its own r alone, or t alone, is state too.
  assert.deepEqual(read({ 'ratelimit-policy': '"fw";q=20;w=60', ratelimit: '"fw";r=5', ...x }).limits, [limit({ policy: 'fw', quota: 20, window: 60 * S, remaining: 5 })]);
  assert.deepEqual(read({ 'ratelimit-policy': '"fw";q=20;w=60', ratelimit: '"fw";t=3', ...x }).limits, [limit({ policy: 'fw', quota: 20, window: 60 * S, reset: 3 * S })]);
  // X-RateLimit without a limit names no other quota; what it lacks stays unknown; its remaining
  // is capped by the policy's quota.
  const policy = { 'ratelimit-policy': '"fw";q=20;w=60' };
  assert.deepEqual(read({ ...policy, 'x-ratelimit-remaining': '4', 'x-ratelimit-reset': '30' }).limits, [limit({ policy: 'fw', quota: 20, window: 60 * S, remaining: 4, reset: 30 * S })]);
  assert.deepEqual(read({ ...policy, 'x-ratelimit-limit': '20', 'x-ratelimit-remaining': '4' }).limits, [limit({ policy: 'fw', quota: 20, window: 60 * S, remaining: 4 })]);
  assert.deepEqual(read({ ...policy, 'x-ratelimit-remaining': '50' }).limits, [limit({ policy: 'fw', quota: 20, window: 60 * S, remaining: 20 })]);
});

test('fields split over several lines combine as one list', () => {
  const headers = new Headers();
  headers.append('RateLimit-Policy', '"a";q=10;w=1');
  headers.append('RateLimit-Policy', '"b";q=100;w=60');
  headers.append('RateLimit', '"b";r=7;t=3');
  assert.deepEqual(read(headers).limits, [
    limit({ policy: 'a', quota: 10, window: 1 * S }),
    limit({ policy: 'b', quota: 100, window: 60 * S, remaining: 7, reset: 3 * S }),
  ]);
  // Node's IncomingHttpHeaders gives repeated fields as arrays.
  assert.equal(read({ 'ratelimit-policy': ['"a";q=10;w=1', '"b";q=100;w=60'] }).limits.length, 2);
});

test('a one-value field sent twice alike (a gateway and its origin) reads as one', () => {
  const headers = new Headers();
  for (const [name, value] of [['X-RateLimit-Limit', '60'], ['X-RateLimit-Remaining', '0'], ['Retry-After', 'Sat, 21 Nov 2026 13:00:05 GMT'], ['Date', DATE]]) {
    headers.append(name, value);
    headers.append(name, value);
  }
  const seen = read(headers);
  assert.deepEqual(seen.limits, [limit({ policy: 'default', quota: 60, remaining: 0 })]);
  assert.equal(seen.retryAfter, 5 * S, 'an HTTP-date has a comma of its own');
  assert.equal(read({ 'retry-after': ['7', '7', '7'] }).retryAfter, 7 * S);
  const age = new Headers([['Age', '3'], ['Age', '3'], ['Retry-After', '5']]);
  assert.deepEqual([read(age).cached, read(age).retryAfter], [true, 2 * S], 'Age arrives as "3, 3"');
  assert.equal(read({ 'x-ratelimit-limit': '5', 'x-ratelimit-resource': 'Monday' }).limits[0].policy, 'Monday', "a day's name with no date after it is itself");
});

test('differing copies of a one-value field are two limiters: the strictest readable copy holds', () => {
  assert.equal(read({ 'retry-after': ['30', '60'] }).retryAfter, 60 * S);
  assert.equal(read({ 'retry-after': ['60', 'soon', '30'] }).retryAfter, 60 * S, 'an unreadable copy is skipped');
  assert.equal(read({ 'retry-after': ['Sat, 21 Nov 2026 13:00:05 GMT', '2'], date: DATE }).retryAfter, 5 * S, 'a date keeps its comma');
  assert.equal(read({ 'retry-after': ['2', 'Saturday, 21-Nov-26 13:00:09 GMT'], date: DATE }).retryAfter, 9 * S);
  assert.equal(read({ 'retry-after': ['zzz', 'later'] }).retryAfter, undefined);
  assert.equal(read({ 'retry-after': ['Sat Nov 21 13:00:09 2026', '2'], date: DATE }).retryAfter, 9 * S, 'asctime has no comma to keep');
  assert.equal(read({ 'retry-after': ['soon Mon', '7'] }).retryAfter, 7 * S, 'only a copy that is a day name takes the next');
  assert.deepEqual(read({ 'x-ratelimit-limit': ['60', '600'], 'x-ratelimit-remaining': ['50', '5'], 'x-ratelimit-reset': ['3', '40'] }).limits, [
    limit({ policy: 'default', quota: 60, remaining: 5, reset: 40 * S }),
  ]);
  assert.equal(read({ 'x-ratelimit-limit': '100', 'x-ratelimit-used': ['10', '90'] }).limits[0].remaining, 10, 'the larger used');
  assert.equal(read({ 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '9', 'x-ratelimit-reset-after': ['1.5', '0.5'] }).limits[0].reset, 1500);
  const draft6 = read({ 'ratelimit-limit': '100', 'ratelimit-remaining': ['80', '3'], 'ratelimit-reset': ['10', '2'] });
  assert.deepEqual([draft6.limits[0].remaining, draft6.limits[0].reset], [3, 10 * S]);
  // Date and Age describe the response: only identical copies are read.
  assert.equal(read({ date: [DATE, 'Sat, 21 Nov 2026 13:00:09 GMT'] }).date, undefined);
  assert.equal(read({ age: ['3', '4'], 'retry-after': '5' }).cached, undefined);
});

test('nothing to read: no headers, null, a cached response', () => {
  assert.deepEqual(read(new Headers()), { dialect: null, limits: [] });
  assert.deepEqual(read(null), { dialect: null, limits: [] });
  assert.deepEqual(read(undefined), { dialect: null, limits: [] });
  const cached = read({ age: '12', 'retry-after': '5', ratelimit: '"a";r=0;t=5' });
  assert.deepEqual(cached, { dialect: null, limits: [], cached: true, retryAfter: 0 }, 'its wait is over');
  assert.equal(read({ age: '0', ratelimit: '"a";r=0;t=5' }).limits.length, 1);
  assert.deepEqual(read({ age: '3', ratelimit: '"a";r=0;t=5' }), { dialect: null, limits: [], cached: true }, 'no Retry-After to shorten');
});

test('a cached response keeps its Retry-After, less its time in the cache', () => {
  assert.equal(read({ age: '2', 'retry-after': '5' }).retryAfter, 3 * S);
  // An HTTP-date against the origin's Date: counted from when it answered.
  assert.equal(read({ age: '2', date: DATE, 'retry-after': 'Sat, 21 Nov 2026 13:00:10 GMT' }).retryAfter, 8 * S);
  // Without a Date it is read against our clock, which the time in the cache does not concern.
  assert.equal(read({ age: '2', 'retry-after': 'Sat, 21 Nov 2026 13:00:10 GMT' }).retryAfter, 8 * S);
  // So is a mix of copies with such a date: the cache's time is not taken off (the longer wait holds).
  assert.equal(read({ age: '2', 'retry-after': ['5', 'Sat, 21 Nov 2026 13:00:10 GMT'] }).retryAfter, 8 * S);
  assert.equal(read({ age: 'soon', 'retry-after': '5', ratelimit: '"a";r=0;t=5' }).limits.length, 1, 'an unreadable Age is none');
  // Age is digits only (RFC 9111 §5.1): what Number() would also take is no Age either.
  for (const age of ['0.5', '0x10', '1e3', 'Infinity', '-1']) {
    assert.equal(read({ age, ratelimit: '"a";r=0;t=5' }).limits.length, 1, age);
  }
});

// ---- malformed and hostile ----

test('a malformed item is ignored and its siblings are kept', () => {
  const cases = {
    '"neg";q=-1;w=1': 'negative quota',
    '"dec";q=1.5;w=1': 'decimal quota',
    '"str";q="10";w=1': 'string quota',
    '"none";w=1': 'no quota',
    '"bool";q=?1': 'boolean quota',
    '"pk";q=1;pk="abc"': 'pk not a byte sequence',
    '"qu";q=1;qu=7': 'qu not a string',
    '(1 2);q=1': 'an inner list',
    '12;q=1': 'an integer name (draft-10 wants a string)',
  };
  for (const [item, why] of Object.entries(cases)) {
    const seen = read({ 'ratelimit-policy': `${item}, "ok";q=5;w=1` });
    assert.deepEqual(seen.limits, [limit({ policy: 'ok', quota: 5, window: 1 * S })], why);
  }
  // w must be positive: a zero window is no window.
  assert.deepEqual(read({ 'ratelimit-policy': '"z";q=5;w=0' }).limits, [limit({ policy: 'z', quota: 5 })]);
  // A service limit with neither r nor t, or a negative one, says nothing; nor one without a name or with a bad pk.
  assert.deepEqual(read({ ratelimit: '"a", "b";r=-1, "c";t=2' }).limits, [limit({ policy: 'c', reset: 2 * S })]);
  assert.deepEqual(read({ ratelimit: '12;r=1, (1 2);r=1, "pk";r=1;pk="abc", "ok";r=5' }).limits, [limit({ policy: 'ok', remaining: 5 })]);
});

test('draft-6 and draft-7: each field alone, and malformed policies', () => {
  const cases = [
    [{ 'ratelimit-limit': '100' }, [limit({ policy: 'default', quota: 100 })]],
    [{ 'ratelimit-remaining': '5' }, [limit({ policy: 'default', remaining: 5 })]],
    [{ 'ratelimit-reset': '30' }, [limit({ policy: 'default', reset: 30 * S })]],
    [{ ratelimit: 'remaining=5' }, [limit({ policy: 'default', remaining: 5 })]],
    [{ 'ratelimit-policy': '100;w=60', 'ratelimit-limit': '100', 'ratelimit-remaining': '5' }, [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 5 })]],
    // Policies need an Integer quota and a positive Integer window.
    [{ 'ratelimit-policy': '1.5;w=60, -1;w=60, "x";w=60, 100, 100;w=0, 100;w=-5, 100;w=1.5, 50;w=60' }, [limit({ policy: 'w=60', quota: 50, window: 60 * S })]],
    // The expiring limit's own window: only an Integer limit with a positive one makes a policy.
    [{ 'ratelimit-limit': '1.5;w=60', 'ratelimit-remaining': '5' }, [limit({ policy: 'default', remaining: 5 })]],
    [{ 'ratelimit-limit': '10;w=0', 'ratelimit-remaining': '5' }, [limit({ policy: 'default', quota: 10, remaining: 5 })]],
    [{ 'ratelimit-policy': '10;w=1', 'ratelimit-limit': '100;w=60', 'ratelimit-remaining': '5' }, [limit({ policy: 'w=1', quota: 10, window: 1 * S }), limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 5 })]],
    // A policy of that quota elsewhere is the expiring limit: the window given beside it makes no second one.
    [{ 'ratelimit-policy': '100;w=3600', 'ratelimit-limit': '100;w=60', 'ratelimit-remaining': '5' }, [limit({ policy: 'w=3600', quota: 100, window: 3600 * S, remaining: 5 })]],
  ];
  for (const [headers, limits] of cases) assert.deepEqual(read(headers).limits, limits, JSON.stringify(headers));
});

test('a field that is not a structured field is ignored whole, never thrown', () => {
  const broken = [
    '"a";q=10, ', // trailing comma
    '"a;q=10', // unterminated string
    '"a";q=10,,"b";q=1', // empty member
    '"a";Q=10', // keys are lowercase
    '"a";q=1234567890123456', // 16 digits
    '"a";q=10 "b";q=1', // no comma
    '"\u00e9";q=10', // non-ASCII string
    '"a";pk=:not base64!:;q=1',
    '"a";q=1;d=@1700000000;w=1', // a Date parameter followed by more: structured-headers 2.1.0 rejects it (see docs/client.md)
  ];
  for (const value of broken) {
    assert.deepEqual(read({ 'ratelimit-policy': value, ratelimit: value }).limits, [], value);
  }
});

test('absurd values are clamped to BOUNDS', () => {
  const seen = read({
    'ratelimit-policy': '"huge";q=999999999999999;w=999999999999999',
    ratelimit: '"huge";r=999999999999999;t=999999999999999',
    'retry-after': '99999999999999999999',
  });
  assert.deepEqual(seen.limits, [
    limit({ policy: 'huge', quota: BOUNDS.maxQuota, window: BOUNDS.maxWindow, remaining: BOUNDS.maxQuota, reset: BOUNDS.maxWait }),
  ]);
  assert.equal(seen.retryAfter, BOUNDS.maxWait);
  // Remaining above the quota is the quota.
  assert.equal(read({ 'ratelimit-policy': '"a";q=10', ratelimit: '"a";r=50' }).limits[0].remaining, 10);
  assert.equal(read({ 'ratelimit-policy': '"a";q=10', ratelimit: '"a";t=5, "a";r=50' }).limits[0].remaining, 10, 'reported twice');
  // An epoch reset an hour past the bound.
  assert.equal(read({ date: DATE, 'x-ratelimit-reset': String(SERVER_NOW / 1000 + 90_000) }).limits[0].reset, BOUNDS.maxWait);
  // Legacy numbers of any length are clamped, not dropped; two infinite ones leave remaining unknown.
  const x = read({ 'x-ratelimit-limit': '9'.repeat(17), 'x-ratelimit-remaining': '9'.repeat(400), 'x-ratelimit-reset-after': '9'.repeat(30) });
  assert.deepEqual(x.limits, [limit({ policy: 'default', quota: BOUNDS.maxQuota, remaining: BOUNDS.maxQuota, reset: BOUNDS.maxWait })]);
  const used = read({ 'x-ratelimit-limit': '9'.repeat(400), 'x-ratelimit-used': '9'.repeat(400) }).limits[0];
  assert.deepEqual([used.quota, used.remaining], [BOUNDS.maxQuota, undefined]);
});

test('Retry-After and X-RateLimit values that are not numbers or dates are ignored', () => {
  const badRetryAfter = ['-5', 'soon', '', '1e3', '0x10', 'Fri, 31 Feb 2026 07:28:00 GMT', 'Sat, 21 Nov 2026 25:28:00 GMT',
    'Sat, 21 Nov 2026 13:00:05 UTC', 'Fri,21 Nov 2026 13:00:05 GMT', 'Funday, 21-Nov-26 13:00:05 GMT', 'x'.repeat(10_000)];
  for (const value of badRetryAfter) assert.equal(read({ date: DATE, 'retry-after': value }).retryAfter, undefined, value);
  for (const value of ['abc', '-1', '1e5', 'Infinity', 'NaN', '12abc', ' ']) {
    assert.equal(read({ 'x-ratelimit-remaining': value, 'x-ratelimit-limit': value }).dialect, null, value);
  }
  // A Date that is not a date gives no skew, and absolute times fall back to the client clock.
  const seen = read({ date: 'yesterday', 'retry-after': 'Sat, 21 Nov 2026 13:00:05 GMT' });
  assert.equal(seen.skew, undefined);
  assert.equal(seen.retryAfter, 3 * S);
});

test('hostile sizes: long fields are skipped unread, item counts and names are capped', () => {
  const long = `"a";q=1, ${'"b";q=1, '.repeat(2000)}"c";q=1`;
  const started = performance.now();
  assert.deepEqual(read({ 'ratelimit-policy': long }).limits, []);
  assert.ok(performance.now() - started < 50, 'an over-long field is not parsed');
  const many = Array.from({ length: 100 }, (_, i) => `"p${i}";q=1`).join(', ');
  assert.equal(read({ 'ratelimit-policy': many }).limits.length, BOUNDS.maxItems);
  const longName = `"${'n'.repeat(BOUNDS.maxNameLength + 1)}";q=1, "short";q=1`;
  assert.deepEqual(read({ 'ratelimit-policy': longName }).limits.map((l) => l.policy), ['short']);
  // Retry-After as well: a 9,000-digit delay is not read as a day.
  assert.equal(read({ 'retry-after': '9'.repeat(BOUNDS.maxFieldLength + 1) }).retryAfter, undefined);
  // Each bound itself is within: a field of maxFieldLength, names and units of maxNameLength.
  assert.equal(read({ 'retry-after': `${'0'.repeat(BOUNDS.maxFieldLength - 1)}5` }).retryAfter, 5 * S);
  const [name, longer] = ['n'.repeat(BOUNDS.maxNameLength), 'n'.repeat(BOUNDS.maxNameLength + 1)];
  assert.deepEqual(read({ 'ratelimit-policy': `"${name}";q=1` }).limits.map((l) => l.policy), [name]);
  assert.deepEqual(read({ 'ratelimit-policy': `"a";q=1;qu="${name}", "b";q=1;qu="${longer}"` }).limits.map((l) => [l.policy, l.unit]), [['a', name]]);
  assert.equal(read({ 'x-ratelimit-limit': '5', 'x-ratelimit-resource': name }).limits[0].policy, name);
  assert.equal(read({ 'x-ratelimit-limit': '5', 'x-ratelimit-resource': longer }).limits[0].policy, 'default');
});

test('a reset number is delta seconds below 1e9, epoch seconds from it, epoch milliseconds from 1e12', () => {
  const reset = (value) => read({ date: DATE, 'x-ratelimit-reset': value }).limits[0].reset;
  assert.equal(reset('999999999'), BOUNDS.maxWait, '31 years from now');
  assert.equal(reset('1000000000'), 0, '2001-09-09');
  assert.equal(reset('999999999999'), BOUNDS.maxWait, 'the year 33658');
  assert.equal(reset('1000000000000'), 0, '2001-09-09');
});

test('names that are JavaScript specials are only names', () => {
  const seen = read({ 'ratelimit-policy': '"__proto__";q=1;w=1, "constructor";q=2;w=1', ratelimit: '"__proto__";r=0;t=1' });
  assert.deepEqual(seen.limits.map((l) => [l.policy, l.quota, l.remaining]), [['__proto__', 1, 0], ['constructor', 2, undefined]]);
  assert.equal({}.polluted, undefined);
});

test('duplicate items: the first policy wins, service limits of one name give the least r and the latest t; duplicate parameters, the last (RFC 9651)', () => {
  const seen = read({ 'ratelimit-policy': '"a";q=10;w=1, "a";q=99;w=1', ratelimit: '"a";r=3, "a";r=9' });
  assert.deepEqual(seen.limits, [limit({ policy: 'a', quota: 10, window: 1 * S, remaining: 3 })]);
  const stacked = read({ 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";r=50;t=5, "a";r=0;t=30, "a";t=40' });
  assert.deepEqual(stacked.limits, [limit({ policy: 'a', quota: 100, window: 60 * S, remaining: 0, reset: 40 * S })]);
  assert.equal(read({ 'ratelimit-policy': '"a";q=100;w=60', ratelimit: '"a";t=30, "a";t=5' }).limits[0].reset, 30 * S, 't alone, twice');
  const unlisted = read({ ratelimit: '"b";r=0;t=30, "b";r=50;t=5' });
  assert.deepEqual(unlisted.limits, [limit({ policy: 'b', remaining: 0, reset: 30 * S })]);
  assert.equal(read({ 'ratelimit-policy': '"a";q=10;q=20' }).limits[0].quota, 20);
  // Legacy policies are named by their window: two of one window are one policy, the first,
  // with or without state (alone they were both kept, and the pacer took the last).
  const lone = read({ 'ratelimit-policy': '100;w=60, 50;w=60, 10;w=1' });
  assert.deepEqual(lone.limits, [limit({ policy: 'w=60', quota: 100, window: 60 * S }), limit({ policy: 'w=1', quota: 10, window: 1 * S })]);
  const stated = read({ 'ratelimit-policy': '100;w=60, 50;w=60', 'ratelimit-remaining': '5', 'ratelimit-reset': '8' });
  assert.deepEqual(stated.limits, [limit({ policy: 'w=60', quota: 100, window: 60 * S, remaining: 5, reset: 8 * S })]);
  assert.deepEqual(read({ 'ratelimit-limit': '100, 100;w=60, 50;w=60' }).limits, [limit({ policy: 'w=60', quota: 100, window: 60 * S })]);
});

test('partition keys keep policies of the same name apart', () => {
  const seen = read({
    'ratelimit-policy': '"user";q=10;w=1;pk=:YQ==:, "user";q=10;w=1;pk=:Yg==:',
    ratelimit: '"user";r=4;pk=:Yg==:',
  });
  assert.deepEqual(seen.limits, [
    limit({ policy: 'user', partitionKey: 'YQ==', quota: 10, window: 1 * S }),
    limit({ policy: 'user', partitionKey: 'Yg==', quota: 10, window: 1 * S, remaining: 4 }),
  ]);
  // A service limit of another name, or of another key, is a limit of its own.
  assert.deepEqual(read({ 'ratelimit-policy': '"user";q=10;w=1;pk=:YQ==:', ratelimit: '"user";r=4;pk=:Yg==:, "other";r=1' }).limits, [
    limit({ policy: 'user', partitionKey: 'YQ==', quota: 10, window: 1 * S }),
    limit({ policy: 'user', partitionKey: 'Yg==', remaining: 4 }),
    limit({ policy: 'other', remaining: 1 }),
  ]);
  // An item with a partition key joins the policy with that key before one with none.
  const mixed = read({ 'ratelimit-policy': '"a";q=10;w=60, "a";q=1000;w=60;pk=:eA==:', ratelimit: '"a";r=999;t=60;pk=:eA==:' });
  assert.deepEqual(mixed.limits, [
    limit({ policy: 'a', quota: 10, window: 60 * S }),
    limit({ policy: 'a', partitionKey: 'eA==', quota: 1000, window: 60 * S, remaining: 999, reset: 60 * S }),
  ]);
});

test('random fields (a seeded fuzz of every dialect): never thrown, every number within BOUNDS', () => {
  // A small deterministic generator (mulberry32), so a failure is reproducible.
  let seed = 0x5eed;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (items) => items[Math.floor(random() * items.length)];
  const number = () => pick(['0', '1', '42', '3600', '1795280400', '1795280400000', '999999999999999', '1e9', '-1', '1.5', '0x10']);
  const name = () => pick(['"burst"', '"daily"', '"a"', '""', 'token', '"x;y"']);
  const items = (make) => Array.from({ length: 1 + Math.floor(random() * 3) }, make).join(pick([', ', ',', ' , ']));
  const date = () => pick(['Sat, 21 Nov 2026 13:00:05 GMT', 'Saturday, 21-Nov-26 13:00:05 GMT', 'Sat Nov 21 13:00:05 2026', 'Sat, 21 Nov 2026']);
  // Well-formed fields of every dialect, with extreme numbers...
  const fields = {
    'ratelimit-policy': () => items(() => `${name()};q=${number()};w=${number()}${pick(['', ';pk=:dXNlcjE=:', ';qu="requests"', ';qu="bytes"'])}`),
    ratelimit: () => pick([
      () => items(() => `${name()};r=${number()};t=${number()}`),
      () => `limit=${number()}, remaining=${number()}, reset=${number()}`,
    ])(),
    'ratelimit-limit': number,
    'ratelimit-remaining': number,
    'ratelimit-reset': number,
    'x-ratelimit-limit': number,
    'x-ratelimit-remaining': number,
    'x-ratelimit-reset': number,
    'x-ratelimit-used': number,
    'retry-after': () => pick([number, date])(),
    date,
  };
  // ...then mutated: characters inserted, deleted or replaced at random.
  const noise = ['"', ';', ',', '=', ':', '(', ')', '?1', ' ', '\t', '-', '.', '9', 'é', '\\'];
  const mutate = (text) => {
    for (let m = Math.floor(random() * 3); m > 0; m--) {
      const at = Math.floor(random() * (text.length + 1));
      const cut = Math.floor(random() * 3);
      text = text.slice(0, at) + (random() < 0.7 ? pick(noise) : '') + text.slice(at + cut);
    }
    return text;
  };
  const within = (value, bound) => value === undefined || (Number.isFinite(value) && value >= 0 && value <= bound);
  let parsed = 0;
  for (let run = 0; run < 5000; run++) {
    const headers = {};
    for (let field = 1 + Math.floor(random() * 4); field > 0; field--) {
      const [fieldName, make] = pick(Object.entries(fields));
      headers[fieldName] = random() < 0.5 ? make() : mutate(make());
    }
    const seen = read(headers);
    if (seen.limits.length > 0 || seen.retryAfter !== undefined) parsed++;
    assert.ok(within(seen.retryAfter, BOUNDS.maxWait), JSON.stringify(headers));
    for (const l of seen.limits) {
      const where = `${JSON.stringify(headers)} → ${JSON.stringify(l)}`;
      assert.ok(within(l.quota, BOUNDS.maxQuota) && within(l.remaining, BOUNDS.maxQuota), where);
      assert.ok(within(l.window, BOUNDS.maxWindow) && within(l.reset, BOUNDS.maxWait), where);
      assert.ok(typeof l.policy === 'string' && l.policy.length <= BOUNDS.maxNameLength, where);
    }
  }
  console.log(`${parsed} of 5000 random header sets read as limits or a Retry-After`);
  assert.ok(parsed >= 1500, `only ${parsed} of 5000 reached the parsers' output: the fuzz would prove little`);
});

test('complete: only a draft-10 RateLimit-Policy lists every policy that applies', () => {
  assert.equal(read({ 'ratelimit-policy': '"a";q=10;w=1', ratelimit: '"a";r=5' }).complete, true);
  assert.equal(read({ ratelimit: '"a";r=5' }).complete, undefined, 'RateLimit names only the policies of this request');
  assert.equal(read({ 'ratelimit-policy': '"a";q=10;w=1', ratelimit: '"b";r=5' }).complete, true, 'a RateLimit item beside the list');
  assert.equal(read({ 'ratelimit-policy': '"a";w=1' }).complete, undefined, 'an item without q is no policy');
  assert.equal(read({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '5' }).complete, undefined);
  assert.equal(read({ 'ratelimit-policy': '100;w=60', 'ratelimit-limit': '100', 'ratelimit-remaining': '5' }).complete, undefined, 'draft-06');
});
