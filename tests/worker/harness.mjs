// Starts the built worker (build/entry.js) in real workerd through Miniflare's API, with
// the Durable Object binding, migration and compatibility date of wrangler.toml and the test's
// own [vars]. Nothing is mocked: requests go over HTTP to workerd on 127.0.0.1.
import { Miniflare } from 'miniflare';
import wrangler from 'wrangler';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import net from 'node:net';
import readline from 'node:readline';
import { createHash } from 'node:crypto';

const root = path.resolve(import.meta.dirname, '../..');
const fromToml = wrangler.unstable_getMiniflareWorkerOptions(path.join(root, 'wrangler.toml')).workerOptions;

export const ADMIN = 'test-admin-token';
/** The service API key (`API_KEY`): without one the service endpoints are disabled. */
export const SERVICE = 'test-service-key';

/** Options for Miniflare: wrangler.toml's Durable Objects and dates; its [vars] only when
 * `tomlVars` is set, else just `vars` (and the admin and service tokens). `script`: another
 * entry module than build/entry.js (wrangler's bundle of it). */
function options({ vars = {}, tomlVars = false, persist, port = 0, durableObjects = fromToml.durableObjects, script }) {
  return {
    name: 'edgebucket',
    modules: true,
    scriptPath: script ?? path.join(root, 'build/entry.js'),
    // Module names are paths below this directory, which must hold the script.
    modulesRoot: script ? path.dirname(script) : undefined,
    modulesRules: [
      { type: 'ESModule', include: ['**/*.js'] },
      { type: 'CompiledWasm', include: ['**/*.wasm'] },
    ],
    compatibilityDate: fromToml.compatibilityDate,
    compatibilityFlags: fromToml.compatibilityFlags,
    durableObjects,
    durableObjectsPersist: persist ?? false,
    bindings: defined({ ...(tomlVars ? fromToml.bindings : {}), ADMIN_TOKEN: ADMIN, API_KEY: SERVICE, ...vars }),
    host: '127.0.0.1',
    port,
  };
}

/** `object` without its undefined entries (a var set to undefined is unset). */
const defined = (object) => Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined));

/**
 * A running worker: `call(path, init)` fetches from it over HTTP, `logs` holds the JSON lines it
 * printed (`await logged(predicate, count)` waits for them), `errors` the lines of its stderr,
 * `stop()` ends workerd.
 */
export async function start(config = {}) {
  const logs = [];
  const errors = [];
  const { host, port, durableObjectsPersist, ...worker } = options(config);
  const mf = new Miniflare({
    host,
    port,
    durableObjectsPersist,
    // `neighbours`: more workers beside this one, for bindings that point into them.
    workers: [worker, ...(config.neighbours ?? [])],
    handleRuntimeStdio(stdout, stderr) {
      readline.createInterface({ input: stdout }).on('line', (line) => {
        if (line.startsWith('{')) logs.push(JSON.parse(line));
      });
      readline.createInterface({ input: stderr }).on('line', (line) => errors.push(line));
    },
  });
  // A runtime that fails to start is disposed of: left running, its handles keep the test
  // process alive after the failure, until CI's time limit.
  const url = await mf.ready.catch(async (error) => {
    await mf.dispose().catch(() => {});
    throw new Error(`${error.message}\n${errors.join('\n')}`, { cause: error });
  });
  return {
    mf,
    url,
    logs,
    errors,
    /**
     * The log lines matching `predicate`, once there are at least `count`: workerd prints a
     * decision's line as it answers, and the line can reach us after the answer does.
     */
    async logged(predicate, count = 1) {
      for (const deadline = Date.now() + 5000; ; await sleep(20)) {
        const lines = logs.filter(predicate);
        if (lines.length >= count) return lines;
        if (Date.now() > deadline) throw new Error(`${lines.length} of ${count} expected log lines after 5 s`);
      }
    },
    call: (p, init) => fetch(new URL(p, url), init),
    stop: () => mf.dispose(),
  };
}

