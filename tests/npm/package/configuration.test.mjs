// Configurations: the builder, the JSON schema, and the core's rules with their codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bucket, BucketConfiguration, BandwidthBuilder, EdgeBucketError } from 'edgebucket';

const code = (c) => (e) => e instanceof EdgeBucketError && e.code === c;

test('the builder writes the core schema; durations in every form', () => {
  const config = BucketConfiguration.builder()
    .addLimit((l) => l.capacity(50).refillGreedy(10, '1s').id('burst'))
    .addLimit((l) => l.capacity(1000).refillIntervally(1000, { hours: 1 }))
    .addLimit(new BandwidthBuilder().capacity(7).refillGreedy(7, 250))
    .addLimit({ capacity: 3, refill: { kind: 'greedy', tokens: 3, period: '10 minutes' } })
    .addLimit((l) => l.capacity(400).refillIntervallyAlignedWithAdaptiveInitialTokens(400, '1h', new Date('2026-11-21T17:00:00Z')))
    .build();
  const periods = config.toJSON().bandwidths.map((b) => b.refill.period);
  assert.deepEqual(periods, ['1s', '1h', '250ms', '10m', '1h']);
  const aligned = config.toJSON().bandwidths[4].refill;
  assert.equal(aligned.firstRefillTime, '2026-11-21T17:00:00Z');
  assert.equal(aligned.adaptiveInitialTokens, true);
  assert.ok(BucketConfiguration.fromJSON(config.toJSON()).equals(config), 'round trip');
});

test('one duration parser: Rust humantime reads every form', () => {
  const period = (p) => BucketConfiguration.builder().addLimit((l) => l.capacity(1).refillGreedy(1, p)).build().toJSON().bandwidths[0].refill.period;
  assert.equal(period('1d'), '1day');
  assert.equal(period('1h 30m'), '1h 30m');
  assert.equal(period('1.5s'), '1s 500ms');
  assert.equal(period({ minutes: 1, seconds: 30 }), '1m 30s');
  assert.equal(period(60000), '1m');
});

test("rule violations keep the core's codes", () => {
  const build = (f) => () => BucketConfiguration.builder().addLimit(f).build();
  assert.throws(build((l) => l.capacity(0).refillGreedy(1, '1s')), code('NON_POSITIVE_CAPACITY'));
  assert.throws(build((l) => l.capacity(-5).refillGreedy(1, '1s')), code('NON_POSITIVE_CAPACITY'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(0, '1s')), code('NON_POSITIVE_REFILL_TOKENS'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, 0)), code('NON_POSITIVE_REFILL_PERIOD'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, -1)), code('INVALID_DURATION'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, NaN)), code('INVALID_DURATION'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, Infinity)), code('INVALID_DURATION'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, 1.5)), code('INVALID_DURATION'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, '1 fortnight')), code('INVALID_DURATION'));
  // A malformed object is a shape error of the whole configuration (serde), not a duration rule.
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, { weeks: 1 })), code('INVALID_CONFIGURATION'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, true)), { message: /^invalid configuration: invalid type: boolean `true`/ });
  // Not a plain object: serde would read a Date's (no) fields as a period of 0.
  for (const period of [new Date(), /1s/, new Map([['seconds', 1]])]) {
    assert.throws(build((l) => l.capacity(5).refillGreedy(1, period)), (e) => e.code === 'INVALID_CONFIGURATION' && /period/.test(e.message));
  }
  assert.throws(build((l) => l.capacity(5).refillGreedy(2, '1ns')), code('TOO_HIGH_REFILL_RATE'));
  // A missing field is a shape error of the schema (serde), reported as such.
  assert.throws(build((l) => l.capacity(5)), (e) => e.code === 'INVALID_CONFIGURATION' && /refill/.test(e.message));
  assert.throws(build((l) => l.refillGreedy(1, '1s')), (e) => e.code === 'INVALID_CONFIGURATION' && /capacity/.test(e.message));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, '1s').initialTokens(-1)), code('NEGATIVE_INITIAL_TOKENS'));
  assert.throws(() => BucketConfiguration.builder().build(), code('EMPTY_CONFIGURATION'));
  assert.throws(
    () => BucketConfiguration.builder().addLimit((l) => l.capacity(1).refillGreedy(1, '1s').id('x')).addLimit((l) => l.capacity(2).refillGreedy(1, '1s').id('x')).build(),
    code('DUPLICATE_BANDWIDTH_ID'),
  );
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 1, refill: { kind: 'greedy', tokens: 1, period: '1s' }, initalTokens: 1 }] }), code('INVALID_CONFIGURATION'));
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 1.5, refill: { kind: 'greedy', tokens: 1, period: '1s' } }] }), code('INVALID_CONFIGURATION'));
  assert.throws(build((l) => l.capacity(5).refillGreedy(1, { seconds: 1.5 })), code('INVALID_DURATION'));
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 1, refill: { kind: 'sometimes', tokens: 1, period: '1s' } }] }), code('INVALID_CONFIGURATION'));
  assert.throws(() => BucketConfiguration.fromJSON(null), code('INVALID_CONFIGURATION'));
  for (const bandwidths of [5, null, 'abc', { 0: 1 }]) {
    assert.throws(
      () => BucketConfiguration.fromJSON({ bandwidths }),
      (e) => e.code === 'INVALID_CONFIGURATION' && /bandwidths must be an array/.test(e.message) && !/TypeError/.test(e.message),
      JSON.stringify(bandwidths),
    );
  }
});

