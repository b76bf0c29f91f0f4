// Run in a child process by client.test.mjs: a client with default options (sharing on where
// Web Locks exist) sends a request, a second one waits and is aborted, and the script ends
// without close(). Nothing the client holds may keep the process alive after that.
import { createClient } from 'edgebucket/client';
import { startServer } from './server.mjs';

const server = await startServer({ capacity: 1, window: 3600 });
const client = createClient();
await (await client(`${server.url}/api/a`)).text();
const controller = new AbortController();
const waiting = client(`${server.url}/api/b`, { signal: controller.signal });
setTimeout(() => controller.abort(), 100);
const outcome = await waiting.then(() => 'sent', (error) => error.name);
await server.close();
console.log(JSON.stringify({ outcome, webLocks: typeof globalThis.navigator?.locks?.request === 'function' }));
