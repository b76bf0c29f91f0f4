// Real headless Chromium (Debian's, driven by playwright-core): pages load edgebucket/client
// from the installed package with no bundler and no import map, and call the real Node server.
// Two tabs of one origin share one budget (Web Locks leader + BroadcastChannel): together, at
// 3× the allowed rate, they must stay within the server's limit with no 429 at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startServer } from './server.mjs';
import { devImport } from './helpers.mjs';

const playwright = await devImport('playwright-core');
const chromium = playwright.chromium ?? playwright.default.chromium;
const dist = path.join(path.dirname(createRequire(import.meta.url).resolve('edgebucket/package.json')), 'dist');

/** The package's files, served under /dist/ as a plain static server would. */
function packageFiles() {
  const files = {};
  for (const dir of ['', 'wasm']) {
    for (const name of fs.readdirSync(path.join(dist, dir))) {
      if (name.endsWith('.js')) files[`/dist/${dir ? `${dir}/` : ''}${name}`] = { type: 'text/javascript', body: fs.readFileSync(path.join(dist, dir, name)) };
    }
  }
  return files;
}

// The page's load: `rate` requests a second for `seconds`, through one client per tab.
const PAGE = `<!doctype html><meta charset="utf-8"><title>edgebucket client</title>
<script type="module">
import { createClient } from '/dist/client.js';
window.load = async ({ api, rate, seconds, share }) => {
  const client = createClient({ share, maxQueue: Infinity });
  const statuses = [];
  const pending = [];
  const started = performance.now();
  let offered = 0;
  let leading = false;
  while (offered < rate * seconds) {
    leading ||= client.model() !== null;
    const due = Math.min(Math.floor(((performance.now() - started) * rate) / 1000) + 1, rate * seconds);
    for (; offered < due; offered++) {
      pending.push(client(api).then((r) => statuses.push(r.status), (e) => statuses.push(e.code ?? e.name)));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000 / rate / 2));
  }
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + seconds * 1000 - performance.now())));
  client.close();
  await Promise.all(pending);
  return { statuses, stats: client.stats(), leading };
};
// A lone tab's first request, made at once as a page does on load: how it was paced, and when.
window.first = async ({ api, share }) => {
  const reasons = [];
  const client = createClient({ share, hooks: { paced: [(event) => reasons.push(event.reason)] } });
  const started = performance.now();
  const response = await client(api);
  const tookMs = performance.now() - started;
  const { paced } = client.stats();
  client.close();
  return { status: response.status, tookMs, paced, reasons };
};
window.ready = true;
</script>`;

async function launch(t) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1'],
  });
  t.after(() => browser.close());
  return browser.newContext();
}

async function open(context, url, errors) {
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20_000 });
  return page;
}

test('two tabs share one budget: together at 3× the rate, no 429', async (t) => {
  const CAPACITY = 10;
  const RATE = 10; // capacity 10 refilled over 1 s
  const SECONDS = 8;
  const server = await startServer({ capacity: CAPACITY, window: 1, files: { '/': { type: 'text/html', body: PAGE }, ...packageFiles() } });
  t.after(() => server.close());
  const context = await launch(t);
  const errors = [];
  const tabs = [await open(context, `${server.url}/`, errors), await open(context, `${server.url}/`, errors)];
  const load = { api: `${server.url}/api/items`, rate: (3 * RATE) / 2, seconds: SECONDS, share: 'tabs-test' };
  const results = await Promise.all(tabs.map((tab) => tab.evaluate((options) => window.load(options), load)));
  const admitted = server.stats.admitted.length;
  const allowed = CAPACITY + RATE * SECONDS;
  t.diagnostic(`admitted ${admitted} of ~${allowed} allowed, rejected ${server.stats.rejected.length}; ` +
    results.map((r, i) => `tab ${i + 1}${r.leading ? ' (leader)' : ''}: ${r.statuses.filter((s) => s === 200).length} × 200`).join(', '));
  assert.deepEqual(errors, []);
  assert.equal(server.stats.rejected.length, 0, 'the server rejected nothing');
  for (const result of results) {
    assert.ok(result.statuses.every((s) => s === 200 || s === 'CLOSED'), JSON.stringify([...new Set(result.statuses)]));
    assert.ok(result.statuses.filter((s) => s === 200).length > 0, 'both tabs were served');
  }
  assert.deepEqual(results.map((r) => r.leading).sort(), [false, true], 'one tab led, the other followed');
  // Sharing costs a message per request, not the budget: most of it is used.
  assert.ok(admitted >= 0.8 * allowed, `admitted ${admitted} of ${allowed}`);
});

test('one tab, cross-origin: with Access-Control-Expose-Headers it paces; without, it learns from 429s', async (t) => {
  const page = await startServer({ files: { '/': { type: 'text/html', body: PAGE }, ...packageFiles() } });
  t.after(() => page.close());
  const exposed = await startServer({ capacity: 10, window: 1, cors: true, expose: true });
  t.after(() => exposed.close());
  const hidden = await startServer({ capacity: 10, window: 1, cors: true, expose: false });
  t.after(() => hidden.close());
  const context = await launch(t);
  const errors = [];
  // Another port is another origin: the page's server is not the API's.
  const tab = await open(context, `${page.url}/`, errors);
  const run = (server, seconds) => tab.evaluate((options) => window.load(options), { api: `${server.url}/api/x`, rate: 30, seconds, share: false });
  const paced = await run(exposed, 4);
  assert.equal(exposed.stats.rejected.length, 0, 'headers visible: no 429');
  assert.ok(paced.statuses.includes(200));
  const learned = await run(hidden, 8);
  t.diagnostic(`exposed: ${exposed.stats.admitted.length} admitted, 0 rejected; hidden: ${hidden.stats.admitted.length} admitted, ${hidden.stats.rejected.length} rejected`);
  assert.ok(hidden.stats.rejected.length > 0, 'headers hidden: the client had to learn from 429s');
  // At 3× demand a reactive client meets two 429s per success; learning must do far better.
  assert.ok(hidden.stats.rejected.length < hidden.stats.admitted.length, 'and learned');
  assert.ok(learned.statuses.includes(200));
  assert.deepEqual(errors, []);
});

test('a lone tab\'s first request goes at once: the tab that wins the lead answers its own waiting question', async (t) => {
  const server = await startServer({ capacity: 10, window: 1, files: { '/': { type: 'text/html', body: PAGE }, ...packageFiles() } });
  t.after(() => server.close());
  const context = await launch(t);
  const errors = [];
  const tab = await open(context, `${server.url}/`, errors);
  // Alone first, so that both find the wasm compiled. Browsers grant a Web Lock in a later task,
  // after the first request has asked for a leader.
  const alone = await tab.evaluate((options) => window.first(options), { api: `${server.url}/api/first`, share: false });
  const shared = await tab.evaluate((options) => window.first(options), { api: `${server.url}/api/first`, share: 'first-test' });
  t.diagnostic(`first request: ${shared.tookMs.toFixed(1)} ms sharing, ${alone.tookMs.toFixed(1)} ms alone`);
  assert.deepEqual(errors, []);
  assert.equal(shared.status, 200);
  assert.deepEqual(shared.reasons, [], 'never told to wait for a leader');
  assert.equal(shared.paced, 0);
  assert.ok(shared.tookMs < 200, `not held for the 250 ms a question waits for an answer: ${shared.tookMs} ms`);
});
