// BucketStore: keys, suppliers, expiry, eviction, version replacement, bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BucketStore, BucketConfiguration, Bucket, EdgeBucketError } from 'edgebucket';

const MS = 1_000_000;
const SEC = 1000 * MS;
const limit = (capacity, perSecond, extra = (l) => l) =>
  BucketConfiguration.builder().addLimit((l) => extra(l.capacity(capacity).refillGreedy(perSecond, '1s'))).build();

function manual(options) {
  const clock = { t: 0 };
  return { store: new BucketStore({ clock: () => clock.t, ...options }), clock };
}

test('each key has its own bucket, exactly like a standalone Bucket', () => {
  const { store, clock } = manual({ configuration: limit(5, 5) });
  const twin = Bucket.builder().withConfiguration(limit(5, 5)).withCustomTimeMeter(() => clock.t).build();
  for (const [t, n] of [[0, 3], [0, 3], [100, 1], [250, 2], [900, 5], [2000, 4], [2000, 2]]) {
    clock.t = t * MS;
    assert.deepEqual(store.tryConsumeAndReturnRemaining('alice', n), twin.tryConsumeAndReturnRemaining(n), `at ${t} ms`);
    assert.deepEqual(store.estimateAbilityToConsume('alice', 1), twin.estimateAbilityToConsume(1));
  }
  assert.equal(store.tryConsume('bob', 5), true, 'bob is untouched by alice');
  assert.equal(store.tryConsume('bob', 1), false);
  assert.equal(store.getAvailableTokens('carol'), 5);
  assert.equal(store.size, 3);
});

test('keys are UTF-8 bytes: strings and Uint8Arrays meet', () => {
  const { store } = manual({ configuration: limit(2, 1) });
  store.tryConsume('héllo', 1);
  assert.equal(store.getAvailableTokens(new TextEncoder().encode('héllo')), 1);
  assert.equal(store.getAvailableTokens('hello'), 2, 'a different key');
  assert.equal(store.tryConsume('', 2), true, 'the empty key is a key');
  assert.ok(store.has('héllo') && store.delete('héllo') && !store.has('héllo') && !store.delete('héllo'));
});

test('the empty key, as a string or as empty bytes, is one key that is held and deleted', () => {
  const { store } = manual({ configuration: limit(3, 1) });
  assert.equal(store.has(''), false);
  assert.equal(store.tryConsume('', 1), true);
  assert.equal(store.tryConsume(new Uint8Array(0), 1), true, 'the same bucket');
  assert.equal(store.getAvailableTokens(new Uint8Array(new ArrayBuffer(8), 8)), 1, 'an empty view at the end of a buffer too');
  assert.deepEqual([store.has(''), store.has(new Uint8Array(0)), store.size], [true, true, 1]);
  assert.equal(store.delete(new Uint8Array(0)), true);
  assert.deepEqual([store.has(''), store.delete(''), store.size], [false, false, 0]);
});