/**
 * Sends `head` (request line and headers, CRLF-separated, without the blank line) and `body` over
 * a raw socket, for requests fetch refuses to make (a GET with a body, a WebSocket upgrade).
 * Resolves with the status code and the head of the final answer (after any `100 Continue`).
 */
export function rawRequest(url, head, body = '') {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`${head}\r\nHost: ${hostname}:${port}\r\n\r\n${body}`));
    let received = '';
    socket.on('data', (data) => {
      received += data.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (/^HTTP\/1\.1 100 /.test(received)) {
        received = received.slice(end + 4); // interim: the answer follows
        return;
      }
      socket.destroy();
      resolve({ status: Number(received.split(' ')[1]), head: received.slice(0, end) });
    });
    socket.on('error', reject);
  });
}

/** A port that was free a moment ago, to restart workerd on the same address. */
export async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh directory for Durable Object state that survives a restart; removed at exit. */
export function tempDir(prefix = 'edgebucket-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** JSON request helpers: `post` carries the service token unless `headers` name another. */
export const post = (body, headers = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${SERVICE}`, ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});
export const admin = (init = {}) => ({ ...init, headers: { ...(init.headers ?? {}), authorization: `Bearer ${ADMIN}` } });

/** A policy in the core's schema plus policy fields, for `vars.POLICIES`. */
export const greedy = (id, capacity, tokens, period) => bandwidth(id, capacity, 'greedy', tokens, period);
export const intervally = (id, capacity, tokens, period) => bandwidth(id, capacity, 'intervally', tokens, period);
const bandwidth = (id, capacity, kind, tokens, period) =>
  defined({ id, capacity, refill: { kind, tokens, period } });

/** A local origin server that echoes what it received; `requests` records them. */
export async function origin() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, body });
      if (req.url === '/not-an-upgrade') {
        // Switches protocols on a request that asked for no upgrade: a 101 without a WebSocket.
        req.socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\n');
        return;
      }
      if (req.url === '/cached' && req.headers['if-none-match'] === '"v1"') {
        // Not modified: no body, but the Content-Length of the representation it stands for
        // (RFC 9110 §8.6), which a proxy that expected a body would wait for.
        res.writeHead(304, { etag: '"v1"', 'content-length': '12' });
        res.end();
        return;
      }
      // `/status/NNN` answers with that status, valid or not (Node writes any three digits), and
      // rate-limit headers of its own, which it exposes; `/redirect?to=URL` answers 302 to URL, where
      // `{self}` stands for this server's own URL; `/draft7` sends express-rate-limit's draft-7
      // fields (`RateLimit` a Dictionary, not a List); `/hop-by-hop` sends hop-by-hop headers.
      const status = /^\/status\/(\d{3})$/.exec(req.url)?.[1];
      const to = req.url.startsWith('/redirect?') && new URLSearchParams(req.url.split('?')[1]).get('to');
      res.writeHead(to ? 302 : Number(status ?? 200), {
        'content-type': 'application/json',
        'x-origin': 'yes',
        'access-control-expose-headers': status ? 'X-Origin, ratelimit' : 'X-Origin',
        ...(to ? { location: to.replace('{self}', url) } : {}),
        ...(status ? { 'ratelimit-policy': '"origin";q=100;w=60', ratelimit: '"origin";r=7;t=0' } : {}),
        ...(req.url === '/draft7' ? { 'ratelimit-policy': '100;w=60', ratelimit: 'limit=100, remaining=99, reset=60' } : {}),
        ...(req.url === '/hop-by-hop' ? { connection: 'keep-alive', 'keep-alive': 'timeout=5', 'proxy-connection': 'keep-alive', 'x-keep': 'yes' } : {}),
      });
      res.end(JSON.stringify({ method: req.method, url: req.url, body }));
    });
  });
  // WebSocket upgrades are accepted (the RFC 6455 handshake) and recorded; nothing is sent after.
  server.on('upgrade', (req, socket) => {
    requests.push({ method: req.method, url: req.url, headers: req.headers, upgrade: true });
    const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests, close: () => new Promise((r) => server.close(r)) };
}
