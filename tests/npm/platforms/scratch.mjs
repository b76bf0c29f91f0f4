// The scratch project into which tests/npm/run.sh installed the packed tarball.
import path from 'node:path';
import fs from 'node:fs';

export const scratch = process.env.EDGEBUCKET_SCRATCH;
if (!scratch || !fs.existsSync(path.join(scratch, 'node_modules/edgebucket/package.json'))) {
  throw new Error('EDGEBUCKET_SCRATCH must name a project with the edgebucket tarball installed (see tests/npm/run.sh)');
}
export const installed = path.join(scratch, 'node_modules/edgebucket');
export const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));

/** The scenario every platform runs: returns what it saw, for the test to compare with `expected`. */
export const scenarioSource = `
export async function scenario({ Bucket, BucketStore, BucketConfiguration, EdgeBucketError }) {
  const MS = 1_000_000;
  let t = 0;
  const bucket = Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(10, '1s').id('burst')).withCustomTimeMeter(() => t).build();
  const seen = { first: bucket.tryConsume(10), second: bucket.tryConsume(1) };
  t = 150 * MS;
  seen.probe = bucket.tryConsumeAndReturnRemaining(2);
  seen.available = bucket.getAvailableTokens();
  try { bucket.tryConsume(0); } catch (e) { seen.error = [e instanceof EdgeBucketError, e.code]; }
  const store = new BucketStore({ configuration: BucketConfiguration.builder().addLimit((l) => l.capacity(2).refillGreedy(2, '1s')).build() });
  seen.store = [store.tryConsume('a', 2), store.tryConsume('a', 1), store.tryConsume('b', 1), store.size];
  const real = Bucket.builder().addLimit((l) => l.capacity(1).refillGreedy(1, '40ms')).build();
  real.tryConsume(1);
  const started = Date.now();
  await real.asScheduler().consume(1);
  seen.waitedEnough = Date.now() - started >= 35;
  return seen;
}
`;

export const expected = {
  first: true,
  second: false,
  probe: { consumed: false, remainingTokens: 1, nanosToWaitForRefill: 50_000_000, nanosToWaitForReset: 850_000_000 },
  available: 1,
  error: [true, 'NON_POSITIVE_TOKENS'],
  store: [true, false, true, 2],
  waitedEnough: true,
};