test('a field set to null reads as left out, as serde_json reads it', () => {
  const plain = { kind: 'intervallyAligned', tokens: 10, period: '1s', firstRefillTime: 0 };
  const refill = { ...plain, adaptiveInitialTokens: null };
  const withNulls = BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 10, refill, initialTokens: null, id: null }] });
  assert.ok(withNulls.equals(BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 10, refill: plain }] })));
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: null, refill: plain }] }), code('INVALID_CONFIGURATION'));
});

test('wrong types are INVALID_ARGUMENT at the call', () => {
  const l = new BandwidthBuilder();
  for (const bad of [1.5, NaN, Infinity, '5', null, undefined, {}]) {
    assert.throws(() => l.capacity(bad), code('INVALID_ARGUMENT'), String(bad));
    assert.throws(() => l.refillGreedy(bad, '1s'), code('INVALID_ARGUMENT'), String(bad));
    assert.throws(() => l.initialTokens(bad), code('INVALID_ARGUMENT'), String(bad));
  }
  assert.throws(() => l.id(5), code('INVALID_ARGUMENT'));
  assert.throws(() => BucketConfiguration.builder().addLimit(42), code('INVALID_ARGUMENT'));
  assert.throws(() => new BucketConfiguration({}), code('INVALID_ARGUMENT'));
  assert.throws(() => Bucket.builder().withConfiguration({}), code('INVALID_ARGUMENT'));
});

