// Type-checked (never run) against the installed package's .d.ts: `tsc --noEmit`.
import {
  Bucket, BucketConfiguration, BucketStore, EdgeBucketError, SimpleListener, TokensInheritanceStrategy,
  type ConsumptionProbe, type Diagnostics, type Exact, type VerboseResult,
} from 'edgebucket';

const config: BucketConfiguration = BucketConfiguration.builder()
  .addLimit((l) => l.capacity(50).refillGreedy(10, '1s').id('burst'))
  .addLimit((l) => l.capacity(1000n).refillIntervally(1000, { hours: 1 }))
  .addLimit({ capacity: 5, refill: { kind: 'greedy', tokens: 5, period: 250 } })
  .build();

let now = 0n;
const bucket: Bucket = Bucket.builder().withConfiguration(config).withCustomTimeMeter(() => now).build();
const ok: boolean = bucket.tryConsume(1);
const probe: ConsumptionProbe = bucket.tryConsumeAndReturnRemaining(2n);
const wait: Exact = probe.nanosToWaitForRefill;
const diagnostics: Diagnostics = bucket.getDiagnostics();
const verbose: VerboseResult<boolean> = bucket.asVerbose().tryConsume(1);
bucket.replaceConfiguration(config, TokensInheritanceStrategy.PROPORTIONALLY);
const replaced: VerboseResult<void> = bucket.asVerbose().replaceConfiguration(config, TokensInheritanceStrategy.AS_IS);
const listener = new SimpleListener();
const observed: Bucket = bucket.toListenable(listener);
const consumed: Exact = listener.consumed;

async function schedule(signal: AbortSignal): Promise<boolean> {
  await bucket.asScheduler().consume(5, { signal });
  return bucket.asScheduler().tryConsume(5, '2s');
}

const store = new BucketStore({ configuration: (key) => config, maxKeys: 1000, idleGrace: '1m', clock: 'nanos' });
const allowed: boolean = store.tryConsume('user:1', 1) && store.tryConsume(new Uint8Array([1, 2]), 1);
const size: number = store.size;

try {
  bucket.tryConsume(0);
} catch (e) {
  if (e instanceof EdgeBucketError) {
    const code: string = e.code;
  }
}

// Wrong usage must not type-check.
// @ts-expect-error tokens are numbers or BigInts
bucket.tryConsume('1');
// @ts-expect-error strategies are named
bucket.replaceConfiguration(config, 'SOMETIMES');
// @ts-expect-error keys are strings or bytes
store.tryConsume(42, 1);
// @ts-expect-error a probe's wait may be a BigInt past 2^53
const narrow: number = probe.nanosToWaitForRefill;
// @ts-expect-error buckets come from the builder
new Bucket();

export { ok, wait, diagnostics, verbose, replaced, observed, consumed, schedule, allowed, size, narrow };
