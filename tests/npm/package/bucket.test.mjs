// Every Bucket operation on a manual clock, against the installed package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bucket, BucketConfiguration, BucketStore, EdgeBucketError, TokensInheritanceStrategy, INFINITY_DURATION, VerboseBucket, Scheduler } from 'edgebucket';

const MS = 1_000_000;
const SEC = 1000 * MS;

/** A bucket on a manual clock: `clock.t` is the time in nanoseconds. */
function manual(limits, start = 0) {
  const clock = { t: start };
  const builder = Bucket.builder().withCustomTimeMeter(() => clock.t);
  for (const limit of limits) builder.addLimit(limit);
  return { bucket: builder.build(), clock };
}

const tenPerSecond = (l) => l.capacity(10).refillGreedy(10, '1s');

test('tryConsume admits up to capacity, then one token per refill interval', () => {
  const { bucket, clock } = manual([tenPerSecond]);
  assert.equal(bucket.tryConsume(10), true);
  assert.equal(bucket.tryConsume(1), false);
  clock.t = 100 * MS - 1;
  assert.equal(bucket.tryConsume(1), false);
  clock.t = 100 * MS;
  assert.equal(bucket.tryConsume(1), true);
});

test('tryConsumeAndReturnRemaining reports what remains and how long to wait', () => {
  const { bucket, clock } = manual([tenPerSecond]);
  assert.deepEqual(bucket.tryConsumeAndReturnRemaining(4), {
    consumed: true, remainingTokens: 6, nanosToWaitForRefill: 0, nanosToWaitForReset: 400 * MS,
  });
  bucket.tryConsume(6);
  clock.t = 150 * MS; // 1.5 tokens earned
  assert.deepEqual(bucket.tryConsumeAndReturnRemaining(2), {
    consumed: false, remainingTokens: 1, nanosToWaitForRefill: 50 * MS, nanosToWaitForReset: 850 * MS,
  });
  assert.equal(bucket.tryConsumeAndReturnRemaining(11).nanosToWaitForRefill, Infinity, 'beyond capacity: never');
  assert.equal(INFINITY_DURATION, Infinity);
});

test('estimateAbilityToConsume changes nothing', () => {
  const { bucket } = manual([tenPerSecond]);
  bucket.tryConsume(8);
  assert.deepEqual(bucket.estimateAbilityToConsume(5), { canBeConsumed: false, remainingTokens: 2, nanosToWaitForRefill: 300 * MS });
  assert.deepEqual(bucket.estimateAbilityToConsume(2), { canBeConsumed: true, remainingTokens: 2, nanosToWaitForRefill: 0 });
  assert.equal(bucket.getAvailableTokens(), 2);
});

test('tryConsumeAsMuchAsPossible, with and without a limit', () => {
  const { bucket } = manual([tenPerSecond]);
  assert.equal(bucket.tryConsumeAsMuchAsPossible(3), 3);
  assert.equal(bucket.tryConsumeAsMuchAsPossible(), 7);
  assert.equal(bucket.tryConsumeAsMuchAsPossible(), 0);
});

test('addTokens caps at capacity, forceAddTokens does not', () => {
  const { bucket } = manual([tenPerSecond]);
  bucket.tryConsume(5);
  bucket.addTokens(100);
  assert.equal(bucket.getAvailableTokens(), 10);
  bucket.forceAddTokens(5);
  assert.equal(bucket.getAvailableTokens(), 15);
});

test('consumeIgnoringRateLimits goes into debt and reports the violation', () => {
  const { bucket, clock } = manual([tenPerSecond]);
  assert.equal(bucket.consumeIgnoringRateLimits(13), 300 * MS);
  assert.equal(bucket.getAvailableTokens(), -3);
  clock.t = 400 * MS;
  assert.equal(bucket.tryConsume(1), true);
});

