// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: which clients of one
// context share a model by default. Prints whether each holds a model of its own.
import { createClient } from 'edgebucket/client';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const first = createClient();
await sleep(100); // it takes the lead
const second = createClient();
const ownClock = createClient({ clock: () => 0 });
await sleep(100);
console.log(JSON.stringify({ first: first.model() !== null, second: second.model() !== null, ownClock: ownClock.model() !== null }));
for (const client of [first, second, ownClock]) client.close();
