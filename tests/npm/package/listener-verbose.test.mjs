// toListenable and asVerbose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bucket, SimpleListener, BucketConfiguration, TokensInheritanceStrategy } from 'edgebucket';

function manual() {
  const clock = { t: 0 };
  const bucket = Bucket.builder().addLimit((l) => l.capacity(5).refillGreedy(5, '5s').id('b')).withCustomTimeMeter(() => clock.t).build();
  return { bucket, clock };
}

test('a listener counts consumed and rejected tokens; the plain view reports nothing', () => {
  const { bucket } = manual();
  const listener = new SimpleListener();
  const observed = bucket.toListenable(listener);
  assert.equal(observed.tryConsume(2), true);
  assert.equal(observed.tryConsume(4), false);
  assert.equal(observed.tryConsumeAndReturnRemaining(1).consumed, true);
  assert.equal(observed.tryConsumeAsMuchAsPossible(), 2);
  observed.consumeIgnoringRateLimits(3);
  bucket.tryConsume(1); // not observed
  assert.deepEqual({ ...listener }, { consumed: 2 + 1 + 2 + 3, rejected: 4, delayedNanos: 0, aborted: 0 });
  assert.equal(bucket.getAvailableTokens(), -3, 'both views share one bucket');
});

test('a listener that throws makes the call throw, after the operation took effect (as documented)', () => {
  const { bucket } = manual();
  const observed = bucket.toListenable({ onConsumed() { throw new Error('listener bug'); } });
  assert.throws(() => observed.tryConsume(3), /listener bug/);
  assert.equal(bucket.getAvailableTokens(), 2);
});

test('a hook that is not a function is refused by toListenable, before any operation', () => {
  const { bucket } = manual();
  for (const hook of ['onConsumed', 'onRejected', 'onDelayed', 'onAborted']) {
    assert.throws(() => bucket.toListenable({ [hook]: 'yes' }), (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes(hook));
  }
  assert.equal(bucket.getAvailableTokens(), 5, 'nothing consumed');
});

test('a listener may implement only some hooks', () => {
  const { bucket } = manual();
  const seen = [];
  const observed = bucket.toListenable({ onRejected: (n) => seen.push(n) });
  observed.tryConsume(5);
  observed.tryConsume(1);
  assert.deepEqual(seen, [1]);
});

test('verbose results carry the configuration and diagnostics after the operation', () => {
  const { bucket, clock } = manual();
  const verbose = bucket.asVerbose();
  const result = verbose.tryConsume(2);
  assert.equal(result.value, true);
  assert.ok(result.configuration instanceof BucketConfiguration);
  assert.ok(result.configuration.equals(bucket.getConfiguration()));
  assert.deepEqual(result.diagnostics, {
    availableTokens: 3,
    nanosToFullRefill: 2_000_000_000,
    bandwidths: [{ id: 'b', capacity: 5, availableTokens: 3, nanosToFullRefill: 2_000_000_000 }],
  });
  clock.t = 1_000_000_000;
  assert.equal(verbose.getAvailableTokens().value, 4);
  assert.deepEqual(verbose.tryConsumeAndReturnRemaining(10).value.consumed, false);
  assert.equal(verbose.estimateAbilityToConsume(1).diagnostics.availableTokens, 4);
  assert.equal(verbose.tryConsumeAsMuchAsPossible(1).value, 1);
  assert.equal(verbose.consumeIgnoringRateLimits(5).diagnostics.availableTokens, -2);
  assert.equal(verbose.addTokens(1).diagnostics.availableTokens, -1);
  assert.equal(verbose.forceAddTokens(10).diagnostics.availableTokens, 9);
  assert.equal(verbose.reset().diagnostics.availableTokens, 5);
  assert.throws(() => verbose.tryConsume(0), { code: 'NON_POSITIVE_TOKENS' });
  verbose.tryConsume(1);
  const larger = BucketConfiguration.builder().addLimit((l) => l.capacity(10).refillGreedy(1, '1s').id('b')).build();
  const replaced = verbose.replaceConfiguration(larger, TokensInheritanceStrategy.PROPORTIONALLY);
  assert.equal(replaced.value, undefined);
  assert.ok(replaced.configuration.equals(larger), 'the new configuration');
  assert.equal(replaced.diagnostics.availableTokens, 8, '4 of 5 is 8 of 10');
  assert.throws(() => verbose.replaceConfiguration(bucket.getConfiguration(), 'SOMETIMES'), { code: 'INVALID_ARGUMENT' });
  assert.ok(bucket.getConfiguration().equals(larger), 'a refused replacement changed nothing');
});

test('a verbose view of a listenable bucket still reports', () => {
  const { bucket } = manual();
  const listener = new SimpleListener();
  bucket.toListenable(listener).asVerbose().tryConsume(3);
  assert.equal(listener.consumed, 3);
});

test('a BigInt clock serves diagnostics and verbose results, which read the time more than once', () => {
  const clock = { t: 10n ** 18n };
  const bucket = Bucket.builder()
    .addLimit((l) => l.capacity(10).refillGreedy(10, '1s').id('a'))
    .addLimit((l) => l.capacity(20).refillGreedy(20, '1s').id('b'))
    .withCustomTimeMeter(() => clock.t)
    .build();
  assert.deepEqual(bucket.getDiagnostics().bandwidths.map((b) => b.availableTokens), [10, 20]);
  const result = bucket.asVerbose().tryConsume(3);
  assert.equal(result.value, true);
  assert.deepEqual(result.diagnostics.bandwidths.map((b) => b.availableTokens), [7, 17]);
  assert.equal(bucket.getAvailableTokens(), 7, 'consumed once');
  clock.t += 100_000_000n;
  assert.equal(bucket.asVerbose().getAvailableTokens().diagnostics.availableTokens, 8);
});

test('a verbose result is taken at its own time when the listener uses other buckets on BigInt clocks', () => {
  const epoch = 1_800_000_000_000_000_000n; // beyond 2^53: passed through the exchange
  const build = (t) => Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(10, '10s')).withCustomTimeMeter(() => t).build();
  const other = build(epoch + 3_600_000_000_000n); // an hour later: a full bucket there
  for (const listener of [
    { onConsumed: () => other.getAvailableTokens() },
    { onConsumed: () => assert.throws(() => other.tryConsume(-1), { code: 'NON_POSITIVE_TOKENS' }) },
  ]) {
    const bucket = build(epoch);
    const result = bucket.toListenable(listener).asVerbose().tryConsume(10);
    assert.equal(result.value, true);
    assert.deepEqual([result.diagnostics.availableTokens, result.diagnostics.nanosToFullRefill], [0, 10_000_000_000]);
    assert.equal(bucket.getAvailableTokens(), 0, 'consumed once');
  }
});

