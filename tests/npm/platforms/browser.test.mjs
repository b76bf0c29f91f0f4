// The package in real headless Chromium (Debian's, driven by playwright-core), from a page
// served on 127.0.0.1; the import map follows the package's "browser" export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { scratch, manifest, scenarioSource, expected } from './scratch.mjs';

const types = { '.js': 'text/javascript', '.html': 'text/html', '.wasm': 'application/wasm' };

function serve(files) {
  const server = http.createServer((request, response) => {
    const url = new URL(request.url, 'http://127.0.0.1');
    const inline = files[url.pathname];
    const file = path.join(scratch, path.normalize(url.pathname));
    if (inline === undefined && (!file.startsWith(scratch) || !fs.existsSync(file))) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': types[path.extname(url.pathname)] ?? 'text/plain' });
    response.end(inline ?? fs.readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('a bucket scenario runs in headless Chromium', async (t) => {
  const entry = manifest.exports['.'].browser.replace(/^\.\//, '/node_modules/edgebucket/');
  const page = `<!doctype html>
<script type="importmap">${JSON.stringify({ imports: { edgebucket: entry } })}</script>
<script type="module">
  import * as edgebucket from 'edgebucket';
  import { scenario } from '/scenario.js';
  scenario(edgebucket).then((r) => { window.result = r; }, (e) => { window.result = { failed: String(e) }; });
</script>`;
  const server = await serve({ '/index.html': page, '/scenario.js': scenarioSource, '/favicon.ico': '' });
  t.after(() => server.close());
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1'],
  });
  t.after(() => browser.close());
  const tab = await browser.newPage();
  const errors = [];
  tab.on('pageerror', (e) => errors.push(String(e)));
  tab.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await tab.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  await tab.waitForFunction(() => window.result !== undefined, null, { timeout: 20_000 }).catch((e) => assert.fail(`${e.message}: ${errors.join('; ')}`));
  const result = await tab.evaluate(() => window.result);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, expected);
  assert.equal(await tab.evaluate(() => navigator.userAgent.includes('HeadlessChrome')), true);
});