test('reset fills every limit', () => {
  const { bucket } = manual([tenPerSecond, (l) => l.capacity(100).refillIntervally(100, '1h')]);
  bucket.tryConsume(10);
  const tokens = () => bucket.getDiagnostics().bandwidths.map((b) => b.availableTokens);
  assert.deepEqual(tokens(), [0, 90]);
  bucket.reset();
  assert.deepEqual(tokens(), [10, 100]);
});

test('several limits: the smallest decides, every one is debited', () => {
  const { bucket, clock } = manual([
    (l) => l.capacity(5).refillGreedy(5, '1s').id('burst'),
    (l) => l.capacity(7).refillIntervally(7, '1 minute').id('minute'),
  ]);
  assert.equal(bucket.tryConsume(5), true);
  clock.t = SEC;
  assert.equal(bucket.tryConsume(3), false, 'the minute limit has 2 left');
  assert.equal(bucket.tryConsume(2), true);
  const d = bucket.getDiagnostics();
  assert.equal(d.availableTokens, 0);
  assert.deepEqual(d.bandwidths.map((b) => [b.id, b.capacity, b.availableTokens]), [['burst', 5, 3], ['minute', 7, 0]]);
  assert.equal(d.bandwidths[1].nanosToFullRefill, 59 * SEC);
});

test('replaceConfiguration with each strategy (Bucket4j examples)', () => {
  const capacity = (c) => BucketConfiguration.builder().addLimit((l) => l.capacity(c).refillGreedy(10, '1 minute')).build();
  for (const [strategy, expected] of [['PROPORTIONALLY', 80], ['AS_IS', 40], ['ADDITIVE', 140], ['RESET', 200]]) {
    const { bucket } = manual([(l) => l.capacity(100).refillGreedy(10, '1 minute')]);
    bucket.tryConsume(60);
    bucket.replaceConfiguration(capacity(200), TokensInheritanceStrategy[strategy]);
    assert.equal(bucket.getAvailableTokens(), expected, strategy);
    assert.ok(bucket.getConfiguration().equals(capacity(200)));
  }
});

test('getConfiguration returns the schema, durations as humantime', () => {
  const { bucket } = manual([(l) => l.capacity(50).refillGreedy(10, { seconds: 1 }).id('burst').initialTokens(5)]);
  assert.deepEqual(bucket.getConfiguration().toJSON(), {
    bandwidths: [{ capacity: 50, refill: { kind: 'greedy', tokens: 10, period: '1s' }, initialTokens: 5, id: 'burst' }],
  });
});

test('past 2^53, counts are BigInts, never rounded numbers', () => {
  const big = 2n ** 60n;
  const { bucket } = manual([(l) => l.capacity(big).refillGreedy(1, '1s')]);
  assert.equal(bucket.getAvailableTokens(), big);
  assert.equal(bucket.tryConsume(big - 7n), true);
  assert.equal(bucket.getAvailableTokens(), 7, 'a number again once exact');
  const slow = manual([(l) => l.capacity(1).refillGreedy(1, '365 days')]).bucket;
  slow.tryConsume(1);
  assert.equal(slow.estimateAbilityToConsume(1).nanosToWaitForRefill, 365n * 86_400n * 1_000_000_000n);
});

test('a BigInt clock beyond 2^53 (epoch nanoseconds) is exact', () => {
  const clock = { t: 1_763_740_800_000_000_000n };
  const bucket = Bucket.builder().addLimit(tenPerSecond).withCustomTimeMeter(() => clock.t).build();
  bucket.tryConsume(10);
  clock.t += 100_000_000n - 1n;
  assert.equal(bucket.tryConsume(1), false);
  clock.t += 1n;
  assert.equal(bucket.tryConsume(1), true);
});

