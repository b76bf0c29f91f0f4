// `make bench-worker`: load on the built worker with autocannon, bounded in time.
//
// The worker runs in workerd itself (node_modules/.bin/workerd, the runtime Cloudflare runs), on
// 127.0.0.1, with the Durable Object binding, SQLite-backed class and compatibility date of
// wrangler.toml, and its state in a fresh directory on tmpfs when there is one (/dev/shm):
// local disk fsyncs are not what Cloudflare's storage costs either. No Miniflare: its entry
// worker, which `wrangler dev` and the tests use, adds about a third to workerd's CPU per request.
//
// Every request is a service-API decision that admits and so writes its bucket (the costly path).
// Printed: decisions/s and latency for one key (one object: every decision serialized) and for
// many keys (10,000, or fewer where the open-file limit cannot hold them: below), at full load
// (10 connections) and at a fixed offered rate; then the same runs of a minimal JavaScript worker
// that calls a Durable Object over RPC, which does one SQL write: the ceiling of this machine and
// runtime for this architecture.
//
// Many keys in one local workerd process meet two limits Cloudflare's spread of objects over
// machines does not (docs/worker.md, "Measured"):
// - workerd caps SQLite's heap for the whole process, which about 3,200 live objects exhaust
//   (`SQLITE_NOMEM`); the config turns on workerd's own `increase-sqlite-hard-heap-limit` gate.
// - Each live object holds three files open (its database, -wal and -shm). workerd runs with its
//   soft open-file limit raised to the hard one, and the many-key runs use as many keys as that
//   holds, up to 10,000. When that is fewer, 10,000 keys also run at full load on as many
//   workerd processes as hold them (the limit is per process), key k's object in process k mod
//   their number, as Cloudflare spreads objects over machines. Their rate is not comparable with
//   one process's, which runs its JavaScript on one thread; their CPU per decision is.
// The many-key full-load run first touches every key once (each object created: printed as its
// own row), then again untimed until a pass is quick (workerd evicts an object idle for 10 s,
// which a slow first touch leaves its first keys), so that the timed run measures decisions, not
// object creation.
//
// Beside the rates, workerd's CPU time per decision (Linux): steadier than decisions/s on a shared
// machine, whose speed drifts by a quarter between runs, so the ratio of the two workers' CPU is
// the figure to compare builds.
//
//   node benches/worker_load.mjs [seconds per full-load run, default 10]
import autocannon from 'autocannon';
import wrangler from 'wrangler';
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../tests/worker/harness.mjs';

const root = path.resolve(import.meta.dirname, '..');
const seconds = Number(process.argv[2] ?? 10);
const toml = wrangler.unstable_getMiniflareWorkerOptions(path.join(root, 'wrangler.toml')).workerOptions;
const [binding, { className }] = Object.entries(toml.durableObjects)[0];
/** The service API key (`API_KEY`): service calls need one, and every decision checks it. */
const SERVICE_TOKEN = 'bench-service-token';
const POLICIES = {
  bench: { failure: 'closed', bandwidths: [{ id: 'b', capacity: 1e9, refill: { kind: 'greedy', tokens: 1e9, period: '1s' } }] },
};

// /proc/<pid>/stat counts CPU time in clock ticks.
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/**
 * The native workerd binary, as miniflare finds it (the `workerd` package's default export).
 * Not node_modules/.bin/workerd: without the package's install script (package.json's
 * `allowScripts`) that is a Node shim around the binary, whose pid counts none of its CPU and
 * which, killed, leaves workerd writing into the directory being removed.
 */
const WORKERD = createRequire(createRequire(import.meta.url).resolve('miniflare'))('workerd').default;

/** Files a live object holds open in local workerd: its SQLite database, -wal and -shm. */
const FILES_PER_OBJECT = 3;

/** The hard open-file limit (`ulimit -Hn`); Infinity when unlimited or unknown. */
const FILE_LIMIT = (() => {
  try {
    const limit = Number(execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }));
    return Number.isFinite(limit) && limit > 0 ? limit : Infinity;
  } catch {
    return Infinity;
  }
})();

