// The JavaScript examples of the READMEs and docs/client.md, run as written against the installed
// package, so that what a newcomer copies works. Each file's `js` blocks are read from the file
// (the npm README from the installed package, as npm shows it), written into the scratch project
// and run by Node; checks appended after them print what they left, and the test compares it with
// what the examples' comments say. Examples that fetch `https://api.example` are pointed at a local
// server that sends draft-10 rate-limit headers and records what it was asked. docs/client.md's
// node-fetch fragment is not run: the project does not depend on node-fetch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { scratch, installed } from './scratch.mjs';

const root = path.resolve(import.meta.dirname, '../../..');
const EXAMPLE_ORIGIN = 'https://api.example';

/** The bodies of `file`'s ```js blocks, in order. */
function jsBlocks(file) {
  return [...fs.readFileSync(file, 'utf8').matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** The one block of `blocks` that contains `marker`. */
function blockWith(blocks, marker) {
  const found = blocks.filter((block) => block.includes(marker));
  assert.equal(found.length, 1, `one example contains ${JSON.stringify(marker)}`);
  return found[0];
}

/** A server answering every request 200 with a JSON body and a 50-per-5-s policy; `requests` records them. */
async function exampleServer(t) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}${body ? ` ${body}` : ''}`);
      res.writeHead(200, {
        'content-type': 'application/json',
        'ratelimit-policy': '"burst";q=50;w=5',
        'ratelimit': `"burst";r=${50 - requests.length};t=0`,
      });
      res.end('{"items":[]}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { origin: `http://127.0.0.1:${server.address().port}`, requests };
}

/** Runs `code` as an ES module in the scratch project; its output lines. */
async function run(name, code) {
  const file = path.join(scratch, `${name}.mjs`);
  fs.writeFileSync(file, code);
  const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: scratch, timeout: 60_000 });
  return stdout.trim().split('\n');
}

/** `code` with its example origin replaced by the local server's. */
function pointedAt(code, origin) {
  assert.ok(code.includes(EXAMPLE_ORIGIN), `the example fetches ${EXAMPLE_ORIGIN}`);
  return code.replaceAll(EXAMPLE_ORIGIN, origin);
}

test('the npm README\'s bucket, scheduler, listener, store and error examples run as written', async () => {
  const blocks = jsBlocks(path.join(installed, 'README.md'));
  const examples = blocks.filter((block) => !block.includes('edgebucket/client'));
  assert.equal(examples.length, 4, 'quick start, more operations, the store, errors');
  const lines = await run('readme-npm', `${examples.join('\n')}
console.log(JSON.stringify({
  probe: [probe.consumed, Object.keys(probe)],
  hourly: bucket.getDiagnostics().bandwidths[1].availableTokens,
  listener: [listener.consumed, listener.rejected],
  storeSize: store.size,
}));
`);
  const fields = ['consumed', 'remainingTokens', 'nanosToWaitForRefill', 'nanosToWaitForReset'];
  // The errors example logs the code of bucket.tryConsume(0).
  assert.deepEqual(lines, [
    'NON_POSITIVE_TOKENS',
    // The hourly limit (no refill within the hour) less 1 + 1 + 1 + 5 + 5 + 1 taken; the
    // listener saw the last one.
    JSON.stringify({ probe: [true, fields], hourly: 986, listener: [1, 0], storeSize: 1 }),
  ]);
});

test('the npm README\'s client example runs as written', async (t) => {
  const server = await exampleServer(t);
  const example = blockWith(jsBlocks(path.join(installed, 'README.md')), 'edgebucket/client');
  const lines = await run('readme-npm-client', `${pointedAt(example, server.origin)}
console.log(response.status, api.stats().responses);
`);
  assert.deepEqual(lines, ['200 1']);
  assert.deepEqual(server.requests, ['GET /items']);
});

test('README.md\'s JavaScript quick start runs as written', async (t) => {
  const server = await exampleServer(t);
  const blocks = jsBlocks(path.join(root, 'README.md'));
  const quickStart = blockWith(blocks, 'new BucketStore');
  const client = blockWith(blocks, 'edgebucket/client');
  const lines = await run('readme-root', `${quickStart}
console.log(JSON.stringify([bucket.getDiagnostics().bandwidths[1].availableTokens, store.size, store.getAvailableTokens('client-42')]));
`);
  // The hourly limit less the 1 and the 5 taken; the key's 100 (1 more each 600 ms) less 1.
  assert.deepEqual(lines, [JSON.stringify([994, 1, 99])]);
  assert.deepEqual(await run('readme-root-client', `${pointedAt(client, server.origin)}\nconsole.log(res.status);\n`), ['200']);
  assert.deepEqual(server.requests, ['GET /items']);
});

test('docs/client.md\'s fetch, ky and axios examples run as written', async (t) => {
  const server = await exampleServer(t);
  // ky and axios are the repository's devDependencies; the example imports them by name.
  for (const name of ['ky', 'axios']) {
    const link = path.join(scratch, 'node_modules', name);
    if (!fs.existsSync(link)) fs.symlinkSync(path.join(root, 'node_modules', name), link, 'dir');
  }
  const blocks = jsBlocks(path.join(root, 'docs/client.md'));
  const first = blockWith(blocks, 'const response = await api(');
  const libraries = blockWith(blocks, "import ky from 'ky'");
  assert.deepEqual(await run('client-doc-first', `${pointedAt(first, server.origin)}\nconsole.log(response.status);\n`), ['200']);
  assert.deepEqual(await run('client-doc-libraries', `${pointedAt(libraries, server.origin)}\nconsole.log('done');\n`), ['done']);
  assert.deepEqual(server.requests, ['GET /items', 'PUT /items/1 {"done":true}', 'GET /items', 'GET /items']);
});
