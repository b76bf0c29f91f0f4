// The npm package beside its peers, in ONE Node process (`make bench-js`, which runs
// `node --expose-gc benches/js/bench.mjs` on the built package in pkg/dist).
//
// Every limiter admits every request (capacities far above what the loops consume), so each
// measures its admitting path. Times are medians of several rounds of a plain loop, in ns per
// operation; ratios compare like with like (same clock where the peer lets us choose).
import zlib from 'node:zlib';
import { Bucket, BucketStore, BucketConfiguration } from '../../pkg/dist/entry-inline.js';
import * as raw from '../../pkg/dist/wasm/edgebucket.js';
import { wasmBase64 } from '../../pkg/dist/wasm/inline.js';
import { TokenBucket } from 'limiter';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import Bottleneck from 'bottleneck';

const ROUNDS = 7;
const N = 2_000_000;
const KEYS = 100_000;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (ns) => (ns >= 100_000 ? `${(ns / 1e6).toFixed(2)} ms` : `${ns.toFixed(1)} ns`);

async function measureAsync(fn, iterations) {
  for (let i = 0; i < iterations / 10; i++) await fn(i);
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await fn(i);
    rounds.push(Number(process.hrtime.bigint() - start) / iterations);
  }
  return median(rounds);
}

const BIG = 1_000_000_000_000;
// 10^12 tokens, refilled at 1 per nanosecond: no loop here can empty it.
const config = BucketConfiguration.builder().addLimit((l) => l.capacity(BIG).refillGreedy(1_000_000_000, '1s')).build();
// For keys: 10^12 tokens refilled at 1 per hour, so a used key is not full again (expired and
// swept) within the run, as rate-limiter-flexible keeps its keys for the hour.
const keyed = BucketConfiguration.builder().addLimit((l) => l.capacity(BIG).refillGreedy(1, '1h')).build();
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const results = {};
const row = (name, ns) => {
  results[name] = ns;
  console.log(`${name.padEnd(58)} ${fmt(ns).padStart(12)}`);
};

class FloatBucket {
  constructor(capacity, perMs) {
    this.capacity = capacity;
    this.tokens = capacity;
    this.perMs = perMs;
    this.last = Date.now();
  }
  tryConsume(n) {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.perMs);
    this.last = now;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}

console.log(`edgebucket JS benchmark — node ${process.version}, ${N.toLocaleString()} ops × ${ROUNDS} rounds, cases interleaved (median)\n`);
let sink = 0;
const float = new FloatBucket(BIG, BIG / 1000);
const bucket = Bucket.builder().withConfiguration(config).build();
const nanos = Bucket.builder().withConfiguration(config).withNanosecondPrecision().build();
let t = 0;
const manual = Bucket.builder().withConfiguration(config).withCustomTimeMeter(() => (t += 1000)).build();
const rawBucket = new raw.RawBucket(configRaw(), false, 0, 0);
let u = 0;
const limiter = new TokenBucket({ bucketSize: BIG, tokensPerInterval: BIG, interval: 'second' });
const store = new BucketStore({ configuration: keyed, maxKeys: Infinity });
const manyKeys = new BucketStore({ configuration: keyed, maxKeys: Infinity });
for (const key of keys) manyKeys.tryConsume(key, 1);

const sync = [
  ['one bucket', 'Date.now() alone', () => { sink += Date.now(); }],
  ['one bucket', 'performance.now() alone', () => { sink += performance.now(); }],
  ['one bucket', 'bare float JS bucket (Date.now)', () => { sink += float.tryConsume(1); }],
  ['one bucket', 'edgebucket bucket.tryConsume (Date.now)', () => { sink += bucket.tryConsume(1); }],
  ['one bucket', 'edgebucket bucket.tryConsume (performance.now)', () => { sink += nanos.tryConsume(1); }],
  ['one bucket', 'edgebucket bucket.tryConsume (manual clock: no clock read)', () => { sink += manual.tryConsume(1); }],
  ['one bucket', '  the wasm call alone (RawBucket, time given, refills)', () => { sink += rawBucket.tryConsume(1, (u += 1000)); }],
  ['one bucket', 'limiter TokenBucket.tryRemoveTokens (performance.now)', () => { sink += limiter.tryRemoveTokens(1); }],
  ['keyed', 'edgebucket store.tryConsume, 1 key', () => { sink += store.tryConsume('user:1', 1); }],
  ['keyed', `edgebucket store.tryConsume, ${KEYS / 1000}k keys`, (i) => { sink += manyKeys.tryConsume(keys[i % KEYS], 1); }],
];
// Interleaved rounds: a disturbance on a shared machine spreads over every case, not one.
const samples = sync.map(() => []);
for (const [, , fn] of sync) for (let i = 0; i < N / 10; i++) fn(i);
for (let r = 0; r < ROUNDS; r++) {
  sync.forEach(([, , fn], c) => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i++) fn(i);
    samples[c].push(Number(process.hrtime.bigint() - start) / N);
  });
}
let group = '';
sync.forEach(([g, name], c) => {
  if (g !== group) console.log(`${group ? '\n' : ''}— ${(group = g)} —`);
  row(name, median(samples[c]));
});
const rlf = new RateLimiterMemory({ points: BIG, duration: 3600 });
row('rate-limiter-flexible Memory consume, 1 key', await measureAsync(() => rlf.consume('user:1', 1), 200_000));
for (const key of keys) await rlf.consume(key, 1);
row(`rate-limiter-flexible Memory consume, ${KEYS / 1000}k keys`, await measureAsync((i) => rlf.consume(keys[i % KEYS], 1), 200_000));
const bottleneck = new Bottleneck({ maxConcurrent: null, minTime: 0 });
row('bottleneck schedule (per job, sequential)', await measureAsync(() => bottleneck.schedule(() => Promise.resolve()), 200));