/** Live objects one workerd process can hold: its open-file limit, with 1,000 files to spare for
 * sockets and the runtime. */
const PER_PROCESS = Math.max(100, Math.floor((FILE_LIMIT - 1_000) / FILES_PER_OBJECT));
/** Keys of the one-process many-key runs: 10,000, or as many as one process holds. */
const MANY_KEYS = Math.min(10_000, PER_PROCESS);
/** MANY_KEYS as the rows print it. */
const MANY = MANY_KEYS.toLocaleString('en');
/** workerd processes that together hold 10,000 live objects, when one cannot (else 1: no extra
 * run). The open-file limit is per process; each key's object lives in one of them. */
const SPREAD = Math.ceil(10_000 / PER_PROCESS);

/** Connections on `processes` workerd processes: 10, or the next multiple of their number, so
 * each process has as many. */
const connections = (processes) => processes * Math.ceil(10 / processes);

/** CPU time `pid` has used, in microseconds; null where /proc is missing. */
function cpuMicros(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS; // utime + stime
  } catch {
    return null;
  }
}

/** workerd serving `modules` (copied next to its config) with `bindings`; returns its URL. */
async function workerd(modules, bindings, objectClass) {
  const dir = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'edgebucket-bench-'));
  fs.mkdirSync(path.join(dir, 'objects'));
  for (const [name, from] of modules) fs.copyFileSync(from, path.join(dir, name));
  const port = await freePort();
  const kind = (name) => (name.endsWith('.wasm') ? 'wasm' : 'esModule');
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .main), (name = "objects", disk = (path = "${dir}/objects", writable = true))],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
  autogates = ["workerd-autogate-increase-sqlite-hard-heap-limit"],
);
const main :Workerd.Worker = (
  modules = [${modules.map(([name]) => `(name = "${name}", ${kind(name)} = embed "${name}")`).join(', ')}],
  compatibilityDate = "${toml.compatibilityDate}",
  bindings = [${bindings.join(', ')}],
  durableObjectNamespaces = [(className = "${objectClass}", uniqueKey = "bench-${objectClass}", enableSql = true)],
  durableObjectStorage = (localDisk = "objects"),
);`;
  fs.writeFileSync(path.join(dir, 'config.capnp'), config);
  // With the soft open-file limit raised to the hard one (see MANY_KEYS); `exec` keeps the pid
  // workerd's, whose CPU time is read.
  const raised = 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"';
  const child = spawn('sh', ['-c', raised, WORKERD, 'serve', path.join(dir, 'config.capnp')], {
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(`${url}/v1/policies`);
      break;
    } catch {
      if (i > 100) {
        child.kill();
        await exited;
        fs.rmSync(dir, { recursive: true, force: true });
        throw new Error('workerd did not start');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    urls: [url],
    cpu: () => cpuMicros(child.pid),
    stop: async () => {
      child.kill();
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `count` workerd processes as one server: each key's object lives in one of them (see
 * `cannon`), and the CPU time is theirs together. */
async function cluster(count, start) {
  const servers = [];
  const stop = () => Promise.all(servers.map((server) => server.stop()));
  try {
    for (let i = 0; i < count; i++) servers.push(await start()); // one by one: each takes a free port
  } catch (error) {
    await stop(); // those that started
    throw error;
  }
  return {
    urls: servers.flatMap((server) => server.urls),
    cpu: () => {
      const times = servers.map((server) => server.cpu());
      return times.includes(null) ? null : times.reduce((a, b) => a + b);
    },
    stop,
  };
}

/** A run of autocannon on `server`; the result has workerd's CPU µs per request added. */
async function load(server, options) {
  const before = server.cpu();
  const result = await cannon(server.urls, options);
  const after = server.cpu();
  const known = before !== null && after !== null && result.requests.total > 0;
  result.cpuPerRequest = known ? (after - before) / result.requests.total : null;
  return result;
}

/**
 * `amount` requests instead of `duration` seconds, when given; keys from the last down with
 * `reverse`. With several `urls` (processes), key k lives in process k mod their number: each
 * connection is on one of them (autocannon spreads connections over the urls in turn) and asks
 * for the keys of its own, each process's in turn.
 */
function cannon(urls, { keys, duration, rate, amount, reverse = false }) {
  const ports = urls.map((url) => Number(new URL(url).port || 80));
  const asked = ports.map(() => 0);
  const key = (port) => {
    const at = ports.indexOf(Number(port));
    const count = Math.ceil((keys - at) / urls.length); // keys of that process
    const nth = asked[at]++ % count;
    return at + urls.length * (reverse ? count - 1 - nth : nth);
  };
  return autocannon({
    url: urls,
    connections: connections(urls.length),
    ...(amount === undefined ? { duration } : { amount }),
    overallRate: rate,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${SERVICE_TOKEN}` },
        body: JSON.stringify({ policy: 'bench' }),
        setupRequest: (req) => ({ ...req, path: `/v1/buckets/bench-${keys}-${key(req.port)}/consume` }),
      },
    ],
  });
}

