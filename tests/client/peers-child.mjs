// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: the tab protocol
// (js/client/tabs.js) between several contexts of one process, with real pacers (js/client/pacer.js
// on the installed package's engine) behind a spy that records what they are told. Prints what
// each side saw.
import * as engine from 'edgebucket';
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const { Pacer } = await source('pacer.js');
const { readHeaders } = await source('headers.js');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits for `condition`; one still unmet after 5 s ends the script saying which, not the test's timeout. */
const until = async (condition) => {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`still waiting after 5 s for ${condition}`);
    await sleep(10);
  }
};
const ORIGIN = 'https://api.example';
const demand = { scope: ORIGIN, origin: ORIGIN, cost: 1, bytes: 0 };
const noPacer = () => {
  throw new Error('a follower must not make a pacer while another context leads');
};

/**
 * A real pacer that knows the origin's policy, 10 per 1,000 s, with 9 left after its probe: its
 * limit shows in `snapshot()` what each ticket took and whether it came back, and no token
 * refills while the test runs (one takes 100 s).
 */
function knowingPacer() {
  const pacer = new Pacer({ engine, now: Date.now, random: () => 0, jitter: 0 });
  const probe = pacer.acquire(demand);
  pacer.observe(probe.ticket, 200, readHeaders({ 'ratelimit-policy': '"a";q=10;w=1000', ratelimit: '"a";r=9' }));
  return pacer;
}

/**
 * A knowing pacer, and what it was told: `calls`, each ticket handed back named by its label,
 * and `after` each, its limit's `[available, inFlight]`. The real pacer names its tickets itself
 * (a random nonce): the spy labels those it issued `<name>.1`, `<name>.2`… in issue order, and
 * any other `foreign <id>`, so a ticket handed to the wrong pacer cannot pass for one of its own.
 */
function spyPacer(name) {
  const pacer = knowingPacer();
  const labels = new Map();
  const calls = [];
  const after = [];
  const label = (id) => labels.get(id) ?? `foreign ${id}`;
  const told = (call, forward) => {
    calls.push(call);
    forward();
    const [limit] = pacer.snapshot().limits;
    after.push([limit.available, limit.inFlight]);
  };
  return {
    calls,
    after,
    label,
    /** `grant` with its ticket's id replaced by its label, to print. */
    labelled: (grant) => (grant.ok ? { ...grant, ticket: { ...grant.ticket, id: label(grant.ticket.id) } } : grant),
    acquire(asked) {
      const grant = pacer.acquire(asked);
      if (grant.ok) labels.set(grant.ticket.id, `${name}.${labels.size + 1}`);
      return grant;
    },
    observe: (ticket, status, observation) => told(['observe', label(ticket.id), status, observation], () => pacer.observe(ticket, status, observation)),
    release: (ticket) => told(['release', label(ticket.id)], () => pacer.release(ticket)),
    refund: (ticket) => told(['refund', label(ticket.id)], () => pacer.refund(ticket)),
    onChange: (listener) => pacer.onChange(listener),
    adopt: (state, options) => pacer.adopt(state, options),
    export: () => pacer.export(),
    snapshot: () => pacer.snapshot(),
  };
}

/**
 * A leader is told by the others what became of the tickets it granted them, and hands its own
 * tickets to its pacer directly; each ticket back is a change of its pacer, which wakes its own
 * listeners and is announced.
 */
async function leaderSide() {
  const name = `peers-leader-${process.pid}`;
  let pacer;
  const leader = sharedPacer(name, () => (pacer = spyPacer('L')));
  await until(() => leader.leading);
  let woken = 0;
  leader.onChange(() => {
    woken += 1;
  });
  // A follower, played here: asks as tabs.js does, and hands back what the leader granted it.
  const other = new BroadcastChannel(`edgebucket:${name}`);
  const answers = new Map();
  const heard = [];
  const senders = new Set();
  other.onmessage = ({ data }) => {
    if (data.type === 'grant' && data.to === 'F') answers.set(data.id, data.grant);
    if (data.type !== 'state') return void heard.push(data.type);
    senders.add(typeof data.from === 'string' ? 'a named leader' : data.from);
    heard.push(`state ${data.final ? 'final' : 'heartbeat'} ${data.epoch}`);
  };
  const ask = async (id) => {
    other.postMessage({ type: 'acquire', from: 'F', id, demand });
    await until(() => answers.has(id));
    return answers.get(id);
  };
  const theirs = [await ask(1), await ask(2), await ask(3)];
  other.postMessage({ type: 'observe', ticket: theirs[0].ticket, status: 429, observation: { cached: true } });
  other.postMessage({ type: 'release', ticket: theirs[1].ticket });
  other.postMessage({ type: 'refund', ticket: theirs[2].ticket });
  await until(() => pacer.calls.length === 3);
  const own = [await leader.acquire(demand), await leader.acquire(demand), await leader.acquire(demand)];
  leader.observe(own[0].ticket, 200, { limits: [] });
  leader.release(own[1].ticket);
  leader.refund(own[2].ticket);
  await until(() => heard.includes('state heartbeat 1')); // after a second
  leader.close();
  await until(() => heard.includes('state final 1'));
  other.close();
  return {
    granted: theirs.map(pacer.labelled),
    calls: pacer.calls,
    after: pacer.after,
    woken,
    heard,
    senders: [...senders],
  };
}

