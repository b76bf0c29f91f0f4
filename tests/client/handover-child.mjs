// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: leadership changing hands
// (js/client/tabs.js). This script plays the old leader over a real lock and channel, with a real
// Pacer's model, then lets the lock go; a shared pacer waiting for the lock takes over. Prints
// how many requests each new leader let go at once, and how long a follower of a terminated
// worker thread waited before it could send at all.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import * as engine from 'edgebucket';
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const { Pacer } = await source('pacer.js');
const { readHeaders } = await source('headers.js');

const ORIGIN = 'https://api.example';
const demand = { scope: ORIGIN, origin: ORIGIN, cost: 1, bytes: 0 };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const makePacer = () => new Pacer({ engine, now: Date.now, random: () => 0, jitter: 0 });
const until = async (condition) => {
  while (!condition()) await sleep(10);
};

/** A pacer that knows the policy: 10 per 100 s, 9 left after its probe. */
function knowingPacer() {
  const pacer = makePacer();
  const probe = pacer.acquire(demand);
  pacer.observe(probe.ticket, 200, readHeaders({ 'ratelimit-policy': '"a";q=10;w=100', ratelimit: '"a";r=9' }));
  return pacer;
}

async function grantsAtOnce(shared) {
  let granted = 0;
  while (granted < 20 && (await shared.acquire(demand)).ok) granted += 1;
  return granted;
}

/**
 * The old leader A (epoch 1) sends its last word before the lock passes: a heartbeat
 * (`final: false`) or its closing state. `later`: a later leader B (epoch 2) took the lock first,
 * may have spent what A left, and died without a word of its own, so the lock now passes on.
 * Its announcement arrives after A's last word (`after`), before it (`before`), even before A's
 * own announcement (`first`: nothing orders two senders' messages), or comes from an older
 * version that sends no epoch (`unversioned`), or with an epoch that is no whole number ≥ 0 (`epoch
 * 0.5`, `epoch -1`: read as none, not as an earlier leader's); or B heard nothing of A and took A's epoch
 * (`tied`; `tied first` when B's announcement arrives before A's), so which of the two came later
 * cannot be told; likewise an older version's leader announced before A (`unversioned first`):
 * counted at one more than the highest epoch heard then (none: so at 1, A's own), it ties with A. Or A is of the
 * version that sent epochs but no sender (`unnamed`), so another leader at its epoch could not be
 * told from it. Or no later leader, but A's heartbeat came before its final word
 * (`heartbeat first`: a leader that lived a second), or a delayed
 * announcement or heartbeat of an earlier leader Z (epoch 0) after A's (`stale`, `stale state`),
 * also one of epoch 1 after A's of epoch 2 (`stale at 1`), or an older version's heartbeat (no
 * epoch) between A's announcement and its final word (`unversioned stale state`: a state is no
 * announcement, and only an announcement tells of a later leader),
 * or A's heartbeat and final word came only once the lock had passed (`after the lock`); or B led
 * after A and sent its own final state (`its own last word`).
 */
async function handover(final, later = null) {
  const name = `handover-${final}-${later}-${process.pid}`;
  const stepDown = await holdLeaderLock(name);
  const next = sharedPacer(name, makePacer);
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  const announce = (epoch, from) => channel.postMessage({ type: 'leader', epoch, from });
  const epochOfA = later === 'stale at 1' ? 2 : 1;
  // `unnamed`: A's version sent epochs but no sender; its messages carry no `from` at all.
  const fromA = later === 'unnamed' ? {} : { from: 'A' };
  const stateOfA = (isFinal) => channel.postMessage({ type: 'state', state: knowingPacer().export(), final: isFinal, epoch: epochOfA, ...fromA });
  const heartbeat = () => stateOfA(false);
  const lastWord = () => stateOfA(final);
  if (later === 'first') announce(2, 'B');
  if (later === 'tied first') announce(1, 'B');
  if (later === 'unversioned first') channel.postMessage({ type: 'leader' });
  channel.postMessage({ type: 'leader', epoch: epochOfA, ...fromA });
  if (later === 'unversioned stale state') channel.postMessage({ type: 'state', state: makePacer().export(), final: false });
  if (later === 'before') announce(2, 'B');
  if (later === 'heartbeat first') heartbeat();
  if (later !== 'after the lock') lastWord();
  if (later === 'after') announce(2, 'B');
  if (later === 'tied') announce(1, 'B');
  if (later === 'epoch 0.5') announce(0.5, 'B');
  if (later === 'epoch -1') announce(-1, 'B');
  if (later === 'stale') announce(0, 'Z');
  if (later === 'stale at 1') announce(1, 'Z');
  if (later === 'its own last word') {
    // B took over after A and closed cleanly: its final state, not A's, is the last word.
    announce(2, 'B');
    channel.postMessage({ type: 'state', state: knowingPacer().export(), final: true, epoch: 2, from: 'B' });
  }
  if (later === 'stale state') channel.postMessage({ type: 'state', state: makePacer().export(), final: false, epoch: 0, from: 'Z' });
  if (later === 'unversioned') channel.postMessage({ type: 'leader' });
  if (later === 'unversioned state') {
    // An older version's leader that knows nothing yet: its state, not A's, is the latest.
    channel.postMessage({ type: 'leader' });
    channel.postMessage({ type: 'state', state: makePacer().export(), final: true });
  }
  await sleep(100); // heard; a heartbeat's leader may then grant all 9 before it dies
  // Whether it leads once the final word comes, not after waiting FINAL_WITHIN (50 ms) out: this
  // timer is set before the lock passes, so before the one of that wait.
  const led = later === 'after the lock'
    ? Promise.race([new Promise((resolve) => next.onChange(() => resolve('at the final word'))), sleep(50).then(() => 'after 50 ms')])
    : null;
  stepDown();
  // The next one waits for A's last word, which comes after the lock (nearly always in Node 24)
  // and after a heartbeat sent meanwhile.
  if (later === 'after the lock') {
    heartbeat();
    lastWord();
  }
  await until(() => next.leading);
  channel.close();
  const granted = await grantsAtOnce(next);
  next.close();
  return led ? { granted, led: await led } : granted;
}