test('a BigInt clock is not mistaken for a result past 2^53 within one operation', () => {
  // Diagnostics and verbose results make several wasm calls at one time; a result past 2^53 left
  // in the exchange must not be read back as that time.
  const clock = { t: 1_763_800_000_000_000_000n };
  const yearly = Bucket.builder().addLimit((l) => l.capacity(1000).refillIntervally(1000, '365 days')).withCustomTimeMeter(() => clock.t).build();
  const year = 365n * 86_400n * 1_000_000_000n;
  yearly.tryConsume(1);
  const diagnostics = yearly.getDiagnostics();
  assert.equal(diagnostics.nanosToFullRefill, year);
  assert.equal(diagnostics.bandwidths[0].nanosToFullRefill, year);
  yearly.tryConsume(999);
  const verbose = yearly.asVerbose().tryConsumeAndReturnRemaining(1);
  assert.equal(verbose.value.nanosToWaitForRefill, year);
  assert.equal(verbose.diagnostics.nanosToFullRefill, year);
  assert.equal(verbose.diagnostics.bandwidths[0].nanosToFullRefill, year);
});

test('the default and nanosecond clocks read real time', async () => {
  for (const builder of [Bucket.builder(), Bucket.builder().withNanosecondPrecision(), Bucket.builder().withMillisecondPrecision()]) {
    const bucket = builder.addLimit((l) => l.capacity(1).refillGreedy(1, '20ms')).build();
    assert.equal(bucket.tryConsume(1), true);
    assert.equal(bucket.tryConsume(1), false);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(bucket.tryConsume(1), true);
  }
});

test('bad arguments throw EdgeBucketError with a code and change nothing', () => {
  const { bucket } = manual([tenPerSecond]);
  bucket.tryConsume(3);
  const original = bucket.getConfiguration();
  // A valid configuration, so that only the strategy is wrong: a replacement must not happen.
  const other = BucketConfiguration.builder().addLimit((l) => l.capacity(200).refillGreedy(1, '1s')).build();
  const cases = [
    [() => bucket.tryConsume(0), 'NON_POSITIVE_TOKENS'],
    [() => bucket.tryConsume(-1), 'NON_POSITIVE_TOKENS'],
    [() => bucket.tryConsume(NaN), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume(Infinity), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume(1.5), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume('1'), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume(undefined), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume(2 ** 60), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume(2n ** 64n), 'INVALID_ARGUMENT'],
    // The 64-bit range's ends reach the core; a BigInt past them is refused in JS, not wrapped.
    [() => bucket.tryConsume(2n ** 63n), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsume(-(2n ** 63n)), 'NON_POSITIVE_TOKENS'],
    [() => bucket.tryConsume(-(2n ** 63n) - 1n), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsumeAndReturnRemaining(0), 'NON_POSITIVE_TOKENS'],
    [() => bucket.estimateAbilityToConsume(-5), 'NON_POSITIVE_TOKENS'],
    [() => bucket.tryConsumeAsMuchAsPossible(0), 'NON_POSITIVE_LIMIT'],
    [() => bucket.addTokens(0), 'NON_POSITIVE_TOKENS'],
    [() => bucket.forceAddTokens(2n ** 63n - 1n), 'TOKENS_OVERFLOW'],
    [() => bucket.consumeIgnoringRateLimits(0), 'NON_POSITIVE_TOKENS'],
    [() => bucket.replaceConfiguration(other, 'SOMETIMES'), 'INVALID_ARGUMENT'],
    [() => bucket.replaceConfiguration(other, undefined), 'INVALID_ARGUMENT'],
    [() => bucket.replaceConfiguration({ bandwidths: [] }, 'RESET'), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsumeAsMuchAsPossible(-1), 'NON_POSITIVE_LIMIT'],
    [() => bucket.tryConsumeAsMuchAsPossible(1.5), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsumeAsMuchAsPossible(NaN), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsumeAsMuchAsPossible(-Infinity), 'INVALID_ARGUMENT'],
    [() => bucket.tryConsumeAsMuchAsPossible('3'), 'INVALID_ARGUMENT'],
    [() => bucket.toListenable(null), 'INVALID_ARGUMENT'],
  ];
  for (const [operation, code] of cases) {
    assert.throws(operation, (e) => e instanceof EdgeBucketError && e.code === code && e.message.length > 0, `${operation} → ${code}`);
    assert.equal(bucket.getAvailableTokens(), 7, `${operation} changed nothing`);
    assert.ok(bucket.getConfiguration().equals(original), `${operation} kept the configuration`);
  }
  // A NaN after a failed BigInt call is still an error, not a stale BigInt.
  assert.throws(() => bucket.tryConsume(NaN), { code: 'INVALID_ARGUMENT' });
});