console.log('\n— ratios —');
const ratio = (a, b) => `${(results[a] / results[b]).toFixed(2)}×`;
console.log(`tryConsume (Date.now) / bare float bucket                 ${ratio('edgebucket bucket.tryConsume (Date.now)', 'bare float JS bucket (Date.now)')}`);
console.log(`limiter (performance.now) / tryConsume (performance.now)  ${ratio('limiter TokenBucket.tryRemoveTokens (performance.now)', 'edgebucket bucket.tryConsume (performance.now)')}`);
console.log(`rate-limiter-flexible / store, 1 key                      ${ratio('rate-limiter-flexible Memory consume, 1 key', 'edgebucket store.tryConsume, 1 key')}`);
console.log(`rate-limiter-flexible / store, ${KEYS / 1000}k keys                  ${ratio(`rate-limiter-flexible Memory consume, ${KEYS / 1000}k keys`, `edgebucket store.tryConsume, ${KEYS / 1000}k keys`)}`);
console.log(`bottleneck / tryConsume                                   ${ratio('bottleneck schedule (per job, sequential)', 'edgebucket bucket.tryConsume (Date.now)')}`);
console.log(`manual-clock decision (no clock read, a refill per call)        ${fmt(results['edgebucket bucket.tryConsume (manual clock: no clock read)'])}, ${ratio('edgebucket bucket.tryConsume (manual clock: no clock read)', 'edgebucket bucket.tryConsume (Date.now)')} tryConsume (Date.now)`);

console.log('\n— size and memory —');
const wasm = Buffer.from(wasmBase64, 'base64'); // the very module this process runs
console.log(`wasm: ${(wasm.length / 1024).toFixed(1)} KB raw, ${(zlib.gzipSync(wasm, { level: 9 }).length / 1024).toFixed(1)} KB gzip`);

const MILLION = 1_000_000;
const memory = raw.wasmMemory();
const big = new BucketStore({ configuration: keyed, maxKeys: Infinity });
const before = memory.buffer.byteLength;
for (let i = 0; i < MILLION; i++) big.tryConsume(`user:${i}`, 1);
const grown = memory.buffer.byteLength - before;
let keyBytes = 0;
for (let i = 0; i < MILLION; i++) keyBytes += `user:${i}`.length;
if (big.size !== MILLION) throw new Error(`expected ${MILLION} keys, the store holds ${big.size}`);
console.log(`store at 10^6 keys: wasm memory grew ${(grown / 2 ** 20).toFixed(1)} MiB = ${(grown / MILLION).toFixed(1)} B/key, ${((grown - keyBytes) / MILLION).toFixed(1)} B/key besides the ${(keyBytes / MILLION).toFixed(1)} key bytes`);
big.free();

if (global.gc) {
  global.gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const flexible = new RateLimiterMemory({ points: BIG, duration: 3600 });
  for (let i = 0; i < MILLION; i++) await flexible.consume(`user:${i}`, 1);
  global.gc();
  const heap = process.memoryUsage().heapUsed - heapBefore;
  console.log(`rate-limiter-flexible at 10^6 keys: JS heap grew ${(heap / 2 ** 20).toFixed(1)} MiB = ${(heap / MILLION).toFixed(1)} B/key (keys included)`);
  sink += flexible ? 1 : 0;
} else {
  console.log('(run with --expose-gc for rate-limiter-flexible bytes per key)');
}
if (sink === -1) console.log(sink);
process.exit(0);

function configRaw() {
  return new raw.RawConfiguration(config.toJSON());
}