test('a count or a duration part that is no 64-bit integer is named, with its place and value', () => {
  const refill = { kind: 'greedy', tokens: 1, period: '1s' };
  const counts = [
    [{ capacity: 1.5, refill }, 'bandwidths[0].capacity must be a whole number, got 1.5'],
    [{ capacity: 2 ** 60, refill }, 'bandwidths[0].capacity is beyond 2^53 - 1, where numbers are not exact (pass a BigInt), got 1152921504606847000'],
    [{ capacity: 2n ** 64n, refill }, 'bandwidths[0].capacity is outside the 64-bit range, got 18446744073709551616'],
    [{ capacity: 5, refill: { ...refill, tokens: NaN } }, 'bandwidths[0].refill.tokens must be a whole number, got NaN'],
    [{ capacity: 5, refill, initialTokens: -(2n ** 63n) - 1n }, 'bandwidths[0].initialTokens is outside the 64-bit range, got -9223372036854775809'],
  ];
  for (const [bandwidth, message] of counts) {
    assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [bandwidth] }), { code: 'INVALID_CONFIGURATION', message: `invalid configuration: ${message}` });
  }
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 5, refill }, { capacity: 0.5, refill }] }), { message: /^invalid configuration: bandwidths\[1\]\.capacity must be a whole number/ });
  // The builder's BigInt is checked at the call, as an operation's argument is.
  const l = new BandwidthBuilder();
  assert.throws(() => l.capacity(2n ** 64n), { code: 'INVALID_ARGUMENT', message: 'capacity 18446744073709551616 is outside the 64-bit range' });
  assert.throws(() => l.initialTokens(-(2n ** 64n)), { code: 'INVALID_ARGUMENT', message: /^initialTokens -18446744073709551616 is outside the 64-bit range/ });
  // Duration parts: INVALID_DURATION, as a bad scalar period is, also inside a configuration.
  const parts = [
    [{ minutes: -1 }, '"{"minutes":-1}": minutes cannot be negative, got -1'],
    [{ seconds: 1.5 }, '"{"seconds":1.5}": seconds must be a whole number, got 1.5'],
    [{ nanoseconds: 2 ** 53 }, '"{"nanoseconds":9007199254740992}": nanoseconds is beyond 2^53 - 1, where numbers are not exact (pass a BigInt), got 9007199254740992'],
    [{ seconds: 1, nanoseconds: 2n ** 64n }, '"{"seconds":1,"nanoseconds":18446744073709551616}": nanoseconds is outside the 64-bit range, got 18446744073709551616'],
    [{ hours: -1n }, '"{"hours":-1}": hours cannot be negative, got -1'],
  ];
  for (const [period, message] of parts) {
    assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 5, refill: { ...refill, period } }] }), { code: 'INVALID_DURATION', message: `invalid duration ${message}` });
  }
  // What is exact still passes: a BigInt part beyond 2^53 (104 days in nanoseconds).
  const long = BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 5, refill: { ...refill, period: { nanoseconds: 2n ** 53n } } }] });
  assert.equal(long.toJSON().bandwidths[0].refill.period, '3months 12days 22h 19m 11s 254ms 740us 992ns');
});

test('BigInt capacities beyond 2^53 survive the schema both ways', () => {
  const config = BucketConfiguration.builder().addLimit((l) => l.capacity(2n ** 62n).refillGreedy(1, '1s')).build();
  assert.equal(config.toJSON().bandwidths[0].capacity, 2n ** 62n);
  assert.equal(Bucket.builder().withConfiguration(config).build().getAvailableTokens(), 2n ** 62n);
});

test('an RFC 3339 first refill may carry a numeric offset', () => {
  const aligned = (at) => BucketConfiguration.builder().addLimit((l) => l.capacity(10).refillIntervallyAligned(10, '1h', at)).build();
  const utc = aligned('2026-01-01T00:00:00Z');
  for (const at of ['2026-01-01T01:00:00+01:00', '2025-12-31T19:00:00-05:00', '2026-01-01t00:00:00z', Date.UTC(2026, 0, 1)]) {
    assert.ok(aligned(at).equals(utc), String(at));
  }
  assert.throws(() => aligned('2026-01-01T00:00:00+25:00'), code('INVALID_INSTANT'));
  assert.throws(() => aligned(new Date(NaN)), code('INVALID_INSTANT'));
});

test('toJSON gives numbers while exact even beside a BigInt, and round-trips', () => {
  const config = BucketConfiguration.builder()
    .addLimit((l) => l.capacity(10).refillGreedy(1, '1s').initialTokens(3))
    .addLimit((l) => l.capacity(2n ** 60n).refillGreedy(2n ** 53n, '200d'))
    .build();
  const [small, big] = config.toJSON().bandwidths;
  assert.deepEqual([small.capacity, small.refill.tokens, small.initialTokens], [10, 1, 3]);
  assert.deepEqual([big.capacity, big.refill.tokens], [2n ** 60n, 2n ** 53n], '2^53 itself is past the safe range');
  assert.ok(BucketConfiguration.fromJSON(config.toJSON()).equals(config));
});

