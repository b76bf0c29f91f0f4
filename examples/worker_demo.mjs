// `make demo`: the edgebucket worker under `wrangler dev` (local workerd, Durable Object state in
// .wrangler/demo), a scripted client that prints each decision and its headers, the pacing client
// (edgebucket/client) sending a backlog through the gateway without a 429, a
// restart that shows the bucket survives, and a clean stop. Run `make worker-build` and
// `make package` first (make demo does).
//
// Each step checks what it says happened; if the worker did otherwise, the demo lists what and
// exits with status 1 (tests/demo runs it in `make test`).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createClient } from '../pkg/dist/client.js';

const root = path.resolve(import.meta.dirname, '..');
const stateDir = path.join(root, '.wrangler/demo');
const ADMIN = 'demo-admin-token';
const SERVICE = 'demo-service-token'; // the worker's API_KEY secret: service calls need it
const API_KEY = 'demo-api-key'; // a gateway user's X-API-Key
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** What went otherwise than the demo tells. */
const surprises = [];

/** Records (and prints, where it happened) a claim of the demo that did not hold. */
function expect(holds, claim) {
  if (holds) return;
  surprises.push(claim);
  console.log(`       NOT AS DESCRIBED: ${claim}`);
}

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The origin the gateway forwards to: answers every request with a short JSON line. */
async function startOrigin() {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ origin: 'hello from the origin', path: req.url }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

/**
 * `wrangler dev` on `port`, ready when the worker answers there (its policies, not merely any
 * 200: a server that took the port first must not pass for it); its own output goes to a log file.
 */
