// The tab protocol's bookkeeping under Node 24, which has Web Locks and BroadcastChannel
// (EDGEBUCKET_NODE24: tests/client/run.sh): a follower never keeps a ticket the leader would
// hold against everyone else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { source } from './helpers.mjs';

const node = process.env.EDGEBUCKET_NODE24;

test('a follower refunds a grant that came too late, asks a silent leader rather than pacing alone, and releases what it holds when it closes, grants that come after the close included', { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
  const child = spawnSync(node, [fileURLToPath(new URL('./follower-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 15_000 });
  assert.equal(child.status, 0, child.stderr);
  const { late, granted, timersLeft, afterSilence, atClose, received } = JSON.parse(child.stdout);
  assert.equal(timersLeft, 0, 'an answered question clears its timer');
  assert.deepEqual(late, { ok: false, wait: 50, reason: 'leader' }, 'no answer within 250 ms: ask again soon');
  assert.equal(granted, true);
  assert.deepEqual(received, [
    'acquire',
    'refund L.1', // the late grant: never used, so its tokens come back
    'acquire',
    'acquire',
    'observe L.3',
    'acquire', // after 3.5 s without a heartbeat: asked, not paced alone
    'acquire', // still unanswered at close
    'release L.2', // still out at close: it will not report back
    'release L.4',
    'refund L.5', // granted after the close: handed back
    'acquire', // a worker thread's, which closes and ends before the grant
    'refund L.6', // its thread lived to hand it back
  ]);
  assert.deepEqual(atClose, { ok: false, wait: null, reason: 'closed' }, 'settled at close (Infinity prints as null)');
  assert.equal(afterSilence, 'L.4', 'silence alone does not send a follower off alone');
});

test('messages a context cannot read (another version\'s, a bug) neither end the process nor settle a question', { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
  const child = spawnSync(node, [fileURLToPath(new URL('./messages-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(child.status, 0, child.stderr);
  const { leader, follower, handedBack, reported, refused, said } = JSON.parse(child.stdout);
  assert.deepEqual(leader, [2], 'the leader still answers a question it can read');
  assert.equal(reported, 17, 'each message the leader could not handle is reported, and only those');
  assert.equal(refused, 13, 'each acquire with a demand it cannot read is refused as such, before its pacer sees it');
  assert.deepEqual(said, ['edgebucket/client: a message from another tab could not be handled']);
  assert.deepEqual(follower, { ok: false, wait: 50, reason: 'leader' }, 'unreadable grants leave the question to time out');
  assert.deepEqual(handedBack, [], 'a wait that comes after the close holds no ticket to hand back');
});

test('clients of one context share a model by default, except one on a clock of its own', { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
  const child = spawnSync(node, [fileURLToPath(new URL('./clock-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(child.status, 0, child.stderr);
  assert.deepEqual(JSON.parse(child.stdout), { first: true, second: false, ownClock: true });
});

test('leadership changing hands: a clean close\'s final state waited for, a state it cannot read ignored, a heartbeat adopted empty, a final state as it is unless a later leader may have spent it; a dead thread\'s lock never passed on', { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
  const child = spawnSync(node, [fileURLToPath(new URL('./handover-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(child.status, 0, child.stderr);
  const { unreadableState, clean, afterHeartbeat, afterFinal, spentByALaterLeader, noLaterLeader, aloneAfter, leading } = JSON.parse(child.stdout);
  assert.deepEqual(clean, [9, 9, 9, 9, 9], 'a clean close hands its 9 on, though the lock may arrive before its final state');
  assert.deepEqual(unreadableState, { probe: true, held: 'probe', woken: true, announced: true, reported: 1, said: "edgebucket/client: a predecessor's state could not be adopted; starting empty" }, 'a state it cannot read: the next leader starts empty, reports it, and leads');
  assert.equal(afterHeartbeat, 0, 'the heartbeat showed 9, which the old leader may have granted since');
  assert.equal(afterFinal, 9, 'a closing leader\'s final state is its last word');
  // A later leader announced itself, in any order of arrival: it may have spent the 9 and died.
  // So may one heard at A's epoch, named or not, before A's announcement or after it; and when A
  // names no sender, another one at its epoch could not be told from it: never known the latest.
  // The older version's own state is taken (knowing nothing, the new leader probes: one goes).
  assert.deepEqual(spentByALaterLeader, { after: 0, before: 0, first: 0, tied: 0, 'tied first': 0, unversioned: 0, 'unversioned first': 0, unnamed: 0, 'epoch 0.5': 0, 'epoch -1': 0, 'unversioned state': 1 });
  // The final word replaces the heartbeat of its own epoch, also one heard while waiting for it;
  // an earlier leader's word changes nothing, nor does an older version's heartbeat (no epoch, no
  // announcement) heard before A's final word.
  assert.deepEqual(noLaterLeader, { 'heartbeat first': 9, stale: 9, 'stale at 1': 9, 'stale state': 9, 'unversioned stale state': 9, 'after the lock': { granted: 9, led: 'at the final word' }, 'its own last word': 9 });
  assert.equal(leading, false, 'Node never passed the terminated thread\'s lock on');
  assert.ok(aloneAfter >= 1500 && aloneAfter < 6000, `paced alone after three missed heartbeats, not never: ${aloneAfter} ms`);
});

test('a follower closed while its lock request is still queued lets go of its pacer factory, listeners and the leader\'s last state', { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
  const child = spawnSync(node, ['--expose-gc', fileURLToPath(new URL('./closed-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(child.status, 0, child.stderr);
  const { lockQueued, makePacer, listener, stateFreedMB } = JSON.parse(child.stdout);
  assert.equal(lockQueued, true, 'the closed follower\'s lock request is still queued behind the leader');
  assert.equal(makePacer, 'freed');
  assert.equal(listener, 'freed');
  // The 20,000-scope state is about 2 MB; kept, nothing is freed.
  assert.ok(stateFreedMB >= 1, `the leader's last state was collected: ${stateFreedMB} MB freed`);
});

test('between contexts: a leader hands every ticket to its pacer, followers take only their own grants (also while closing), changes wake listeners, a new leader settles its own questions, a lone follower keeps one pacer', { skip: !node && 'EDGEBUCKET_NODE24 is not set' }, () => {
  const child = spawnSync(node, [fileURLToPath(new URL('./peers-child.mjs', import.meta.url))], { encoding: 'utf8', timeout: 15_000 });
  assert.equal(child.status, 0, child.stderr);
  const { leader, followers, own, first, alone } = JSON.parse(child.stdout);
  // Each pacer is a real one that knows the policy (9 tokens left, none refilled meanwhile); its
  // tickets are labelled in the order it issued them, and `after` each ticket back is
  // [available, inFlight]: only a refund gives the ticket's token back.
  const ticket = (id) => ({ ok: true, ticket: { id, scope: 'https://api.example', origin: 'https://api.example' } });
  assert.deepEqual(leader, {
    // A follower's questions, answered with the leader's real tickets, which it then hands back;
    // then the leader's own tickets, handed back by the shared pacer.
    granted: [ticket('L.1'), ticket('L.2'), ticket('L.3')],
    calls: [['observe', 'L.1', 429, { cached: true }], ['release', 'L.2'], ['refund', 'L.3'], ['observe', 'L.4', 200, { limits: [] }], ['release', 'L.5'], ['refund', 'L.6']],
    after: [[6, 2], [6, 1], [7, 0], [4, 2], [4, 1], [5, 0]],
    woken: 6, // each ticket back is a change of its pacer
    // Its grants and the changes, announced; its heartbeat after a second, then its last word,
    // both of its epoch and naming it.
    heard: ['grant', 'grant', 'grant', 'changed', 'changed', 'changed', 'changed', 'changed', 'changed', 'state heartbeat 1', 'state final 1'],
    senders: ['a named leader'],
  });
  assert.deepEqual(followers.first, { a: ticket('L.1'), b: { ok: false, wait: 50, reason: 'leader' } }, 'B asked with the same id as A and did not take A\'s grant');
  assert.deepEqual(followers.woken, [2, 2], 'changed and leader wake a follower\'s listeners, until they unsubscribe');
  assert.equal(followers.secondOfB, 'L.2');
  assert.deepEqual(followers.waitOfB, { ok: false, wait: 500, reason: 'policy' }, 'a wait passed on as the leader gave it');
  assert.deepEqual(followers.received, [['release', 'L.1'], ['refund', 'L.3'], ['refund', 'L.4'], ['release', 'L.2']], 'A, closing, hands back both grants to its questions, and not B\'s; B released L.2 at its close and said nothing after');
  // L.2 was granted before A's release of L.1 arrived; at the end no ticket is out.
  assert.deepEqual(followers.after, [[7, 1], [6, 2], [7, 1], [7, 0]]);
  assert.deepEqual(own, { outcome: 'tokens must be an integer (a safe integer number or a BigInt), got 1.5', woken: 1, snapshot: { available: 9, inFlight: 0 }, asked: 1, refunded: [] }, 'the throw reaches the question, as the pacer\'s own would, taking nothing, and taking the lead wakes the listeners; closed, it hands back no grant to a question it settled itself');
  assert.equal(first, true, 'a context that heard no leader leads at once, answering its own question');
  // Any word of a leader (a grant to another follower included) sends it back to asking.
  assert.equal(alone.length, 4);
  for (const [i, each] of alone.entries()) assert.deepEqual(each, {
    made: 1,
    tickets: ['D.1', 'D.2', 'D.3'],
    calls: [['observe', 'D.1', 200, { limits: [] }], ['release', 'D.2'], ['refund', 'D.3']],
    after: [[6, 2], [6, 1], [7, 0]],
    woken: [4, 4, 3, 3][i], // its own pacer's three changes, then the leader's changed or leader
    afterQuestion: 'D.4', // another follower's question is no leader speaking
    modelsAsking: [null], // none while it asks, nor once leaderless before its first pacer is made
    modelAlone: [[6, 1]], // its own pacer's model while alone, D.4 out
    waitAlone: { ok: false, reason: 'policy' }, // its own pacer's wait, passed on
    modelAfterLeader: null, // asking a leader again, it has none of its own to show
    afterLeader: { ok: false, wait: 50, reason: 'leader', asked: 1 }, // a leader spoke: asked again
    handedBack: [],
  });
});

test('sharing needs both BroadcastChannel and Web Locks: without either a context paces alone', async (t) => {
  const { canShare } = await source('tabs.js');
  const channel = Object.getOwnPropertyDescriptor(globalThis, 'BroadcastChannel');
  const navigator = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  t.after(() => {
    Object.defineProperty(globalThis, 'BroadcastChannel', channel);
    if (navigator) Object.defineProperty(globalThis, 'navigator', navigator);
    else delete globalThis.navigator;
  });
  const runtime = (BroadcastChannel, navigator) => {
    Object.defineProperty(globalThis, 'BroadcastChannel', { value: BroadcastChannel, configurable: true, writable: true });
    Object.defineProperty(globalThis, 'navigator', { value: navigator, configurable: true, writable: true });
    return canShare();
  };
  const locks = { request: () => {} };
  assert.equal(runtime(class {}, { locks }), true);
  assert.equal(runtime(undefined, { locks }), false, 'no BroadcastChannel');
  assert.equal(runtime(class {}, undefined), false, 'no navigator');
  assert.equal(runtime(class {}, {}), false, 'no Web Locks');
  assert.equal(runtime(class {}, { locks: {} }), false, 'Web Locks without request');
});