/**
 * Two followers of one leader (played here, granting from a real pacer) ask questions with the
 * same ids: each takes only the grants addressed to it, also while closing.
 */
async function followersSide() {
  const name = `peers-followers-${process.pid}`;
  const stepDown = await holdLeaderLock(name);
  const pacer = spyPacer('L');
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  const asked = [];
  channel.onmessage = ({ data }) => {
    if (data.type === 'acquire') asked.push(data);
    else if (data.type === 'observe') pacer.observe(data.ticket, data.status, data.observation);
    else if (data.type === 'release' || data.type === 'refund') pacer[data.type](data.ticket);
  };
  const grant = (question) => channel.postMessage({ type: 'grant', to: question.from, id: question.id, grant: pacer.acquire(question.demand) });
  const a = sharedPacer(name, noPacer);
  const b = sharedPacer(name, noPacer);
  // Question 1 of each: only A's is answered (L.1), and B must not take A's grant for its own.
  const firstOfA = a.acquire(demand);
  await until(() => asked.length === 1);
  const firstOfB = b.acquire(demand);
  await until(() => asked.length === 2);
  grant(asked[0]);
  const first = { a: pacer.labelled(await firstOfA), b: pacer.labelled(await firstOfB) };
  // A's listeners are woken by the leader's `changed` and `leader`, until they unsubscribe.
  let woken = 0;
  const unsubscribe = a.onChange(() => {
    woken += 1;
  });
  channel.postMessage({ type: 'changed' });
  channel.postMessage({ type: 'leader', epoch: 1, from: 'L' });
  await sleep(50);
  const wokenBefore = woken;
  unsubscribe();
  channel.postMessage({ type: 'changed' });
  await sleep(50);
  // Questions 2 and 3 of A are unanswered when A closes; question 2 of B is answered first (L.2),
  // then A's (L.3, L.4).
  const secondOfA = a.acquire(demand);
  const thirdOfA = a.acquire(demand);
  const secondOfB = b.acquire(demand);
  await until(() => asked.length === 5);
  a.close();
  const [second, third] = asked.slice(2).filter((question) => question.from === asked[0].from);
  const secondB = asked.slice(2).find((question) => question.from === asked[1].from);
  grant(secondB);
  await sleep(20);
  grant(second);
  grant(third);
  await Promise.all([secondOfA, thirdOfA]);
  const other = await secondOfB;
  // A wait is passed on as the leader gave it and holds no ticket; one that comes late is dropped.
  const thirdOfB = b.acquire(demand);
  await until(() => asked.length === 6);
  const wait = { ok: false, wait: 500, reason: 'policy' };
  channel.postMessage({ type: 'grant', to: asked[5].from, id: asked[5].id, grant: wait });
  const waitOfB = await thirdOfB;
  channel.postMessage({ type: 'grant', to: asked[1].from, id: asked[1].id, grant: wait }); // B's first question, long timed out
  await sleep(100);
  // B closes holding L.2: released, and its response coming later is told to nobody.
  b.close();
  b.observe(other.ticket, 200, { limits: [] });
  await sleep(50);
  channel.close();
  stepDown();
  return { first, woken: [wokenBefore, woken], secondOfB: pacer.label(other.ticket?.id), waitOfB, received: pacer.calls, after: pacer.after };
}

/**
 * A context that takes the lead answers its own waiting questions, a throw of its pacer included:
 * the engine refuses a cost that is not a whole number (the client's options never make one).
 */