test("a byte key is its bytes, whatever its own properties say; a look-alike is refused", () => {
  const { store } = manual({ configuration: limit(2, 1) });
  class Short extends Uint8Array {
    get length() { return 1; }
  }
  assert.equal(store.tryConsume(new Short([7, 8, 9]), 1), true);
  assert.ok(store.has(new Uint8Array([7, 8, 9])) && !store.has(new Uint8Array([7])));
  const { proxy, revoke } = Proxy.revocable(new Uint8Array([1]), {});
  const fn = Proxy.revocable(() => {}, {});
  revoke();
  fn.revoke();
  const detached = new Uint8Array(new ArrayBuffer(4));
  structuredClone(detached.buffer, { transfer: [detached.buffer] });
  const lookAlikes = [new Proxy(new Uint8Array([1]), {}), Object.create(Uint8Array.prototype), proxy, fn.proxy, detached];
  for (const key of lookAlikes) {
    assert.throws(() => store.tryConsume(key, 1), { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' });
    assert.throws(() => store.has(key), { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' });
  }
  assert.equal(store.size, 1);
  assert.equal(store.has(''), false, 'a detached array is not the empty key');
  assert.throws(() => store.configure({ configuration: proxy }), { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' });
});

test('string keys of every length and script are their UTF-8 bytes', () => {
  const { store } = manual({ configuration: limit(9, 1) });
  const keys = [
    'a'.repeat(24), // the longest copied by the ASCII loop
    'b'.repeat(25), // the shortest encoded by TextEncoder
    'c'.repeat(1000),
    'x'.repeat(30) + 'é', // ASCII past the loop's length, then not
    'é'.repeat(24),
    '😀'.repeat(16_383) + 'abc', // 65,535 bytes from 32,769 UTF-16 units
  ];
  keys.forEach((key, i) => store.tryConsume(key, i + 1));
  keys.forEach((key, i) => {
    assert.equal(store.getAvailableTokens(new TextEncoder().encode(key)), 8 - i, `key ${i} by its bytes`);
    assert.ok(store.has(key) && !store.has(key.slice(0, -1)), `key ${i} less its last character is another key`);
  });
  assert.equal(store.size, keys.length);
  assert.throws(() => store.tryConsume('😀'.repeat(16_384), 1), (e) => e.code === 'KEY_TOO_LONG', '65,536 bytes');
  assert.throws(() => store.tryConsume(new Uint8Array(70_000), 1), { name: 'EdgeBucketError', code: 'KEY_TOO_LONG', message: /^a key of 70000 bytes/ }, 'more bytes than the exchange holds');
  // A key too long to be held is not held, as a Map would say; a key of the wrong type still throws.
  for (const long of ['😀'.repeat(16_384), 'z'.repeat(70_000), new Uint8Array(65_536), new Uint8Array(70_000)]) {
    assert.equal(store.has(long), false);
    assert.equal(store.delete(long), false);
  }
  assert.throws(() => store.has(7), (e) => e.code === 'INVALID_ARGUMENT');
  assert.throws(() => store.delete('\uD800'), (e) => e.code === 'INVALID_ARGUMENT');
  assert.equal(store.size, keys.length);
  assert.throws(() => store.tryConsume('y'.repeat(2 ** 26), 1), (e) => e.code === 'KEY_TOO_LONG' && /at least 67108864 bytes/.test(e.message));
});

test('a key whose last character does not fit in 65,535 bytes is refused, not cut short', () => {
  // Fewer UTF-16 units than the maximum, but the UTF-8 of the last character runs past it.
  const { store } = manual({ configuration: limit(3, 1) });
  for (const short of ['a', 'b', 'c']) store.tryConsume(short, 1); // the first byte each long key writes
  for (const [head, tail] of [['a'.repeat(65_534), '€'], ['b'.repeat(65_533), '😀'], ['c'.repeat(65_534), 'é']]) {
    assert.throws(() => store.tryConsume(head + tail, 1), (e) => e.code === 'KEY_TOO_LONG' && e.message.startsWith(`a key of ${head.length + new TextEncoder().encode(tail).length} bytes`));
    assert.deepEqual([store.has(head + tail), store.delete(head + tail)], [false, false]);
  }
  assert.equal(store.size, 3, 'no key was made of the bytes that fit');
});

test('a supplier is called only for new keys', () => {
  const calls = [];
  const { store } = manual({
    configuration: (key) => {
      calls.push(key);
      return key.startsWith('premium:') ? limit(100, 100) : limit(2, 1);
    },
  });
  assert.equal(store.tryConsume('premium:a', 50), true);
  assert.equal(store.tryConsume('free:b', 3), false);
  assert.equal(store.tryConsume('premium:a', 50), true);
  assert.deepEqual(store.tryConsumeAndReturnRemaining('free:b', 2).remainingTokens, 0);
  assert.equal(store.getAvailableTokens('premium:a'), 0);
  assert.deepEqual(calls, ['premium:a', 'free:b']);
});

test("a supplier gets a copy of a byte key: changing it changes nothing", () => {
  // Buffer#slice is a view of the same bytes, not a copy.
  for (const bytes of [(b) => new Uint8Array(b), (b) => Buffer.from(b)]) {
    const given = [];
    const store = new BucketStore({ configuration: (key) => { given.push(key.constructor); key[0] = 9; return limit(2, 1); } });
    const key = bytes([1, 2, 3]);
    assert.equal(store.tryConsume(key, 1), true);
    assert.deepEqual([...key], [1, 2, 3]);
    assert.equal(store.has(new Uint8Array([1, 2, 3])), true);
    assert.equal(store.has(new Uint8Array([9, 2, 3])), false);
    assert.equal(store.getAvailableTokens(key), 1);
    assert.deepEqual(given, [key.constructor], 'of the same class');
  }
  const tiers = new BucketStore({ configuration: (key) => limit(key.toString().startsWith('premium:') ? 100 : 1, 1) });
  assert.equal(tiers.tryConsume(Buffer.from('premium:42'), 5), true, "a Buffer's toString reads its text");
});

test('a supplier may use the store, and its errors change nothing', () => {
  const store = new BucketStore({ configuration: () => { store.has('x'); return limit(1, 1); } });
  assert.equal(store.tryConsume('k', 1), true);
  for (const wrong of ['not a configuration', Object.create(BucketConfiguration.prototype)]) {
    const failing = new BucketStore({ configuration: () => wrong });
    assert.throws(() => failing.tryConsume('k', 1), { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' });
    assert.equal(failing.size, 0);
  }
});

test('past maxKeys, a flood of keys used once evicts its own, not a busy key (which would start afresh)', () => {
  for (const supplied of [false, true]) {
    const configuration = supplied ? () => limit(10, 1) : limit(10, 1);
    const { store } = manual({ configuration, maxKeys: 100 });
    let granted = 0;
    for (let i = 0; i < 1000; i++) {
      if (store.tryConsume('busy', 1)) granted += 1;
      store.tryConsume(`new ${i}`, 1);
    }
    assert.equal(granted, 10, `supplied: ${supplied}`);
    assert.equal(store.size, 100);
  }
});

test('idle expiry: a key is dropped once its bucket has been full for the grace', () => {
  const { store, clock } = manual({ configuration: limit(10, 10), idleGrace: '1s' });
  store.tryConsume('a', 5); // full again at 500 ms
  store.tryConsume('b', 10); // full again at 1 s
  clock.t = 1500 * MS - 1;
  assert.equal(store.removeExpired(), 0);
  clock.t = 1500 * MS;
  assert.equal(store.removeExpired(), 1);
  assert.ok(!store.has('a') && store.has('b'));
  clock.t = 2000 * MS;
  assert.equal(store.removeExpired(), 1);
  assert.equal(store.size, 0);
});

test('a consumption attempt a full bucket refuses starts the grace again; reads do not', () => {
  const { store, clock } = manual({ configuration: limit(10, 10), idleGrace: '10s' });
  for (const key of ['tried', 'read']) store.getAvailableTokens(key); // full from 0
  clock.t = 9 * SEC;
  assert.equal(store.tryConsume('tried', 11), false);
  assert.equal(store.getAvailableTokens('read'), 10);
  assert.equal(store.estimateAbilityToConsume('read', 11).canBeConsumed, false);
  clock.t = 10 * SEC;
  assert.equal(store.removeExpired(), 1);
  assert.deepEqual([store.has('tried'), store.has('read')], [true, false]);
  clock.t = 19 * SEC - 1;
  assert.equal(store.removeExpired(), 0);
  clock.t = 19 * SEC;
  assert.equal(store.removeExpired(), 1);
});

test('expiry is eventual, and forgets what Bucket4j forgets: initial tokens below capacity come back', () => {
  const { store, clock } = manual({ configuration: limit(10, 10, (l) => l.initialTokens(0)) });
  assert.equal(store.getAvailableTokens('k'), 0);
  clock.t = SEC - 1;
  assert.equal(store.getAvailableTokens('k'), 9);
  clock.t = 2 * SEC; // full since 1 s: expired, but kept until swept
  assert.equal(store.getAvailableTokens('k'), 10);
  assert.equal(store.removeExpired(), 1);
  assert.equal(store.getAvailableTokens('k'), 0, 'a fresh bucket again');
});

test('a key that spent initial tokens above its capacity never expires: its burst does not come back', () => {
  const { store, clock } = manual({ configuration: limit(10, 10, (l) => l.initialTokens(100)) });
  assert.equal(store.tryConsume('fresh', 1), true);
  assert.equal(store.tryConsume('spent', 95), true);
  clock.t = 3600 * SEC; // both back at capacity long ago
  assert.equal(store.removeExpired(), 0);
  assert.equal(store.tryConsume('spent', 11), false, 'refill stops at capacity; no second burst');
  assert.equal(store.tryConsume('fresh', 99), true, '99 of its 100 left');
  assert.equal(store.removeExpired(), 0);
  assert.equal(store.size, 2);
});

test('insertions sweep expired keys a few at a time', () => {
  const { store, clock } = manual({ configuration: limit(10, 10) });
  for (const key of ['a', 'b', 'c', 'd']) store.tryConsume(key, 1);
  clock.t = SEC;
  store.tryConsume('e', 1);
  store.tryConsume('f', 1);
  assert.equal(store.size, 2);
});

test('beyond maxKeys, CLOCK evicts keys not used since the hand last passed', () => {
  const { store } = manual({ configuration: limit(10, 1), maxKeys: 3 });
  for (const key of ['a', 'b', 'c']) store.tryConsume(key, 1);
  store.tryConsume('d', 1);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((k) => store.has(k)), [false, true, true, true]);
  store.tryConsume('c', 1);
  store.tryConsume('e', 1);
  assert.deepEqual(['b', 'c', 'd', 'e'].map((k) => store.has(k)), [false, true, true, true]);
  assert.equal(store.size, 3);
  assert.equal(store.getAvailableTokens('c'), 8, 'a kept key kept its tokens');
});

test('a new version replaces configurations on next access, with the strategy', () => {
  const { store } = manual({ configuration: limit(100, 1) });
  store.tryConsume('k', 60);
  store.tryConsume('j', 10);
  store.configure({ configuration: limit(200, 1), version: 1, strategy: 'PROPORTIONALLY' });
  assert.equal(store.getAvailableTokens('k'), 80);
  store.configure({ configuration: () => limit(300, 1), version: 2, strategy: 'ADDITIVE' });
  assert.equal(store.getAvailableTokens('k'), 180);
  assert.equal(store.getAvailableTokens('j'), 290, 'two versions behind: the current configuration, by the current strategy');
  store.configure({ configuration: limit(1, 1), version: 2, strategy: 'RESET' });
  assert.equal(store.getAvailableTokens('k'), 180, 'the same version replaces nothing');
  assert.equal(store.getAvailableTokens('new'), 1);
});

test('configure without a version or strategy keeps the current ones', () => {
  const { store } = manual({ configuration: limit(100, 1) });
  store.configure({ configuration: limit(200, 1), version: 3, strategy: 'ADDITIVE' });
  store.tryConsume('old', 50); // created at version 3: 150 left
  store.configure({ configuration: limit(10, 1) }); // still version 3: for new keys only
  assert.equal(store.getAvailableTokens('new'), 10);
  assert.equal(store.getAvailableTokens('old'), 150, 'a key at the current version keeps its configuration');
  store.configure({ configuration: limit(300, 1), version: 4 }); // still ADDITIVE
  assert.equal(store.getAvailableTokens('old'), 250, '150 + (300 - 200) by the kept strategy');
  assert.equal(store.getAvailableTokens('new'), 300);
});

test('the constructor takes the version and strategy, as configure does', () => {
  const { store } = manual({ configuration: limit(100, 1), version: 7, strategy: 'ADDITIVE' });
  store.tryConsume('k', 50);
  store.configure({ configuration: limit(10, 1), version: 7 });
  assert.equal(store.getAvailableTokens('k'), 50, 'created at version 7: up to date');
  store.configure({ configuration: limit(300, 1), version: 8 });
  assert.equal(store.getAvailableTokens('k'), 250, 'ADDITIVE, kept from the constructor: 50 + (300 - 100)');
});

test('a strategy must be a string naming one, not an object whose text names one', () => {
  const { store } = manual({ configuration: limit(5, 1) });
  store.tryConsume('k', 2);
  for (const strategy of [{ toString: () => 'RESET' }, ['RESET'], 1, null]) {
    assert.throws(
      () => store.configure({ configuration: limit(50, 1), version: 1, strategy }),
      (e) => e instanceof EdgeBucketError && e.code === 'INVALID_ARGUMENT' && e.message === 'strategy must be a TokensInheritanceStrategy',
      String(strategy),
    );
    assert.throws(() => new BucketStore({ configuration: limit(5, 1), strategy }), { code: 'INVALID_ARGUMENT', message: 'strategy must be a TokensInheritanceStrategy' });
  }
  assert.equal(store.getAvailableTokens('k'), 3, 'still version 0 with its configuration');
});

test('a version must be a whole number from 0 to 2^53 - 1', () => {
  const { store } = manual({ configuration: limit(5, 1) });
  for (const version of [1.5, -1, NaN, Infinity, 2 ** 53, 1n, '1', null]) {
    assert.throws(
      () => store.configure({ configuration: limit(1, 1), version }),
      (error) => error instanceof EdgeBucketError && error.code === 'INVALID_ARGUMENT' && /version must be a whole number from 0 to 2\^53 - 1/.test(error.message),
      String(version),
    );
  }
  assert.equal(store.getAvailableTokens('k'), 5, 'the configuration stayed');
});

test('bad arguments throw EdgeBucketError and change nothing', () => {
  const { store } = manual({ configuration: limit(5, 1) });
  store.tryConsume('k', 2);
  const cases = [
    [() => store.tryConsume('k', 0), 'NON_POSITIVE_TOKENS'],
    [() => store.tryConsume('k', -2), 'NON_POSITIVE_TOKENS'],
    [() => store.tryConsume('k', 1.5), 'INVALID_ARGUMENT'],
    [() => store.tryConsume('k', NaN), 'INVALID_ARGUMENT'],
    [() => store.tryConsume('k', '1'), 'INVALID_ARGUMENT'],
    [() => store.tryConsume('new', 0), 'NON_POSITIVE_TOKENS'],
    [() => store.tryConsume(42, 1), 'INVALID_ARGUMENT'],
    [() => store.tryConsume(null, 1), 'INVALID_ARGUMENT'],
    [() => store.tryConsume('x'.repeat(65536), 1), 'KEY_TOO_LONG'],
    [() => store.tryConsume('é'.repeat(40000), 1), 'KEY_TOO_LONG'],
    // UTF-8 cannot encode a lone surrogate: encoded as U+FFFD it would share that key's bucket.
    [() => store.tryConsume('\uD800', 1), 'INVALID_ARGUMENT'],
    [() => store.tryConsume('a\uDFFFb', 1), 'INVALID_ARGUMENT'],
    [() => store.estimateAbilityToConsume('k', 0), 'NON_POSITIVE_TOKENS'],
    [() => store.configure({ configuration: limit(1, 1), strategy: 'SOMETIMES' }), 'INVALID_ARGUMENT'],
    [() => store.configure({ configuration: {} }), 'INVALID_ARGUMENT'],
    [() => store.configure(), 'INVALID_ARGUMENT'],
    [() => store.configure(null), 'INVALID_ARGUMENT'],
    [() => store.configure({ configuration: limit(1, 1), version: -1 }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeys: 0 }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeys: -1 }), 'INVALID_ARGUMENT'],
    // Not wrapped modulo 2^32 into a cap of 1 key (wasm addresses at most 2^32 - 1).
    [() => new BucketStore({ configuration: limit(1, 1), maxKeys: 2 ** 32 + 1 }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeys: 1.5 }), 'INVALID_ARGUMENT'],
    // Described without String(), which throws for an object without a prototype.
    [() => new BucketStore({ configuration: limit(1, 1), maxKeys: Object.create(null) }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeyBytes: 65535 }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeyBytes: 2 ** 32 + 1 }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeyBytes: 2 ** 20 + 0.5 }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeyBytes: '1GB' }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), maxKeyBytes: 2n ** 20n }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), idleGrace: 'soon' }), 'INVALID_DURATION'],
    [() => new BucketStore({ configuration: limit(1, 1), idleGrace: new Date() }), 'INVALID_DURATION'],
    [() => new BucketStore({ configuration: limit(1, 1), idleGrace: { get seconds() { throw new Error('getter'); } } }), 'INVALID_DURATION'],
    [() => new BucketStore({ configuration: limit(1, 1), clock: 'sundial' }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({ configuration: limit(1, 1), clock: Object.create(null) }), 'INVALID_ARGUMENT'],
    [() => new BucketStore({}), 'INVALID_ARGUMENT'],
    [() => new BucketStore(), 'INVALID_ARGUMENT'],
    [() => new BucketStore(null), 'INVALID_ARGUMENT'],
    // Misspelt options: the cap or the version would otherwise stay at its default unnoticed.
    [() => new BucketStore({ configuration: limit(1, 1), maxkeys: 10 }), 'INVALID_ARGUMENT'],
    [() => store.configure({ configuration: limit(1, 1), verison: 2 }), 'INVALID_ARGUMENT'],
  ];
  for (const [operation, code] of cases) {
    assert.throws(operation, (e) => e instanceof EdgeBucketError && e.code === code, `${operation} → ${code}`);
  }
  assert.equal(store.getAvailableTokens('k'), 3);
  assert.equal(store.size, 1, 'no key was created by a failed operation');
  assert.equal(store.tryConsume('x'.repeat(65535), 1), true, 'the longest key');
});

