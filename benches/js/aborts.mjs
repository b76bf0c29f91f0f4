// The scheduler when many queued waits end early (`make bench-js` runs it after bench.mjs, on the
// built package in pkg/dist). A wait that ends unserved moves the waits behind it up, a pass over
// them; see docs/npm-package.md, "Abort". Three cases, each on a fresh bucket whose waits of one
// token are queued behind an empty bucket refilling 1 per second:
// - front first: waits aborted in the order they came, one per task (clients giving up in turn);
// - timeouts: every wait carries AbortSignal.timeout(2000), and all end together;
// - one: a single abort at the front of a long queue, the longest the event loop is held.
import { Bucket } from '../../pkg/dist/entry-inline.js';

function queued(n, signal) {
  const bucket = Bucket.builder().addLimit((l) => l.capacity(10).refillGreedy(1, '1s')).build();
  bucket.tryConsume(10);
  const scheduler = bucket.asScheduler();
  const controllers = [];
  const settled = [];
  for (let i = 0; i < n; i++) {
    const controller = new AbortController();
    controllers.push(controller);
    settled.push(scheduler.consume(1, { signal: signal?.() ?? controller.signal }).catch((e) => e.name));
  }
  return { bucket, controllers, settled };
}

const nextTask = () => new Promise((resolve) => setImmediate(resolve));

async function frontFirst(n) {
  const { controllers, settled } = queued(n);
  const started = performance.now();
  for (const controller of controllers) {
    controller.abort();
    await nextTask();
  }
  await Promise.all(settled);
  return `${(performance.now() - started).toFixed(0)} ms`;
}

async function timeouts(n) {
  const { settled } = queued(n, () => AbortSignal.timeout(2000));
  const started = performance.now();
  const names = await Promise.all(settled);
  const late = performance.now() - started - 2000;
  const timedOut = names.filter((name) => name === 'TimeoutError').length;
  return `${timedOut} timed out, the last ${late.toFixed(0)} ms after the 2 s`;
}

async function one(n) {
  const { controllers, settled } = queued(n);
  const started = performance.now();
  controllers[0].abort();
  await nextTask();
  const held = performance.now() - started;
  for (const controller of controllers) controller.abort();
  await Promise.all(settled);
  return `${held.toFixed(1)} ms`;
}

console.log('scheduler, waits ending early (event-loop time)');
for (const n of [1_000, 4_000]) console.log(`  front first, ${n} waits: ${await frontFirst(n)}`);
console.log(`  timeouts, 4000 waits: ${await timeouts(4_000)}`);
console.log(`  one abort in front of 40000 waits: ${await one(40_000)}`);