test("a caller's getter that throws is an EdgeBucketError, read in JS: wasm stays sound", () => {
  // Thrown inside wasm, each left wasm's stack and borrows behind; about 1,300 broke every call.
  const period = { get seconds() { throw new Error('getter failed'); } };
  const capacity = { bandwidths: [{ get capacity() { throw new Error('no capacity'); }, refill: { kind: 'greedy', tokens: 1, period: '1s' } }] };
  const proxy = new Proxy({}, { ownKeys() { throw new Error('trap'); } });
  const bucket = Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(10, '1s')).build();
  for (let i = 0; i < 3000; i++) {
    assert.throws(() => BucketConfiguration.builder().addLimit((l) => l.capacity(1).refillGreedy(1, period)).build(), {
      code: 'INVALID_CONFIGURATION',
      message: 'invalid configuration: reading it threw getter failed',
    });
    assert.throws(() => BucketConfiguration.fromJSON(capacity), { code: 'INVALID_CONFIGURATION' });
    assert.throws(() => BucketConfiguration.fromJSON(proxy), { code: 'INVALID_CONFIGURATION' });
  }
  assert.equal(bucket.tryConsume(1), true);
  assert.equal(bucket.getAvailableTokens(), 9);
  const cyclic = { bandwidths: [] };
  cyclic.bandwidths.push(cyclic);
  assert.throws(() => BucketConfiguration.fromJSON(cyclic), { code: 'INVALID_CONFIGURATION', message: /missing field `capacity`/ });
});

test('bytes and functions reach wasm only as stand-ins: their getters and traps run in JS or not at all', async () => {
  // Passed as they were, serde read a typed array's fields and a function's `name` inside wasm:
  // a throw there escaped without a code, and about 1,500 of them broke every later call.
  const refill = { kind: 'greedy', tokens: 1, period: '1s' };
  const namedBadly = () => {
    const fn = function () {};
    Object.defineProperty(fn, 'name', { get() { throw new Error('mine: name'); } });
    return fn;
  };
  class Bandwidth extends Uint8Array {
    get capacity() { throw new Error('mine: capacity'); }
  }
  class View extends DataView {
    get [Symbol.toStringTag]() { throw new Error('mine: toStringTag'); }
  }
  const claimsBytes = new Proxy({ ...refill }, {
    getPrototypeOf: () => ArrayBuffer.prototype,
    get(target, name) {
      if (name === 'kind') throw new Error('mine: trap');
      return target[name];
    },
  });
  const cases = [
    [() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 5, refill: claimsBytes }] }), 'invalid configuration: reading it threw mine: trap'],
    [() => BucketConfiguration.fromJSON({ bandwidths: [new Bandwidth(1)] }), 'invalid configuration: reading it threw mine: capacity'],
    [() => BucketConfiguration.fromJSON({ bandwidths: [new Uint8Array(3)] }), 'invalid configuration: missing field `capacity`'],
    [() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: new View(new ArrayBuffer(1)), refill }] }), 'invalid configuration: invalid type: byte array, expected i64'],
    [() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: namedBadly(), refill }] }), 'invalid configuration: invalid type: JsValue(Function), expected i64'],
    [() => BucketConfiguration.builder().addLimit((l) => l.capacity(1).refillGreedy(1, namedBadly())).build(), /^invalid configuration: invalid type: JsValue\(Function\), expected a duration/],
  ];
  const bucket = Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(10, '1s')).build();
  for (let i = 0; i < 2000; i++) {
    for (const [make, message] of cases) assert.throws(make, { name: 'EdgeBucketError', code: 'INVALID_CONFIGURATION', message });
    await assert.rejects(bucket.asScheduler().tryConsume(1, namedBadly()), { name: 'EdgeBucketError', code: 'INVALID_DURATION' });
  }
  assert.equal(bucket.tryConsume(1), true);
  assert.equal(bucket.getAvailableTokens(), 9);
  // A typed array where a struct belongs is read as any object is: its misspelt fields too.
  const misspelt = Object.assign(new Uint8Array(0), { capacity: 5, refill, initalTokens: 3 });
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [misspelt] }), { code: 'INVALID_CONFIGURATION', message: /unknown field `initalTokens`/ });
});