test('error messages name what was wrong and show the value given', () => {
  const { store } = manual({ configuration: limit(3, 1) });
  const known = 'configuration, maxKeys, maxKeyBytes, idleGrace, version, strategy, clock';
  const make = (options) => () => new BucketStore({ configuration: limit(1, 1), ...options });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const cases = [
    [make({ maxKeys: '10' }), 'maxKeys must be a whole number or Infinity, got "10"'],
    [make({ maxKeys: null }), 'maxKeys must be a whole number or Infinity, got null'],
    [make({ maxKeys: new Map() }), 'maxKeys must be a whole number or Infinity, got Map'],
    [make({ maxKeys: Object.create(null) }), 'maxKeys must be a whole number or Infinity, got object'],
    [make({ maxKeys: { get constructor() { throw new Error('mine'); } } }), 'maxKeys must be a whole number or Infinity, got object'],
    [make({ maxKeyBytes: 1.5 }), 'maxKeyBytes must be a whole number, got number 1.5'],
    [make({ maxKeyBytes: 2n }), 'maxKeyBytes must be a whole number, got bigint 2'],
    // The range as the docs give it (found by mutation testing of the bindings).
    [make({ maxKeyBytes: 65535 }), 'maxKeyBytes must be from 65536 to 4294967296, got 65535'],
    [() => new BucketStore(null), `new BucketStore takes an object { ${known} }`],
    [() => new BucketStore('configuration'), `new BucketStore takes an object { ${known} }`],
    [make({ maxkeys: 10 }), `new BucketStore has no option "maxkeys" (known: ${known})`],
    [() => new BucketStore(proxy), /^new BucketStore's options: reading it threw /],
    [() => store.configure({ configuration: {} }), 'configuration must be a BucketConfiguration or a function (key) => BucketConfiguration'],
    [() => store.configure({ configuration: limit(1, 1), versoin: 1 }), 'configure has no option "versoin" (known: configuration, version, strategy)'],
    [() => store.tryConsume(42, 1), 'a key must be a string or a Uint8Array, got number 42'],
    [() => store.tryConsume(undefined, 1), 'a key must be a string or a Uint8Array, got undefined'],
    [() => store.tryConsume('k', undefined), 'tokens must be a number or a BigInt, got undefined'],
    [() => store.tryConsume('k', 2n ** 64n), 'tokens 18446744073709551616 is outside the 64-bit range'],
    [() => store.tryConsume('a\uDFFF', 1), 'a string key must be well-formed Unicode: it has a lone surrogate'],
    [() => store.tryConsume('x'.repeat(65_536), 1), 'a key of at least 65536 bytes is longer than the maximum of 65535 bytes'],
    [make({ idleGrace: new Date(0) }), 'a duration is milliseconds, a string or a plain object such as { seconds: 1 }, got Date'],
    [make({ idleGrace: { get seconds() { throw new Error('mine'); } } }), 'invalid duration: reading it threw mine'],
    [make({ idleGrace: { get seconds() { throw 'text'; } } }), 'invalid duration: reading it threw "text"'],
    [make({ idleGrace: { get seconds() { throw Object.defineProperty(new Error(), 'message', { get() { throw new Error('again'); } }); } } }), 'invalid duration: reading it threw a value that cannot be shown'],
    // A revoked Proxy thrown: it made the check for an EdgeBucketError itself throw a TypeError.
    [make({ idleGrace: { get seconds() { throw proxy; } } }), 'invalid duration: reading it threw a value that cannot be shown'],
  ];
  for (const [operation, message] of cases) {
    assert.throws(operation, (e) => e instanceof EdgeBucketError && (typeof message === 'string' ? e.message === message : message.test(e.message)), `${operation} → ${message}`);
  }
  const detached = new Uint8Array(new ArrayBuffer(4));
  structuredClone(detached.buffer, { transfer: [detached.buffer] });
  assert.throws(() => store.has(detached), { message: 'a key must not be a Uint8Array whose buffer was detached or shrunk' });
  store.free();
  assert.throws(() => store.has('k'), { code: 'STORE_FREED', message: 'the store was freed (store.free()); create another' });
});

test("a duration's parts are read inherited too: a class's getter, an Object.create prototype", () => {
  let now = 0n;
  class Grace {
    get seconds() {
      return 5;
    }
  }
  for (const idleGrace of [new Grace(), Object.create({ seconds: 5 })]) {
    const store = new BucketStore({ configuration: limit(1, 1), idleGrace, clock: () => now });
    store.tryConsume('k', 1);
    now += 1_000_000_000n; // refilled to full after 1 s; the grace of 5 s runs from there
    assert.equal(store.removeExpired(), 0, 'read as 5 s, not as none (0 s)');
    now += 5_000_000_000n;
    assert.equal(store.removeExpired(), 1, 'expired after its grace');
  }
  // As a period, in a configuration, and as maxWait's sibling check, the same reading.
  const period = BucketConfiguration.fromJSON({ bandwidths: [{ capacity: 1, refill: { kind: 'greedy', tokens: 1, period: new Grace() } }] });
  assert.equal(period.toJSON().bandwidths[0].refill.period, '5s');
});

test('past maxKeyBytes a new key is refused with KEY_SPACE_FULL and existing keys carry on', () => {
  const { store } = manual({ configuration: limit(3, 1), maxKeyBytes: 65536 });
  const key = (c) => c.repeat(30_000);
  assert.equal(store.tryConsume(key('a'), 1), true);
  assert.equal(store.tryConsume(key('b'), 1), true);
  assert.throws(() => store.tryConsume(key('c'), 1), (e) => e instanceof EdgeBucketError && e.code === 'KEY_SPACE_FULL');
  assert.throws(() => store.tryConsume(key('c'), 1), /remove keys, lower maxKeys or raise maxKeyBytes$/, "the JS options' names");
  assert.equal(store.size, 2);
  assert.equal(store.has(key('c')), false);
  assert.equal(store.getAvailableTokens(key('a')), 2);
  assert.equal(store.delete(key('a')), true);
  assert.equal(store.tryConsume(key('c'), 1), true, "a removed key's bytes are reclaimed");
  store.free();
});

test("removed keys' bytes are reclaimed for a new key once they are an eighth of the bytes held", () => {
  const { store } = manual({ configuration: limit(10, 1), maxKeyBytes: 65536 });
  for (let i = 0; i < 8; i++) store.tryConsume(String(i).repeat(8000), 1); // 64,000 bytes
  store.delete('0'.repeat(8000)); // an eighth, and fewer bytes than the next key
  assert.equal(store.tryConsume('x'.repeat(9000), 1), true, '56,000 + 9,000 fit once reclaimed');
  store.free();
});

test('a key space full of keys gone idle makes room for a new key, asking the supplier once', () => {
  const supplied = [];
  const { store, clock } = manual({
    configuration: (k) => (supplied.push(k.length), limit(3, 1)),
    maxKeys: 3,
    maxKeyBytes: 65536,
  });
  const key = (c) => c.repeat(21_000);
  for (const c of 'abc') assert.equal(store.tryConsume(key(c), 1), true);
  clock.t = SEC; // all three are full again, so expired
  assert.equal(store.tryConsume(key('d'), 1), true, 'the expired keys were dropped for it');
  assert.equal(store.size, 1);
  assert.deepEqual(supplied, [21_000, 21_000, 21_000, 21_000]);
  store.free();
});

test('by default long keys are refused at 1 GiB instead of exhausting wasm memory', () => {
  // 4 GiB of 65,535-byte keys used to trap the module (RuntimeError: unreachable) and leave
  // every bucket and store in the process failing.
  const { store } = manual({ configuration: limit(3, 1) });
  const key = new Uint8Array(65535);
  let held = 0;
  for (;;) {
    key[0] = held & 255;
    key[1] = (held >> 8) & 255;
    try {
      store.tryConsume(key, 1);
    } catch (e) {
      assert.ok(e instanceof EdgeBucketError && e.code === 'KEY_SPACE_FULL', String(e));
      break;
    }
    held += 1;
  }
  assert.equal(held, 2 ** 30 / 2 ** 16, 'one 65,535-byte key per 64 KiB chunk, 1 GiB of them');
  assert.equal(store.size, held);
  assert.throws(() => store.tryConsume('short', 1), { code: 'KEY_SPACE_FULL' }, 'new keys are refused while it is full');
  key.fill(0, 0, 2);
  assert.equal(store.getAvailableTokens(key), 2, 'existing keys carry on');
  const bystander = Bucket.builder().withConfiguration(limit(3, 1)).build();
  assert.equal(bystander.tryConsume(1), true, 'the module still works');
  store.free();
});

test('thousands of keys stay distinct across wasm memory growth', () => {
  const { store } = manual({ configuration: limit(3, 1), maxKeys: Infinity });
  for (let i = 0; i < 50_000; i++) store.tryConsume(`user:${i}`, 1 + (i % 3));
  assert.equal(store.size, 50_000);
  for (let i = 0; i < 50_000; i += 7) assert.equal(store.getAvailableTokens(`user:${i}`), 2 - (i % 3));
  store.clear();
  assert.equal(store.size, 0);
  store.free();
});

test('after a version change an expired key starts afresh instead of carrying tokens over', () => {
  const capacity = (n) => BucketConfiguration.builder().addLimit((l) => l.capacity(n).refillGreedy(1, '1h')).build();
  const held = {};
  for (const idleGrace of [0, '1h']) {
    const { store } = manual({ configuration: capacity(30), idleGrace });
    store.getAvailableTokens('k'); // full, hence expired at once with no grace
    store.configure({ configuration: capacity(40), version: 1, strategy: 'AS_IS' });
    held[idleGrace] = store.getAvailableTokens('k');
  }
  assert.deepEqual(held, { 0: 40, '1h': 30 });
});

test('a freed store throws STORE_FREED; freeing again does nothing', () => {
  const { store } = manual({ configuration: limit(3, 1) });
  store.tryConsume('k', 1);
  store.free();
  store.free();
  assert.throws(() => store.tryConsume('k', 1), (e) => e instanceof EdgeBucketError && e.code === 'STORE_FREED');
  assert.throws(() => store.size, { code: 'STORE_FREED' });
});

test('a store freed by its own time meter, or asked about a key too long to hold, throws STORE_FREED', () => {
  let freeNow = false;
  const store = new BucketStore({
    configuration: limit(3, 1),
    clock: () => {
      if (freeNow) store.free();
      return 0;
    },
  });
  store.tryConsume('k', 1);
  freeNow = true;
  assert.throws(() => store.removeExpired(), { code: 'STORE_FREED' }); // was wasm's "null pointer passed to rust"
  const long = 'x'.repeat(70_000);
  assert.throws(() => store.has(long), { code: 'STORE_FREED' }); // was false
  assert.throws(() => store.delete(long), { code: 'STORE_FREED' });
  const idleGrace = function () {};
  Object.defineProperty(idleGrace, 'name', { get() { throw new Error('mine: name'); } });
  assert.throws(() => new BucketStore({ configuration: limit(3, 1), idleGrace }), { name: 'EdgeBucketError', code: 'INVALID_DURATION' });
});

test('one configuration serves many stores and buckets (it is never consumed)', () => {
  const shared = limit(3, 1);
  const stores = [new BucketStore({ configuration: shared }), new BucketStore({ configuration: shared })];
  stores[0].configure({ configuration: shared, version: 1 });
  const bucket = Bucket.builder().withConfiguration(shared).build();
  for (const store of stores) assert.equal(store.tryConsume('k', 3), true);
  assert.equal(bucket.tryConsume(3), true);
  assert.deepEqual(shared.toJSON().bandwidths[0].capacity, 3);
});

test('a BigInt left by a call that threw before reaching wasm is never read in place of NaN', () => {
  const clock = { t: 0, broken: false };
  const store = new BucketStore({
    configuration: limit(10, 10),
    clock: () => {
      if (clock.broken) throw new Error('the clock broke');
      return clock.t;
    },
  });
  clock.broken = true;
  // The clock throws before anything is written; were the count written first, its BigInt
  // would be left in the exchange for the next call.
  assert.throws(() => store.tryConsume('k', 5n), /the clock broke/);
  clock.broken = false;
  assert.throws(() => store.tryConsume('k', NaN), { code: 'INVALID_ARGUMENT' });
  assert.equal(store.getAvailableTokens('k'), 10, 'nothing consumed');
  assert.throws(() => store.configure({ configuration: limit(10, 10), version: NaN }), { code: 'INVALID_ARGUMENT' });
});

test('well-formed non-ASCII keys, surrogate pairs included, are distinct keys', () => {
  const { store } = manual({ configuration: limit(1, 1) });
  for (const key of ['😀', '\uFFFD', 'é', 'e\u0301']) assert.equal(store.tryConsume(key, 1), true, key);
  assert.equal(store.size, 4);
  assert.equal(store.tryConsume('😀', 1), false, 'the first key is empty');
});

test('without String.prototype.isWellFormed (runtimes before it), lone surrogates are still refused', () => {
  const own = Object.getOwnPropertyDescriptor(String.prototype, 'isWellFormed');
  delete String.prototype.isWellFormed;
  try {
    const { store } = manual({ configuration: limit(1, 1) });
    for (const key of ['\uD800', 'a\uDFFFb', '\uDC00\uD83D', 'x\uD83D', '\uD83D\uD83D\uDE00', '\uD83D\uDE00\uDE00', 'é\uDBFF']) {
      assert.throws(() => store.tryConsume(key, 1), { code: 'INVALID_ARGUMENT', message: /lone surrogate/ }, JSON.stringify(key));
    }
    for (const key of ['😀', 'a\uD83D\uDE00b', '\uDBFF\uDFFF', '\uD800\uDC00', '\uFFFD', 'é']) assert.equal(store.tryConsume(key, 1), true, JSON.stringify(key));
    assert.equal(store.size, 6);
  } finally {
    if (own) Object.defineProperty(String.prototype, 'isWellFormed', own);
  }
});

test('a supplier cannot configure its store (STORE_BUSY); the key is not created', () => {
  let configure = true;
  const store = new BucketStore({
    configuration: () => {
      // Allowed, it would stamp the key with version 2 but give it version 1's configuration.
      if (configure) store.configure({ configuration: limit(500, 1), version: 2 });
      return limit(10, 1);
    },
  });
  assert.throws(() => store.tryConsume('a', 1), { name: 'EdgeBucketError', code: 'STORE_BUSY', message: 'the store cannot be configured from within its configuration supplier' });
  assert.equal(store.size, 0);
  configure = false;
  assert.equal(store.tryConsume('a', 1), true, 'the store works on, at version 0');
  assert.equal(store.getAvailableTokens('a'), 9);
});

test('a supplier that uses the store for its own key gets STORE_BUSY, not a stack overflow', () => {
  let calls = 0;
  const store = new BucketStore({
    configuration: (key) => {
      calls += 1;
      if (key === 'b') return limit(10, 1);
      assert.equal(store.getAvailableTokens('b'), 10, 'another key: allowed');
      store.tryConsume(key instanceof Uint8Array ? 'k' : key, 1); // its own key, also as bytes
      return limit(10, 1);
    },
  });
  assert.throws(() => store.tryConsume('a', 1), { name: 'EdgeBucketError', code: 'STORE_BUSY', message: 'the configuration supplier used the store for the key it is supplying a configuration for' });
  assert.throws(() => store.tryConsume(new TextEncoder().encode('k'), 1), { code: 'STORE_BUSY' });
  assert.equal(calls, 3, "the supplier ran once for 'a', 'b' and 'k' each");
  assert.equal(store.size, 1, "only 'b' was created");
  assert.equal(store.getAvailableTokens('b'), 10);
});

test("a supplier may use the store for a longer key that begins with its own key's bytes", () => {
  const supplied = [];
  const store = new BucketStore({
    configuration: (key) => {
      supplied.push(key);
      if (key === 'user') {
        assert.equal(store.tryConsume('user:1', 2), true, 'another key: allowed');
        assert.equal(store.tryConsume('usex', 1), true, 'of the same length, sharing all but a byte');
      }
      return limit(5, 1);
    },
  });
  assert.equal(store.tryConsume('user', 1), true);
  assert.deepEqual(supplied, ['user', 'user:1', 'usex']);
  assert.deepEqual([store.getAvailableTokens('user'), store.getAvailableTokens('user:1'), store.getAvailableTokens('usex')], [4, 3, 4]);
});

test('an operation reads the clock once, also when it calls the supplier', () => {
  let reads = 0;
  const clock = () => [0, 1.5][reads++] ?? 1.5; // its second reading is not a time
  const store = new BucketStore({ configuration: () => limit(3, 1), clock });
  assert.equal(store.tryConsume('k', 1), true, 'a second reading would have failed with the key supplied');
  assert.equal(reads, 1);
  // A BigInt time is kept across a supplier that puts its own, an hour later, into the exchange.
  const epoch = 1_795_269_030_570n * 1_000_000n;
  const side = Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(10, '1s')).withCustomTimeMeter(() => epoch + 3600n * BigInt(SEC)).build();
  const empty = limit(3, 1, (l) => l.initialTokens(0));
  let time = epoch;
  const big = new BucketStore({ configuration: () => (side.tryConsume(1), empty), clock: () => time });
  const probe = big.tryConsumeAndReturnRemaining('k', 1);
  assert.deepEqual([probe.consumed, probe.nanosToWaitForRefill], [false, SEC], "decided at the store's time: nothing refilled yet");
  time += BigInt(SEC);
  assert.equal(big.getAvailableTokens('k'), 1, "created at the store's time: a second later, a token");
});

test('a time meter that uses the package does not change the key or the count of the operation', () => {
  const audit = new BucketStore({ configuration: limit(10, 10) });
  const side = Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(10, '1s')).build();
  const clock = () => {
    audit.has('zz'); // writes its own key into the shared exchange
    side.tryConsume(1n); // and a BigInt count
    return 0;
  };
  const store = new BucketStore({ configuration: limit(10, 10), clock });
  assert.equal(store.tryConsume('K', 4n), true);
  assert.deepEqual([store.has('K'), store.has('z'), store.has('zz')], [true, false, false]);
  assert.equal(store.getAvailableTokens('K'), 6);
  assert.equal(store.tryConsumeAndReturnRemaining('K', 2n).remainingTokens, 4);
  assert.equal(store.estimateAbilityToConsume('K', 5n).canBeConsumed, false);
  const supplied = new BucketStore({ configuration: () => limit(3, 1), clock });
  assert.equal(supplied.tryConsume('S', 3n), true);
  assert.deepEqual([supplied.has('S'), supplied.getAvailableTokens('S')], [true, 0]);
});
