// Run under Node 24 with --expose-gc by share.test.mjs: a follower closed while another context
// leads. Its lock request stays queued until its turn, and must not keep alive what the follower
// held: the pacer factory, its listeners, the last state the leader sent. Prints which of them
// garbage collection could reclaim.
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const NAME = `closed-test-${process.pid}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Lead first, and never step down while the follower lives.
const stepDown = await holdLeaderLock(NAME);
const leader = new BroadcastChannel(`edgebucket:${NAME}`);

/** Weak handles on what the closed follower should let go of. */
const held = {};
(() => {
  const makePacer = () => {
    throw new Error('the follower must not make a pacer while another context leads');
  };
  const listener = () => {};
  held.makePacer = new WeakRef(makePacer);
  held.listener = new WeakRef(listener);
  const follower = sharedPacer(NAME, makePacer);
  follower.onChange(listener);
  held.close = () => follower.close();
})();
// A large model from the leader, as a heartbeat: the follower keeps the last one it heard.
const state = { scopes: Array.from({ length: 20_000 }, (_, i) => ({ scope: `https://api.example/${i}`, level: i })) };
leader.postMessage({ type: 'state', state, final: false });
await sleep(100);
globalThis.gc();
const before = process.memoryUsage().heapUsed;
held.close();
delete held.close;
await sleep(50);
globalThis.gc();
await sleep(0);
globalThis.gc();
const freedBytes = before - process.memoryUsage().heapUsed;
const { pending } = await navigator.locks.query();
console.log(
  JSON.stringify({
    lockQueued: pending.some((request) => request.name === `edgebucket:${NAME}:leader`),
    makePacer: held.makePacer.deref() === undefined ? 'freed' : 'kept',
    listener: held.listener.deref() === undefined ? 'freed' : 'kept',
    stateFreedMB: Math.round(freedBytes / 1e5) / 10,
  }),
);
leader.close();
stepDown();