test('diagnostics and verbose results leave no wasm memory behind', async () => {
  const raw = await import(new URL('./wasm/edgebucket.js', import.meta.resolve('edgebucket')));
  const bucket = Bucket.builder()
    .addLimit((l) => l.capacity(10).refillGreedy(10, '1s').id('a'))
    .addLimit((l) => l.capacity(100).refillIntervally(100, '1m'))
    .build();
  const verbose = bucket.asVerbose();
  const memory = raw.wasmMemory();
  const before = memory.buffer.byteLength;
  for (let i = 0; i < 50_000; i++) {
    bucket.getDiagnostics();
    verbose.tryConsume(1);
  }
  // A copy of the configuration per call grew it by about 35 MiB here.
  assert.ok(memory.buffer.byteLength - before < 2 ** 20, `${memory.buffer.byteLength - before} bytes`);
  assert.equal(verbose.tryConsume(1).configuration, bucket.getConfiguration(), 'one immutable object');
  const replaced = BucketConfiguration.builder().addLimit((l) => l.capacity(5).refillGreedy(5, '1s').id('c')).build();
  bucket.replaceConfiguration(replaced, 'AS_IS');
  assert.ok(bucket.getConfiguration().equals(replaced));
  assert.deepEqual(verbose.getAvailableTokens().diagnostics.bandwidths.map((b) => b.id), ['c']);
});

test("a SimpleListener's sums stay exact past 2^53, as BigInts", () => {
  const { bucket } = manual();
  const listener = new SimpleListener();
  const observed = bucket.toListenable(listener);
  observed.tryConsume(2n ** 62n);
  observed.tryConsume(1);
  assert.equal(listener.rejected, 2n ** 62n);
  assert.equal(listener.consumed, 1, 'a number while exact');
  listener.onConsumed(Number.MAX_SAFE_INTEGER);
  assert.equal(listener.consumed, 2n ** 53n);
  const small = new SimpleListener();
  small.onConsumed(5n);
  assert.equal(small.consumed, 5, 'BigInt tokens still sum to a number while exact');
  small.onConsumed(BigInt(Number.MAX_SAFE_INTEGER) - 5n);
  assert.equal(small.consumed, Number.MAX_SAFE_INTEGER, '2^53 - 1 is still a number');
});
