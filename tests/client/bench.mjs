// `make bench-client`: the same load through the pacing client and through reactive-only
// clients (seed 003's interceptor: send, and on a 429 wait Retry-After and retry), each against
// its own fresh server (edgebucket enforcing 20 tokens refilled over 2 s: 10 requests a second).
// The load is 3× that rate for 20 s (600 requests); every run goes until each request settles.
// Prints, per client: 429s, successes, failures, total time, goodput.
import { createClient } from 'edgebucket/client';
import { startServer } from './server.mjs';
import { offer } from './load.mjs';

const CAPACITY = 20;
const WINDOW = 2;
const RATE = CAPACITY / WINDOW;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reactive-only: on a 429, wait Retry-After (seconds, as RFC 9110 says) and retry. */
function reactive(maxRetries) {
  return async (url) => {
    for (let attempt = 0; ; attempt++) {
      const response = await fetch(url);
      if (response.status !== 429 || attempt >= maxRetries) return response;
      await response.arrayBuffer();
      await sleep(1000 * Number.parseInt(response.headers.get('retry-after') ?? '1', 10));
    }
  };
}

async function measure(name, makeSend) {
  const server = await startServer({ capacity: CAPACITY, window: WINDOW });
  const send = makeSend();
  const run = await offer(send, `${server.url}/api/items`, { rate: 3 * RATE, seconds: SECONDS, close: false });
  send.close?.();
  await server.close();
  const seconds = (run.finished - run.started) / 1000;
  const ok = run.statuses.filter((s) => s === 200).length;
  const allowed = CAPACITY + RATE * seconds;
  return {
    client: name,
    offered: run.offered,
    '429 seen by server': server.stats.rejected.length,
    succeeded: ok,
    failed: run.offered - ok,
    'total time (s)': Number(seconds.toFixed(1)),
    'goodput (req/s)': Number((ok / seconds).toFixed(2)),
    'goodput (% of allowed)': Number(((100 * ok) / allowed).toFixed(1)),
  };
}

console.log(`Load: ${3 * RATE} requests/s for ${SECONDS} s against a limit of ${RATE}/s (burst ${CAPACITY}); each run until every request settles.\n`);
const rows = [];
rows.push(await measure('edgebucket/client (pacing)', () => createClient({ share: false, maxQueue: Infinity })));
rows.push(await measure('reactive, 1 retry (seed 003)', () => reactive(1)));
rows.push(await measure('reactive, retries until success', () => reactive(Infinity)));
console.table(rows);