test('a clock that returns nonsense is an error', () => {
  const bucket = Bucket.builder().addLimit(tenPerSecond).withCustomTimeMeter(() => 0).build();
  for (const value of [1.5, NaN, 'now', 2 ** 60]) {
    const broken = Bucket.builder().addLimit(tenPerSecond).withCustomTimeMeter(() => value);
    assert.throws(() => broken.build(), { code: 'INVALID_ARGUMENT' }, String(value));
  }
  // A custom meter gives nanoseconds, and the message says so.
  const fraction = Bucket.builder().addLimit(tenPerSecond).withCustomTimeMeter(() => 1.5);
  assert.throws(() => fraction.build(), { message: 'the clock gave 1.5: expected whole nanoseconds up to 2^53 - 1 (a BigInt beyond)' });
  assert.throws(() => Bucket.builder().withCustomTimeMeter(5), { code: 'INVALID_ARGUMENT' });
  assert.equal(bucket.tryConsume(1), true);
});

test("misused constructors and hostile arguments get EdgeBucketErrors, not the runtime's TypeErrors", async () => {
  for (const View of [Bucket, VerboseBucket, Scheduler]) {
    for (const args of [[], [{}], [null], [{ raw: {} }]]) {
      assert.throws(() => new View(...args), { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' }, `${View.name}(${args.length})`);
    }
  }
  const bucket = Bucket.builder().addLimit(tenPerSecond).build();
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  const hostile = { get constructor() { throw new Error('mine'); } };
  for (const value of [revoked, hostile]) {
    assert.throws(() => bucket.tryConsume(value), { code: 'INVALID_ARGUMENT', message: /object/ });
    assert.throws(() => bucket.replaceConfiguration(value, 'RESET'), { code: 'INVALID_ARGUMENT', message: /expected a BucketConfiguration, got object/ });
    assert.equal(bucket.getConfiguration().equals(value), false);
  }
  assert.throws(() => bucket.tryConsume(undefined), { code: 'INVALID_ARGUMENT', message: /got undefined$/ });
  // Where the package itself reads the argument (`instanceof`, `Object.keys`, a property), a
  // revoked Proxy's TypeError is an EdgeBucketError too.
  const scheduler = bucket.asScheduler();
  const misuses = [
    ['INVALID_ARGUMENT', () => Bucket.builder().addLimit(revoked)],
    ['INVALID_ARGUMENT', () => BucketConfiguration.builder().addLimit(() => revoked)],
    ['INVALID_INSTANT', () => Bucket.builder().addLimit((l) => l.capacity(1).refillIntervallyAligned(1, '1s', revoked))],
    ['INVALID_ARGUMENT', () => bucket.toListenable(revoked)],
    ['INVALID_ARGUMENT', () => new BucketStore(revoked)],
    ['INVALID_ARGUMENT', () => new BucketStore({ configuration: bucket.getConfiguration() }).configure(revoked)],
  ];
  for (const [code, misuse] of misuses) assert.throws(misuse, { name: 'EdgeBucketError', code }, String(misuse));
  for (const options of [revoked, { signal: revoked }]) {
    await assert.rejects(scheduler.consume(1, options), { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' });
  }
  assert.equal(bucket.getAvailableTokens(), 10, 'nothing was reserved');
});

test('fake timers installed between builder() and build() are the clock of every reading', (t) => {
  const builder = Bucket.builder().addLimit(tenPerSecond);
  t.mock.timers.enable({ apis: ['Date'], now: 0 });
  const bucket = builder.build();
  assert.equal(bucket.tryConsume(10), true);
  t.mock.timers.tick(1000);
  assert.equal(bucket.tryConsume(10), true, 'refilled in one fake second, not created in real time');
});

test("a built-in clock that reads NaN is an error, never another bucket's BigInt time", () => {
  const realNow = Date.now;
  const plain = Bucket.builder().addLimit(tenPerSecond).build();
  const precise = Bucket.builder().addLimit(tenPerSecond).withNanosecondPrecision().build();
  // A meter past 2^53 leaves its time in the exchange, flagged, for the calls of its operation.
  Bucket.builder().addLimit(tenPerSecond).withCustomTimeMeter(() => 2n ** 62n).build().tryConsume(1);
  Date.now = () => NaN; // fake timers set to an invalid date
  try {
    assert.throws(() => plain.tryConsume(1), { code: 'INVALID_ARGUMENT' });
  } finally {
    Date.now = realNow;
  }
  const realPerformanceNow = performance.now;
  performance.now = () => NaN;
  try {
    assert.throws(() => precise.tryConsume(1), { code: 'INVALID_ARGUMENT' });
  } finally {
    performance.now = realPerformanceNow;
  }
  for (const bucket of [plain, precise]) {
    assert.equal(bucket.getAvailableTokens(), 10);
    assert.ok(bucket.getDiagnostics().nanosToFullRefill === 0, 'not refilled into the next century');
    assert.equal(bucket.tryConsume(1), true);
  }
});

test('a time meter that goes bad after build: every operation throws and changes nothing', async () => {
  let bad = null; // a value to return instead of the time, or an Error to throw
  const meterFailure = new Error('meter broke');
  const bucket = Bucket.builder()
    .addLimit(tenPerSecond)
    .withCustomTimeMeter(() => {
      if (bad instanceof Error) throw bad;
      return bad ?? 0;
    })
    .build();
  assert.equal(bucket.tryConsume(3), true);
  const other = BucketConfiguration.builder().addLimit((l) => l.capacity(20).refillGreedy(20, '1s')).build();
  const operations = {
    tryConsume: (b) => b.tryConsume(1),
    tryConsumeAndReturnRemaining: (b) => b.tryConsumeAndReturnRemaining(1),
    estimateAbilityToConsume: (b) => b.estimateAbilityToConsume(1),
    tryConsumeAsMuchAsPossible: (b) => b.tryConsumeAsMuchAsPossible(),
    addTokens: (b) => b.addTokens(1),
    forceAddTokens: (b) => b.forceAddTokens(1),
    consumeIgnoringRateLimits: (b) => b.consumeIgnoringRateLimits(1),
    getAvailableTokens: (b) => b.getAvailableTokens(),
    reset: (b) => b.reset(),
    replaceConfiguration: (b) => b.replaceConfiguration(other, TokensInheritanceStrategy.AS_IS),
    getDiagnostics: (b) => b.getDiagnostics(),
    verbose: (b) => b.asVerbose().tryConsume(1),
  };
  for (const value of [1.5, NaN, -Infinity, 'now', 2 ** 60, meterFailure]) {
    for (const [name, operation] of Object.entries(operations)) {
      bad = value;
      const expected = value === meterFailure ? (e) => e === meterFailure : { name: 'EdgeBucketError', code: 'INVALID_ARGUMENT' };
      assert.throws(() => operation(bucket), expected, `${name} at ${String(value)}`);
      await assert.rejects(bucket.asScheduler().tryConsume(1, '1s'), expected, `scheduler at ${String(value)}`);
      bad = null;
      assert.equal(bucket.getAvailableTokens(), 7, `${name} at ${String(value)} changed nothing`);
      assert.equal(bucket.getConfiguration().toJSON().bandwidths[0].capacity, 10);
    }
  }
});
