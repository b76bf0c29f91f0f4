// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: a follower's side of the
// tab protocol (js/client/tabs.js), this script playing the leading tab over a real channel.
// Prints the messages the leader received.
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const NAME = isMainThread ? `follower-test-${process.pid}` : workerData.name;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const demand = { scope: 'https://api.example', origin: 'https://api.example', cost: 1, bytes: 0 };

if (!isMainThread) {
  // A worker thread that asks, closes before the answer and has nothing left to do: it must live
  // until the grant comes back, to hand it back.
  const follower = sharedPacer(NAME, () => {
    throw new Error('the follower must not make a pacer while another context leads');
  });
  const asked = follower.acquire(demand);
  await sleep(10);
  follower.close();
  await asked;
  await new Promise(() => {}); // nothing left: the thread ends when its event loop is empty
}

// Lead first, so the shared pacer below follows.
const stepDown = await holdLeaderLock(NAME);

const leader = new BroadcastChannel(`edgebucket:${NAME}`);
const received = [];
let nextTicket = 1;
let delay = 0;
leader.onmessage = ({ data }) => {
  received.push(data.type === 'acquire' ? 'acquire' : `${data.type} ${data.ticket.id}`);
  if (data.type !== 'acquire') return;
  const ticket = { id: `L.${nextTicket++}`, scope: data.demand.scope, origin: data.demand.origin };
  setTimeout(() => leader.postMessage({ type: 'grant', to: data.from, id: data.id, grant: { ok: true, ticket } }), delay);
};

const follower = sharedPacer(NAME, () => {
  throw new Error('the follower must not make a pacer while another context leads');
});

delay = 400; // past the follower's 250 ms: it stops waiting, and the grant comes too late
const late = await follower.acquire(demand);
await sleep(300);
delay = 0;
const granted = await follower.acquire(demand); // L.2, still out when the follower closes
const answered = await follower.acquire(demand); // L.3, answered
// Both were answered at once: no 250 ms timer of theirs may be left to hold the process.
const timersLeft = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
follower.observe(answered.ticket, 200, { limits: [], cached: false });
// This leader sends no heartbeat: after 3.5 s of silence an idle follower still asks it first.
await sleep(3500);
const afterSilence = await follower.acquire(demand); // L.4, still out at close
await sleep(50);
// A question still unanswered at close (a component that sends and unmounts at once): its grant,
// L.5, comes after the close and must be handed back, or the leader would hold it (a probe, a
// concurrency slot) until it expires.
delay = 100;
const unanswered = follower.acquire(demand);
follower.close();
follower.close(); // a second close must not cut the wait for L.5 short
const atClose = await unanswered;
await sleep(200);
// The same from a worker thread that ends after closing (L.6, granted 100 ms after the question).
const thread = new Worker(new URL(import.meta.url), { workerData: { name: NAME } });
await new Promise((resolve) => thread.once('exit', resolve));
await sleep(50);
leader.close();
stepDown();
console.log(JSON.stringify({ late, granted: granted.ok, timersLeft, afterSilence: afterSilence.ticket?.id, atClose, received }));