async function startWrangler(port, originUrl) {
  fs.mkdirSync(stateDir, { recursive: true });
  const log = fs.openSync(path.join(stateDir, 'wrangler.log'), 'a');
  const args = [
    'dev', '--local', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(await freePort()),
    '--persist-to', stateDir, '--show-interactive-dev-session=false',
    '--var', `ADMIN_TOKEN:${ADMIN}`, '--var', `API_KEY:${SERVICE}`, '--var', `ORIGIN:${originUrl}`, '--var', 'LOG_DECISIONS:false',
  ];
  const env = {
    ...process.env,
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_SEND_ERROR_REPORTS: 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_HIDE_BANNER: 'true',
  };
  const child = spawn(path.join(root, 'node_modules/.bin/wrangler'), args, { cwd: root, env, stdio: ['ignore', log, log], detached: true });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/v1/policies`, { headers: { authorization: `Bearer ${ADMIN}` } });
      if (r.ok && (await r.json().catch(() => ({}))).demo?.bandwidths) break;
    } catch {}
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`wrangler dev did not start; see ${stateDir}/wrangler.log`);
    await sleep(200);
  }
  return {
    stop: async () => {
      process.kill(-child.pid, 'SIGINT'); // wrangler and its workerd, as Ctrl-C would
      const stopped = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
      if (!stopped) process.kill(-child.pid, 'SIGKILL');
      fs.closeSync(log);
    },
  };
}

const pick = (r, names) =>
  names.map((n) => [n, r.headers.get(n)]).filter(([, v]) => v !== null).map(([n, v]) => `${n}: ${v}`);

function show(label, r, body) {
  const verdict = r.status === 200 ? 'allowed ' : r.status === 429 ? 'rejected' : `status ${r.status}`;
  console.log(`  ${label.padEnd(4)} ${r.status} ${verdict}  ${pick(r, ['RateLimit', 'Retry-After', 'EdgeBucket-Fallback']).join('   ')}`);
  if (body) console.log(`       ${body}`);
}

async function main() {
  // The origin first: holding its port, it cannot be handed the one chosen for wrangler.
  const origin = await startOrigin();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const adminHeaders = { authorization: `Bearer ${ADMIN}` };
  const post = (body) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SERVICE}` },
    body: JSON.stringify(body),
  });
  const gatewayKey = `gateway:api:apikey:${createHash('sha256').update(API_KEY).digest('hex').slice(0, 32)}`;

  console.log(`edgebucket demo: wrangler dev on ${base} (local workerd, Durable Object state in .wrangler/demo)`);
  let worker = await startWrangler(port, origin.url);
  try {
    for (const key of ['demo-user', gatewayKey]) {
      await fetch(`${base}/v1/buckets/${key}`, { method: 'DELETE', headers: adminHeaders });
    }

    console.log('\n1. Service API: POST /v1/buckets/demo-user/consume {"policy":"demo"}');
    const firstDecisionAt = Date.now();
    const first = await fetch(`${base}/v1/buckets/demo-user/consume`, post({ policy: 'demo' }));
    console.log(`   RateLimit-Policy: ${first.headers.get('RateLimit-Policy')}   (burst 5 refilled 2/s, 12 per minute)`);
    show('#1', first);
    const burst = [first.status];
    let retryAfter = 0;
    for (let i = 2; i <= 7; i++) {
      const r = await fetch(`${base}/v1/buckets/demo-user/consume`, post({ policy: 'demo' }));
      const body = await r.json();
      show(`#${i}`, r, r.status === 429 ? `violated-policies ${JSON.stringify(body['violated-policies'])}, waitMs ${body.waitMs}` : '');
      if (r.status === 429) {
        retryAfter = Number(r.headers.get('Retry-After'));
        expect(JSON.stringify(body['violated-policies']) === '["burst"]', `#${i} names "burst" as the violated policy`);
      }
      burst.push(r.status);
    }
    expect(burst.slice(0, 5).every((s) => s === 200), 'the first five (the burst) are allowed');
    // The burst refills 2 per second, so #6 and #7 would both pass only a second or more later.
    expect(burst.slice(5).includes(429) && retryAfter >= 1, '#6 or #7 is refused with a Retry-After');
    console.log(`   waiting ${retryAfter} s, as Retry-After says`);
    await sleep(retryAfter * 1000);
    const eighth = await fetch(`${base}/v1/buckets/demo-user/consume`, post({ policy: 'demo' }));
    show('#8', eighth);
    expect(eighth.status === 200, '#8, after waiting as Retry-After said, is allowed');

    console.log('\n2. Reserve: 3 tokens, waiting at most 5 s');
    const reserved = await fetch(`${base}/v1/buckets/demo-user/reserve`, post({ policy: 'demo', tokens: 3, maxWait: '5s' }));
    const reservation = await reserved.json();
    show('', reserved, `reserved: ${reservation.allowed}, proceed in ${reservation.waitMs} ms`);
    expect(reservation.allowed === true && reservation.waitMs > 0 && reservation.waitMs <= 5000, 'the reservation is granted, to proceed within 5 s');

    console.log('\n3. Gateway: GET /api/hello with X-API-Key, forwarded to a local origin (policy "api")');
    for (let i = 1; i <= 2; i++) {
      const r = await fetch(`${base}/api/hello`, { headers: { 'x-api-key': API_KEY } });
      const body = await r.text();
      show(`#${i}`, r, body);
      expect(r.status === 200 && body.includes('hello from the origin'), `gateway #${i} is forwarded to the origin`);
    }

    console.log('\n4. The pacing client (edgebucket/client) through the gateway: 45 requests queued at once,');
    console.log('   over four times the burst of "api" (10, then 5 per second): the client spaces them out');
    const pacingKey = 'demo-pacing-key';
    const pacingBucket = `gateway:api:apikey:${createHash('sha256').update(pacingKey).digest('hex').slice(0, 32)}`;
    await fetch(`${base}/v1/buckets/${pacingBucket}`, { method: 'DELETE', headers: adminHeaders });
    const paced = createClient({ share: false });
    const started = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: 45 }, () => paced(`${base}/api/hello`, { headers: { 'x-api-key': pacingKey } }).then((r) => r.status)),
    );
    const seconds = (Date.now() - started) / 1000;
    const count = (status) => statuses.filter((s) => s === status).length;
    const stats = paced.stats();
    console.log(`   ${count(200)} × 200 and ${count(429)} × 429 in ${seconds.toFixed(1)} s (the policy allows ${10 + Math.floor(5 * seconds)} in that time);`);
    const refused = count(429) === 0 ? 'none sent to be refused' : `yet ${count(429)} were refused`;
    console.log(`   ${stats.paced} requests were held back until the bucket had room, ${refused}`);
    expect(count(200) === 45, 'all 45 paced requests are allowed, none refused');
    expect(stats.paced > 0, 'the client held requests back');
    paced.close();

    console.log('\n5. Metrics of this isolate, GET /v1/metrics (Prometheus text):');
    const metrics = await (await fetch(`${base}/v1/metrics`, { headers: adminHeaders })).text();
    const counters = metrics.split('\n').filter((l) => l.startsWith('edgebucket_decisions_total'));
    for (const line of counters) console.log(`   ${line}`);
    expect(counters.some((l) => l.includes('outcome="rejected"')), 'the metrics count the rejected decisions');

    console.log('\n6. Restart wrangler dev: the bucket lives on in .wrangler/demo');
    const before = await (await fetch(`${base}/v1/buckets/demo-user`, { headers: adminHeaders })).json();
    await worker.stop();
    worker = await startWrangler(port, origin.url);
    const after = await (await fetch(`${base}/v1/buckets/demo-user`, { headers: adminHeaders })).json();
    const tokens = (s) => s.bandwidths.map((b) => `${b.name} ${b.available}/${b.capacity}`).join(', ');
    console.log(`   before the restart: ${tokens(before)}`);
    // The minute's interval refill comes a minute after the first decision; until then nothing may add to it.
    const withinTheMinute = Date.now() - firstDecisionAt < 60_000;
    const why = withinTheMinute ? "the greedy refill went on; the minute's tokens did not come back" : 'a minute has passed: both refilled';
    console.log(`   after it:           ${tokens(after)}   (${why})`);
    const perMinute = (s) => s.bandwidths.find((b) => b.name === 'per-minute')?.available;
    if (withinTheMinute) {
      expect(perMinute(before) !== undefined && perMinute(after) === perMinute(before), "the minute's tokens are the same after the restart");
    }
    const ninth = await fetch(`${base}/v1/buckets/demo-user/consume`, post({ policy: 'demo' }));
    show('#9', ninth);
    expect(ninth.status === 200, '#9, after the restart, is allowed');
  } finally {
    await worker.stop();
    origin.close();
  }
  console.log('\nwrangler dev stopped.');
  if (surprises.length > 0) {
    console.error(`\nThe worker did not do what the demo describes:\n${surprises.map((s) => `- ${s}`).join('\n')}`);
    process.exitCode = 1;
  }
}

await main();