/**
 * A final state this version cannot read (another version's shape): the next leader starts
 * empty, announces itself and wakes its waiting requests.
 */
async function unreadable() {
  const name = `unreadable-${process.pid}`;
  const original = console.error;
  let reported = 0;
  let said;
  console.error = (what) => {
    reported += 1;
    said = what;
  };
  const stepDown = await holdLeaderLock(name);
  const next = sharedPacer(name, makePacer);
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  const heard = [];
  channel.onmessage = ({ data }) => heard.push(data.type);
  const state = knowingPacer().export();
  state.scopes[0].policies = state.scopes[0].policies.map(([policy, partitionKey]) => ({ policy, partitionKey }));
  channel.postMessage({ type: 'leader', epoch: 1, from: 'A' });
  channel.postMessage({ type: 'state', state, final: true, epoch: 1, from: 'A' });
  await sleep(100);
  stepDown();
  await until(() => next.leading);
  const probe = await next.acquire(demand);
  const held = await next.acquire(demand);
  let woken = false;
  next.onChange(() => {
    woken = true;
  });
  next.observe(probe.ticket, 200, readHeaders({}));
  await sleep(50);
  next.close();
  channel.close();
  console.error = original;
  return { probe: probe.ok, held: held.reason, woken, announced: heard.includes('leader'), reported, said };
}

/**
 * Two real shared pacers, the leader closing cleanly: its final state is sent before it lets the
 * lock go, but the lock may reach the next one first (Node 24 nearly always). Returns how many
 * requests the next leader let go at once, for each of `runs` handovers.
 */
async function cleanHandovers(runs) {
  const granted = [];
  for (let run = 0; run < runs; run++) {
    const name = `clean-${run}-${process.pid}`;
    const old = sharedPacer(name, knowingPacer);
    await until(() => old.leading);
    const next = sharedPacer(name, makePacer);
    // A follower that has asked (heard the leader), before any heartbeat.
    const asked = await next.acquire(demand);
    next.refund(asked.ticket);
    await sleep(20);
    old.close();
    await until(() => next.leading);
    granted.push(await grantsAtOnce(next));
    next.close();
  }
  return granted;
}

if (isMainThread) {
  const unreadableState = await unreadable();
  const clean = await cleanHandovers(5);
  const afterHeartbeat = await handover(false);
  const afterFinal = await handover(true);
  const spentByALaterLeader = {};
  for (const later of ['after', 'before', 'first', 'tied', 'tied first', 'unversioned', 'unversioned first', 'unnamed', 'epoch 0.5', 'epoch -1', 'unversioned state']) spentByALaterLeader[later] = await handover(true, later);
  const noLaterLeader = {};
  for (const other of ['heartbeat first', 'stale', 'stale at 1', 'stale state', 'unversioned stale state', 'after the lock', 'its own last word']) noLaterLeader[other] = await handover(true, other);
  // A leading worker thread terminated: Node 24 never passes its lock on.
  const name = `terminated-${process.pid}`;
  const worker = new Worker(new URL(import.meta.url), { workerData: { name } });
  await new Promise((resolve) => worker.once('message', resolve));
  const follower = sharedPacer(name, makePacer);
  await worker.terminate();
  const start = Date.now();
  while (!(await follower.acquire(demand)).ok && Date.now() - start < 10_000) await sleep(50);
  const aloneAfter = Date.now() - start;
  const { leading } = follower;
  follower.close();
  console.log(JSON.stringify({ unreadableState, clean, afterHeartbeat, afterFinal, spentByALaterLeader, noLaterLeader, aloneAfter, leading }));
} else {
  const shared = sharedPacer(workerData.name, makePacer);
  await until(() => shared.leading);
  parentPort.postMessage('leading');
  await sleep(60_000); // until terminated
}
