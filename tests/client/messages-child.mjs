// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: messages a context cannot
// read (another version of the package on the channel, a bug) neither end the process nor settle
// a question with something the queue cannot read. Prints what the leader and a follower
// answered after them.
import * as engine from 'edgebucket';
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const { Pacer } = await source('pacer.js');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const demand = { scope: 'https://api.example', origin: 'https://api.example', cost: 1, bytes: 0 };
const makePacer = () => new Pacer({ engine, now: Date.now, random: () => 0, jitter: 0 });
const until = async (condition) => {
  while (!condition()) await sleep(10);
};
let reported = 0;
const said = new Set();
/** How many of the errors reported are the leader's own refusal of a demand (not a pacer's throw). */
let refused = 0;
console.error = (what, error) => {
  reported += 1;
  said.add(what);
  if (error?.message === 'an acquire without a demand it can read') refused += 1;
};

/** A real leader, sent messages it cannot read, then a question it can. */
async function leaderSide() {
  const name = `messages-leader-${process.pid}`;
  const leader = sharedPacer(name, makePacer);
  await until(() => leader.leading);
  const other = new BroadcastChannel(`edgebucket:${name}`);
  const grants = [];
  other.onmessage = ({ data }) => {
    if (data.type === 'grant') grants.push(data.id);
  };
  const unreadable = [{ type: 'acquire', from: 'x', id: 1 }, { type: 'acquire', from: 'x', id: 3, demand: {} }, { type: 'acquire', from: 'x', id: 4, demand: { ...demand, cost: '1' } }, { type: 'observe' }, { type: 'observe', ticket: { id: 'x.1' } }, { type: 'release' }, { type: 'refund', ticket: null }];
  // Each field of a demand on its own: a scope without an origin or the other way round, or no byte count.
  for (const [id, missing] of [[5, 'origin'], [6, 'bytes'], [12, 'scope']]) unreadable.push({ type: 'acquire', from: 'x', id, demand: { ...demand, [missing]: undefined } });
  // A demand that is no object: a pacer asked for a string would grant a scope named "undefined".
  for (const [id, odd] of [[13, null], [14, 'https://api.example']]) unreadable.push({ type: 'acquire', from: 'x', id, demand: odd });
  // Costs and byte counts the client never makes: a pacer would grant a cost below 1 for free.
  for (const [id, odd] of [[7, { cost: 0 }], [8, { cost: -1 }], [9, { cost: 1.5 }], [10, { bytes: -1 }], [11, { bytes: 0.5 }]]) {
    unreadable.push({ type: 'acquire', from: 'x', id, demand: { ...demand, ...odd } });
  }
  // Not even objects: no version of the package sends them, and they are not reported. Nor are
  // other leaders' messages, which a leader ignores (a predecessor's final state after the lock).
  for (const message of [null, 5, 'acquire']) other.postMessage(message);
  for (const type of ['state', 'leader', 'changed', 'grant']) other.postMessage({ type, state: {}, final: true, epoch: 1, from: 'x', to: 'x', id: 1, grant: { ok: false, wait: 1 } });
  for (const message of unreadable) other.postMessage(message);
  other.postMessage({ type: 'acquire', from: 'x', id: 2, demand });
  await sleep(100);
  other.close();
  leader.close();
  return grants;
}

/** A real follower, answered first with grants it cannot read. */
async function followerSide() {
  const name = `messages-follower-${process.pid}`;
  const stepDown = await holdLeaderLock(name);
  const leader = new BroadcastChannel(`edgebucket:${name}`);
  const handedBack = [];
  leader.onmessage = ({ data }) => {
    if (data.type === 'refund') handedBack.push(data.ticket ?? null);
    if (data.type !== 'acquire') return;
    for (const message of [null, 5, 'grant']) leader.postMessage(message);
    for (const grant of [undefined, null, { ok: true }, { ok: false }, { ok: true, ticket: { id: 1 } }, { wait: 10 }]) leader.postMessage({ type: 'grant', to: data.from, id: data.id, grant });
    // The second question's answer, a wait, comes after the close: no ticket to hand back.
    if (data.id === 2) leader.postMessage({ type: 'grant', to: data.from, id: data.id, grant: { ok: false, wait: 10, reason: 'policy' } });
  };
  const follower = sharedPacer(name, makePacer);
  const answer = await follower.acquire(demand);
  // Closed with a question out, it listens a while for its answer, and reads the same junk.
  follower.acquire(demand);
  follower.close();
  await sleep(50);
  leader.close();
  stepDown();
  return { answer, handedBack };
}

const leader = await leaderSide();
const { answer, handedBack } = await followerSide();
console.log(JSON.stringify({ leader, follower: answer, handedBack, reported, refused, said: [...said] }));