/** Admitted decisions per second: 2xx answers only. autocannon's own rate counts every answer,
 * the 503s of a failing object included. */
function decided(result) {
  return result['2xx'] / result.duration;
}

function row(label, result) {
  const l = result.latency;
  const failed = result.non2xx + result.errors + result.timeouts;
  console.log(
    `${label.padEnd(50)}${decided(result).toFixed(0).padStart(12)}${String(l.p50).padStart(8)}` +
      `${String(l.p99).padStart(8)}${String(l.max).padStart(8)}${String(failed).padStart(9)}` +
      `${(result.cpuPerRequest === null ? '-' : result.cpuPerRequest.toFixed(0)).padStart(12)}`,
  );
}

/**
 * Touches every key again, untimed, until a pass takes under 5 s: then every object is live when
 * the timed run begins. workerd evicts an object idle for 10 s, so a first touch slower than that
 * has lost its first keys, and a pass in the same order that is slow again loses them again: the
 * timed run would measure object creation. Passes alternate direction, each starting on the keys
 * the last one touched most recently.
 */
async function touchAll(server, keys) {
  for (let pass = 1, reverse = true; ; pass++, reverse = !reverse) {
    const result = await load(server, { keys, amount: keys, reverse });
    if (result.duration < 5) return;
    if (pass === 6) {
      const note = `a pass over ${keys} keys still took ${result.duration} s`;
      console.log(`(${note}: some objects are not live, and the full-load row includes their creation)`);
      return;
    }
  }
}

/**
 * The runs, in the same order for every worker started by `start`; returns the full-load results,
 * `{ one, many, spread }` (`spread` only when one process cannot hold 10,000 keys).
 */
async function scenarios(name, start) {
  const server = await start();
  const results = {};
  try {
    await load(server, { keys: 100, duration: 2 }); // warm up the isolate and the JIT
    results.one = await load(server, { keys: 1, duration: seconds });
    row(`${name}: 1 key, full load`, results.one);
    results.many = await manyKeys(`${name}: ${MANY} keys`, server, MANY_KEYS);
    await new Promise((resolve) => setTimeout(resolve, 12_000)); // idle objects are evicted after 10 s
    row(`${name}: 1 key, 1,000/s offered`, await load(server, { keys: 1, duration: seconds, rate: 1000 }));
    const rate = Math.round(MANY_KEYS / 40); // every key once in 40 s
    row(`${name}: ${MANY} keys, ${rate}/s offered`, await load(server, { keys: MANY_KEYS, duration: 40, rate }));
  } finally {
    await server.stop();
  }
  if (SPREAD > 1) results.spread = await spreadKeys(name, start);
  return results;
}

/** 10,000 keys on SPREAD processes at full load, after a first touch; returns that run. */
async function spreadKeys(name, start) {
  const server = await cluster(SPREAD, start);
  try {
    await load(server, { keys: 100, duration: 2 }); // warm up every process
    return await manyKeys(`${name}: 10,000 keys, ${SPREAD} processes`, server, 10_000);
  } finally {
    await server.stop();
  }
}

