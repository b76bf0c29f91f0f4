// Run under Node 24 (Web Locks and BroadcastChannel) by share.test.mjs: the tab protocol
// (js/client/tabs.js) between several contexts of one process, with pacers that grant everything
// and record what they are told. Prints what each side saw.
import { source, holdLeaderLock } from './helpers.mjs';

const { sharedPacer } = await source('tabs.js');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (condition) => {
  while (!condition()) await sleep(10);
};
const demand = { scope: 'https://api.example', origin: 'https://api.example', cost: 1, bytes: 0 };
const noPacer = () => {
  throw new Error('a follower must not make a pacer while another context leads');
};

/** A pacer that grants everything, tickets `<name>.1`, `<name>.2`…, and records the rest in `calls`. */
function recordingPacer(name, calls) {
  let issued = 0;
  let listener = () => {};
  return {
    acquire: () => ({ ok: true, ticket: { id: `${name}.${++issued}` } }),
    observe: (ticket, status, observation) => calls.push(['observe', ticket.id, status, observation]),
    release: (ticket) => calls.push(['release', ticket.id]),
    refund: (ticket) => calls.push(['refund', ticket.id]),
    onChange: (changed) => {
      listener = changed;
    },
    changed: () => listener(),
    adopt: () => {},
    export: () => ({}),
    snapshot: () => null,
  };
}

/**
 * A leader is told by the others what became of their tickets, and hands its own tickets to its
 * pacer directly; a change of its pacer wakes its own listeners and is announced.
 */
async function leaderSide() {
  const name = `peers-leader-${process.pid}`;
  const calls = [];
  let pacer;
  const leader = sharedPacer(name, () => (pacer = recordingPacer('L', calls)));
  await until(() => leader.leading);
  const other = new BroadcastChannel(`edgebucket:${name}`);
  const heard = [];
  const senders = new Set();
  other.onmessage = ({ data }) => {
    if (data.type !== 'state') return void heard.push(data.type);
    senders.add(typeof data.from === 'string' ? 'a named leader' : data.from);
    heard.push(`state ${data.final ? 'final' : 'heartbeat'} ${data.epoch}`);
  };
  other.postMessage({ type: 'observe', ticket: { id: 'F.1' }, status: 429, observation: { cached: true } });
  other.postMessage({ type: 'release', ticket: { id: 'F.2' } });
  other.postMessage({ type: 'refund', ticket: { id: 'F.3' } });
  await sleep(50);
  const own = [await leader.acquire(demand), await leader.acquire(demand), await leader.acquire(demand)];
  leader.observe(own[0].ticket, 200, { limits: [] });
  leader.release(own[1].ticket);
  leader.refund(own[2].ticket);
  let woken = 0;
  leader.onChange(() => {
    woken += 1;
  });
  pacer.changed();
  await sleep(1050); // a heartbeat
  leader.close();
  await sleep(50);
  other.close();
  return { calls, woken, heard, senders: [...senders] };
}

/**
 * Two followers of one leader (played here) ask questions with the same ids: each takes only the
 * grants addressed to it, also while closing.
 */
async function followersSide() {
  const name = `peers-followers-${process.pid}`;
  const stepDown = await holdLeaderLock(name);
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  const asked = [];
  const received = [];
  channel.onmessage = ({ data }) => {
    if (data.type === 'acquire') asked.push(data);
    else received.push(`${data.type} ${data.ticket?.id}`);
  };
  const grant = (question, id) => channel.postMessage({ type: 'grant', to: question.from, id: question.id, grant: { ok: true, ticket: { id } } });
  const a = sharedPacer(name, noPacer);
  const b = sharedPacer(name, noPacer);
  // Question 1 of each: only A's is answered, and B must not take A's grant for its own.
  const firstOfA = a.acquire(demand);
  await until(() => asked.length === 1);
  const firstOfB = b.acquire(demand);
  await until(() => asked.length === 2);
  grant(asked[0], 'A.1');
  const first = { a: await firstOfA, b: await firstOfB };
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
  // Questions 2 and 3 of A are unanswered when A closes; question 2 of B is answered first.
  const secondOfA = a.acquire(demand);
  const thirdOfA = a.acquire(demand);
  const secondOfB = b.acquire(demand);
  await until(() => asked.length === 5);
  a.close();
  const [second, third] = asked.slice(2).filter((question) => question.from === asked[0].from);
  const secondB = asked.slice(2).find((question) => question.from === asked[1].from);
  grant(secondB, 'B.2');
  await sleep(20);
  grant(second, 'A.2');
  grant(third, 'A.3');
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
  // B closes holding B.2: released, and its response coming later is told to nobody.
  b.close();
  b.observe(other.ticket, 200, { limits: [] });
  await sleep(50);
  channel.close();
  stepDown();
  return { first, woken: [wokenBefore, woken], secondOfB: other.ticket?.id, waitOfB, received };
}

/** A context that takes the lead answers its own waiting questions, a throw of its pacer included. */
async function ownQuestions() {
  const name = `peers-own-${process.pid}`;
  const stepDown = await holdLeaderLock(name);
  const shared = sharedPacer(name, () => ({
    ...recordingPacer('O', []),
    acquire: () => {
      throw new Error('a demand the pacer refuses');
    },
  }));
  let woken = 0;
  shared.onChange(() => {
    woken += 1;
  });
  const question = shared.acquire(demand);
  await sleep(20);
  stepDown();
  const outcome = await Promise.race([question.then((grant) => grant, (error) => error.message), sleep(1000).then(() => 'unsettled')]);
  shared.close();
  return { outcome, woken };
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
  const calls = [];
  let made = 0;
  let pacer;
  const follower = sharedPacer(name, () => {
    made += 1;
    return (pacer = recordingPacer('D', calls));
  });
  let grant;
  while (!(grant = await follower.acquire(demand)).ok) await sleep(50);
  const tickets = [grant.ticket, (await follower.acquire(demand)).ticket, (await follower.acquire(demand)).ticket];
  follower.observe(tickets[0], 200, { limits: [] });
  follower.release(tickets[1]);
  follower.refund(tickets[2]);
  let woken = 0;
  follower.onChange(() => {
    woken += 1;
  });
  pacer.changed();
  // Another follower's question is no leader's word: still alone. A leader's is: it asks again.
  channel.postMessage({ type: 'acquire', from: 'another follower', id: 1, demand });
  await sleep(50);
  const afterQuestion = await follower.acquire(demand);
  const asked = heard.length;
  channel.postMessage(word);
  await sleep(50);
  const afterLeader = await follower.acquire(demand);
  follower.close();
  channel.close();
  stepDown();
  return {
    made,
    tickets: tickets.map((ticket) => ticket.id),
    calls,
    woken,
    afterQuestion: afterQuestion.ticket?.id,
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
console.log(JSON.stringify({ leader, followers, own, alone: await alone }));
