// The CommonJS build: require('edgebucket') works and behaves like the ES module.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Bucket, BucketStore, BucketConfiguration, EdgeBucketError } = require('edgebucket');

test('require: a bucket and a store on a manual clock', () => {
  let t = 0;
  const bucket = Bucket.builder().addLimit((l) => l.capacity(2).refillGreedy(2, '1s')).withCustomTimeMeter(() => t).build();
  assert.equal(bucket.tryConsume(2), true);
  assert.equal(bucket.tryConsume(1), false);
  t = 500_000_000;
  assert.equal(bucket.tryConsume(1), true);
  const store = new BucketStore({ configuration: BucketConfiguration.builder().addLimit((l) => l.capacity(1).refillGreedy(1, '1s')).build() });
  assert.equal(store.tryConsume('a', 1), true);
  assert.equal(store.tryConsume('a', 1), false);
  assert.throws(() => bucket.tryConsume(0), (e) => e instanceof EdgeBucketError && e.code === 'NON_POSITIVE_TOKENS');
});

test('a configuration made by the ES module copy is accepted by this one (the dual-package hazard)', async () => {
  const esm = await import('edgebucket');
  assert.notEqual(esm.BucketConfiguration, BucketConfiguration, 'two copies of the package');
  const theirs = esm.BucketConfiguration.builder().addLimit((l) => l.capacity(2).refillGreedy(2, '1s').id('a')).build();
  const ours = BucketConfiguration.builder().addLimit((l) => l.capacity(2).refillGreedy(2, '1s').id('a')).build();
  let t = 0;
  const bucket = Bucket.builder().withConfiguration(theirs).withCustomTimeMeter(() => t).build();
  assert.equal(bucket.tryConsume(2), true);
  assert.equal(bucket.tryConsume(1), false);
  assert.equal(ours.equals(theirs), true);
  const bigger = esm.BucketConfiguration.builder().addLimit((l) => l.capacity(4).refillGreedy(2, '1s').id('a')).build();
  bucket.replaceConfiguration(bigger, 'ADDITIVE');
  assert.equal(bucket.getAvailableTokens(), 2);
  const store = new BucketStore({ configuration: theirs, clock: () => 0n });
  assert.equal(store.tryConsume('k', 2), true);
  assert.equal(store.tryConsume('k', 1), false);
  const supplied = new BucketStore({ configuration: () => theirs, clock: () => 0n });
  assert.equal(supplied.tryConsume('k', 3), false);
  assert.equal(supplied.tryConsume('k', 2), true);
  // Anything else is still refused.
  assert.throws(() => Bucket.builder().withConfiguration({ bandwidths: [] }), { code: 'INVALID_ARGUMENT', message: /expected a BucketConfiguration/ });
  assert.throws(() => Bucket.builder().withConfiguration(Object.create(esm.BucketConfiguration.prototype)), { code: 'INVALID_ARGUMENT', message: /expected a BucketConfiguration/ });
  const forged = { [Symbol.for('edgebucket.BucketConfiguration')]: 1, toJSON: () => ({ bandwidths: [{ capacity: 0, refill: { kind: 'greedy', tokens: 1, period: '1s' } }] }) };
  assert.throws(() => Bucket.builder().withConfiguration(forged), { code: 'NON_POSITIVE_CAPACITY' });
  // Another schema version's is not read as this one's.
  const other = { [Symbol.for('edgebucket.BucketConfiguration')]: 2, toJSON: () => theirs.toJSON() };
  assert.throws(() => Bucket.builder().withConfiguration(other), { code: 'INVALID_ARGUMENT', message: /expected a BucketConfiguration/ });
});

test("adopting another copy's configuration runs its code before a key or a time is in the exchange", () => {
  const spec = { bandwidths: [{ capacity: 5, refill: { kind: 'greedy', tokens: 5, period: '1s' } }] };
  // Its toJSON uses the package, as any code may: another store, another bucket on a BigInt clock.
  const elsewhere = new BucketStore({ configuration: BucketConfiguration.fromJSON(spec), clock: () => 0n });
  const busy = Bucket.builder().withConfiguration(BucketConfiguration.fromJSON(spec)).withCustomTimeMeter(() => 2n ** 62n).build();
  const marked = () => ({ [Symbol.for('edgebucket.BucketConfiguration')]: 1, toJSON() { elsewhere.tryConsume('zzzzzzzz', 1); busy.tryConsume(1); return spec; } });
  const store = new BucketStore({ configuration: () => marked(), clock: () => 0n });
  assert.equal(store.tryConsume('aaaaaaaa', 1), true);
  assert.deepEqual([store.has('aaaaaaaa'), store.has('zzzzzzzz'), store.size], [true, false, 1]);
  // replaceConfiguration at the bucket's own time (2^61 ns), not the one the other bucket left
  // (2^62 ns, where it would have found the bucket full again).
  let t = 2n ** 61n;
  const bucket = Bucket.builder().withConfiguration(BucketConfiguration.fromJSON(spec)).withCustomTimeMeter(() => t).build();
  bucket.tryConsume(5);
  bucket.replaceConfiguration(marked(), 'AS_IS');
  t += 200_000_000n; // one token refilled since the replacement
  assert.equal(bucket.getAvailableTokens(), 1);
  assert.equal(bucket.asVerbose().replaceConfiguration(marked(), 'AS_IS').diagnostics.bandwidths.length, 1);
});