/** `keys` keys: each touched first (a row of its own), then at full load once every object is
 * live (see `touchAll`); returns the full-load run. */
async function manyKeys(label, server, keys) {
  row(`${label}, first touch`, await load(server, { keys, amount: keys }));
  await touchAll(server, keys);
  const result = await load(server, { keys, duration: seconds });
  row(`${label}, full load`, result);
  return result;
}

console.log(`workerd on 127.0.0.1, ${connections(1)} connections, ${seconds} s runs (40 s at a fixed rate for many keys: every key once)`);
if (SPREAD > 1) {
  console.log(
    `many keys: ${MANY} in one process, not 10,000: its hard open-file limit is ${FILE_LIMIT}, and each live ` +
      `object holds ${FILES_PER_OBJECT} files open; 10,000 keys on ${SPREAD} processes (key k's object in process ` +
      `k mod ${SPREAD}, as Cloudflare spreads objects over machines), ${connections(SPREAD)} connections shared among them`,
  );
}
console.log(
  `every decision admits and writes its bucket; decisions/s counts 2xx answers only; failed = non-2xx and socket ` +
    `errors; cpu = workerd's CPU µs per answered request`,
);
console.log(
  `${'run'.padEnd(50)}${'decisions/s'.padStart(12)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}${'max ms'.padStart(8)}` +
    `${'failed'.padStart(9)}${'cpu µs'.padStart(12)}`,
);
const edgebucket = () => workerd(
  [
    ['entry.js', path.join(root, 'build/entry.js')],
    ['index.js', path.join(root, 'build/index.js')],
    ['index_bg.wasm', path.join(root, 'build/index_bg.wasm')],
  ],
  [
    `(name = "POLICIES", json = ${JSON.stringify(JSON.stringify(POLICIES))})`,
    `(name = "API_KEY", text = "${SERVICE_TOKEN}")`,
    `(name = "${binding}", durableObjectNamespace = "${className}")`,
  ],
  className,
);
const ours = await scenarios('edgebucket', edgebucket);

// The ceiling: the least a worker can do per decision here (an RPC call to an object doing one
// SQL write), the architecture edgebucket uses.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgebucket-ceiling-'));
const script = path.join(dir, 'ceiling.js');
fs.writeFileSync(
  script,
  `import { DurableObject } from 'cloudflare:workers';
   export class Ceiling extends DurableObject {
     constructor(ctx, env) { super(ctx, env); this.sql = ctx.storage.sql; this.sql.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)"); }
     decide(body) { this.sql.exec("INSERT OR REPLACE INTO t VALUES (0, ?)", new TextEncoder().encode(body)); return body; }
   }
   export default { async fetch(request, env) {
     const key = new URL(request.url).pathname;
     const answer = await env.OBJECTS.get(env.OBJECTS.idFromName(key)).decide(await request.text());
     return new Response(answer, { headers: { "content-type": "application/json" } });
   } };`,
);
let ceiling;
try {
  const minimal = () => workerd([['ceiling.js', script]], ['(name = "OBJECTS", durableObjectNamespace = "Ceiling")'], 'Ceiling');
  ceiling = await scenarios('minimal JS', minimal);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
const ratio = (a, b) => (a && b ? `${(a / b).toFixed(2)}×` : '-');
console.log();
const pairs = [['1 key', ours.one, ceiling.one], [`${MANY} keys`, ours.many, ceiling.many]];
if (SPREAD > 1) pairs.push([`10,000 keys, ${SPREAD} processes`, ours.spread, ceiling.spread]);
for (const [label, edge, minimal] of pairs) {
  console.log(
    `${label}, full load, edgebucket / minimal JS: decisions/s ${ratio(decided(edge), decided(minimal))}, ` +
      `CPU per answered request ${ratio(edge.cpuPerRequest, minimal.cpuPerRequest)}`,
  );
}