async function ownQuestions() {
  const name = `peers-own-${process.pid}`;
  const stepDown = await holdLeaderLock(name);
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  const asked = [];
  const refunded = [];
  channel.onmessage = ({ data }) => {
    if (data.type === 'acquire') asked.push(data);
    if (data.type === 'refund') refunded.push(data.ticket.id);
  };
  const shared = sharedPacer(name, () => spyPacer('O'));
  let woken = 0;
  shared.onChange(() => {
    woken += 1;
  });
  const question = shared.acquire({ ...demand, cost: 1.5 });
  await sleep(20);
  stepDown();
  const outcome = await Promise.race([question.then((grant) => grant, (error) => error.message), sleep(1000).then(() => 'unsettled')]);
  const [limit] = shared.snapshot()?.limits ?? [];
  shared.close();
  // A grant to the question it settled itself, come after its close: it waits for no answer.
  for (const { from, id } of asked) channel.postMessage({ type: 'grant', to: from, id, grant: { ok: true, ticket: { id: 'late' } } });
  await sleep(50);
  channel.close();
  return { outcome, woken, snapshot: limit && { available: limit.available, inFlight: limit.inFlight }, asked: asked.length, refunded };
}

/**
 * A context that has heard no leader takes the lead at once, with no predecessor's final state to
 * wait for (FINAL_WITHIN, 50 ms): its own question is answered before a 50 ms timer set first.
 */
async function firstLeader() {
  const late = sleep(50).then(() => 'not within 50 ms');
  const shared = sharedPacer(`peers-first-${process.pid}`, () => spyPacer('F'));
  // Node 24 grants a free lock at once, and a grant comes back as it is; asked, it is a promise.
  const question = Promise.resolve(shared.acquire(demand));
  const answered = await Promise.race([question.then((grant) => shared.leading && grant.ok), late]);
  shared.close();
  return answered;
}

/**
 * A follower whose questions go unanswered paces alone, with one pacer of its own, and hands its
 * own tickets back to that pacer, not to a leader, until a leader speaks (`word`, of a leader).
 */
async function aloneSide(word) {
  const name = `peers-alone-${word.type}-${process.pid}`;
  const stepDown = await holdLeaderLock(name); // a leader that never answers
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  const heard = [];
  channel.onmessage = ({ data }) => heard.push(data.type);
  let made = 0;
  let pacer;
  const follower = sharedPacer(name, () => {
    made += 1;
    return (pacer = spyPacer('D'));
  });
  let woken = 0;
  follower.onChange(() => {
    woken += 1;
  });
  // Its model before each question, the last one asked leaderless already, before it made a pacer.
  const modelsAsking = new Set();
  let grant;
  for (;;) {
    modelsAsking.add(follower.snapshot());
    grant = await follower.acquire(demand);
    if (grant.ok) break;
    await sleep(50);
  }
  const tickets = [grant.ticket, (await follower.acquire(demand)).ticket, (await follower.acquire(demand)).ticket];
  follower.observe(tickets[0], 200, { limits: [] });
  follower.release(tickets[1]);
  follower.refund(tickets[2]);
  // Another follower's question is no leader's word: still alone. A leader's is: it asks again.
  channel.postMessage({ type: 'acquire', from: 'another follower', id: 1, demand });
  await sleep(50);
  const afterQuestion = await follower.acquire(demand);
  const modelAlone = follower.snapshot()?.limits.map((limit) => [limit.available, limit.inFlight]);
  const { ok, reason } = await follower.acquire({ ...demand, cost: 10 }); // more than its pacer has left
  const asked = heard.length;
  channel.postMessage(word);
  await sleep(50);
  const afterLeader = await follower.acquire(demand);
  const modelAfterLeader = follower.snapshot();
  follower.close();
  channel.close();
  stepDown();
  return {
    made,
    tickets: tickets.map((ticket) => pacer.label(ticket.id)),
    calls: pacer.calls,
    after: pacer.after,
    woken,
    afterQuestion: pacer.label(afterQuestion.ticket?.id),
    modelsAsking: [...modelsAsking],
    modelAlone,
    waitAlone: { ok, reason },
    modelAfterLeader,
    afterLeader: { ...afterLeader, asked: heard.length - asked },
    handedBack: heard.filter((type) => type !== 'acquire'),
  };
}

// Each lone follower waits 3 s for a leader: the others run meanwhile.
const words = [
  { type: 'changed' },
  { type: 'leader', epoch: 1, from: 'L' },
  { type: 'state', state: {}, final: false, epoch: 1, from: 'L' },
  { type: 'grant', to: 'another follower', id: 1, grant: { ok: false, wait: 10 } },
];
const alone = Promise.all(words.map(aloneSide));
const leader = await leaderSide();
const followers = await followersSide();
const own = await ownQuestions();
const first = await firstLeader();
console.log(JSON.stringify({ leader, followers, own, first, alone: await alone }));
