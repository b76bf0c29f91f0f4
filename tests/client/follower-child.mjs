// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: a follower's side of the
// tab protocol (js/client/tabs.js), this script playing the leading tab over a real channel.
// Prints the messages the leader received.
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const NAME = `follower-test-${process.pid}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
const demand = { scope: 'https://api.example', origin: 'https://api.example', cost: 1, bytes: 0 };

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
const atClose = await unanswered;
await sleep(200);
leader.close();
stepDown();
console.log(JSON.stringify({ late, granted: granted.ok, timersLeft, afterSilence: afterSilence.ticket?.id, atClose, received }));
