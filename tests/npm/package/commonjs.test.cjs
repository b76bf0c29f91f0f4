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