test('a configuration is read as serde reads it: fields by name, inherited ones too; unknown fields only as present', () => {
  const refill = { kind: 'greedy', tokens: 1, period: '1s' };
  class Limit {
    get capacity() { return 10; }
    get refill() { return refill; }
  }
  const hidden = { refill };
  Object.defineProperty(hidden, 'capacity', { value: 10, enumerable: false });
  for (const bandwidth of [new Limit(), Object.create({ capacity: 10, refill }), hidden]) {
    const config = BucketConfiguration.fromJSON({ bandwidths: [bandwidth] });
    assert.deepEqual(config.toJSON(), { bandwidths: [{ capacity: 10, refill: { kind: 'greedy', tokens: 1, period: '1s' } }] });
  }
  // What the core never reads is never copied (a large or deeply shared object there would cost
  // its every path): an unknown field's contents, or an object where a number belongs.
  const reads = [];
  const watched = (target) => new Proxy(target, {
    get: (t, name) => (reads.push(name), t[name]),
    ownKeys: (t) => (reads.push('ownKeys'), Reflect.ownKeys(t)),
  });
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 1, refill, junk: watched({ a: {} }) }] }), { message: /unknown field `junk`/ });
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: watched([1, 2]), refill }] }), { code: 'INVALID_CONFIGURATION' });
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 1, refill }], junk: watched([]) }), { message: /unknown field `junk`/ });
  assert.deepEqual(reads, []);
  assert.throws(() => BucketConfiguration.fromJSON({ bandwidths: [[10, refill]] }), { message: 'invalid configuration: missing field `capacity`' });
  // Names every object inherits are unknown fields too.
  const misspelt = [
    { bandwidths: [{ capacity: 1, refill: { ...refill, toString: 1 } }] },
    { bandwidths: [{ capacity: 1, refill, constructor: 'x' }] },
    { bandwidths: [{ capacity: 1, refill }], valueOf: 0 },
    JSON.parse('{ "bandwidths": [{ "capacity": 2, "refill": { "kind": "greedy", "tokens": 1, "period": "1s" }, "__proto__": { "initialTokens": 0 } }] }'),
  ];
  for (const json of misspelt) {
    assert.throws(() => BucketConfiguration.fromJSON(json), { code: 'INVALID_CONFIGURATION', message: /unknown field `(toString|constructor|valueOf|__proto__)`/ });
  }
});

test('equals is false for anything but a configuration, primitives and null included, without throwing', () => {
  // Found by mutation testing: the brand check (`#raw in value`) throws a TypeError on a primitive.
  const config = BucketConfiguration.builder().addLimit((l) => l.capacity(1).refillGreedy(1, '1s')).build();
  for (const other of [null, undefined, 1, 'x', true, 1n, Symbol('x')]) assert.equal(config.equals(other), false, String(other));
  assert.equal(config.equals(BucketConfiguration.fromJSON(config.toJSON())), true);
});

test('equals compares every part of every limit', () => {
  // Found by mutation testing of the bindings: no test compared two different configurations.
  const limit = { capacity: 10, refill: { kind: 'greedy', tokens: 10, period: '1s' }, initialTokens: 5, id: 'a' };
  const of = (...bandwidths) => BucketConfiguration.fromJSON({ bandwidths });
  const base = of(limit);
  assert.equal(base.equals(of({ ...limit })), true);
  const changed = [
    { ...limit, capacity: 11 },
    { ...limit, refill: { ...limit.refill, kind: 'intervally' } },
    { ...limit, refill: { ...limit.refill, tokens: 9 } },
    { ...limit, refill: { ...limit.refill, period: '2s' } },
    { ...limit, initialTokens: 6 },
    { ...limit, id: 'b' },
  ];
  for (const other of changed) assert.equal(base.equals(of(other)), false, JSON.stringify(other));
  assert.equal(base.equals(of(limit, { ...limit, id: 'b' })), false, 'a limit more');
});

test('a missing bandwidth or refill is a shape error from the schema, not a TypeError read in JS', () => {
  const cases = [
    [undefined, 'expected struct ConfigurationSpec'],
    [{ bandwidths: [null] }, 'expected struct BandwidthSpec'],
    [{ bandwidths: [{ capacity: 1, refill: null }] }, 'expected struct RefillSpec'],
  ];
  for (const [spec, expected] of cases) {
    assert.throws(() => BucketConfiguration.fromJSON(spec), { code: 'INVALID_CONFIGURATION', message: `invalid configuration: invalid type: unit value, ${expected}` });
  }
  assert.throws(() => BucketConfiguration.builder().addLimit(null), { code: 'INVALID_ARGUMENT', message: /got null$/ });
  assert.throws(() => BucketConfiguration.builder().addLimit(() => null), { code: 'INVALID_ARGUMENT', message: /got null$/ });
});
