// One budget for every tab (and worker) of an origin: a leader holds the only pacer, the others
// ask it over a BroadcastChannel.
//
// - Election: each context asks Web Locks for `edgebucket:<name>:leader`; whoever holds it leads
//   until it closes (or its tab does, which frees the lock), and the next in line takes over.
// - A follower's `acquire` is a message answered by the leader's grant. Unanswered within
//   ANSWER_WITHIN (no leader yet, or it just left), it reads as a short wait and the queue asks
//   again; a grant that arrives too late is handed back (`refund`), so no token leaks. A context
//   that takes the lead answers its own questions still waiting.
// - Responses go to the leader as `observe`, failures as `release`, grants never used as
//   `refund`; the leader tells everyone `changed` when a waiting request might now go. A
//   follower that closes releases the tickets it still holds, and for ANSWER_WITHIN keeps
//   listening to hand back grants to questions it had already asked; a tab that dies holds them
//   until they expire (the pacer's ticket TTL).
// - The leader sends its model (`state`) every second and, marked final, when it closes. A new
//   leader adopts the last one it heard: a final one as it is (levels rounded down), unless a
//   later leader announced itself (it may have spent that state and died without a word); a
//   heartbeat with every level empty, since the old leader may have granted all it had after
//   sending it (it crashed, or its final word arrives after the lock: nothing orders the two, so
//   a new leader that has heard from one waits FINAL_WITHIN for a final word first). With none,
//   or one it cannot read (another version's shape), it starts empty and probes. "Later" is by
//   epoch, not arrival, since messages from different senders arrive in any order: each leader
//   takes one more than the highest it heard and marks its `leader` and `state` messages with it
//   and its id. Two leaders in a row share an epoch when the second heard nothing of the first;
//   then neither is known to be the later, and a final state is taken as it is only from the one
//   leader heard at the highest epoch (`Succession`). Tickets carry the issuing pacer's id, so a
//   new leader never confuses them with its own.
// - A message a context cannot read (another version of the package on the channel, a bug) is
//   dropped, reported by a leader: a follower's question then times out as if unanswered.
// - A follower whose questions have gone unanswered for LEADERLESS_AFTER paces alone until a
//   leader speaks again: Node 24 never passes the lock of a worker thread that exits or is
//   terminated to the threads waiting for it, and a browser may freeze a background tab that
//   holds the lock, so they would otherwise wait for a leader for good. Silence alone is not
//   enough: an idle follower of a background tab, whose heartbeat timers are throttled, still
//   asks first.
// Without Web Locks or BroadcastChannel (Node before 24.5, old browsers), each context paces
// alone. Node 24.5+ has both: a process's worker threads share, and neither the channel nor the
// heartbeat keeps the process alive (a waiting request's own timer does, and for up to
// ANSWER_WITHIN after close, the wait for answers to questions already asked).

import { report } from './report.js';

const ANSWER_WITHIN = 250;
const ASK_AGAIN = 50;
/** Messages only a leader sends. */
const LEADER_MESSAGES = new Set(['grant', 'state', 'changed', 'leader']);
/** How often the leader sends its model to the others, for whoever leads next. */
const STATE_EVERY = 1000;
/** A follower whose questions have gone unanswered this long paces alone. */
const LEADERLESS_AFTER = 3000;
/**
 * How long a new leader waits for its predecessor's final state, which may arrive after the lock:
 * Node 24 grants it first nearly always, Chromium about one time in three, the state then within
 * 2 ms.
 */
const FINAL_WITHIN = 50;

/** Whether this runtime can share a budget across contexts. */
export function canShare() {
  return typeof BroadcastChannel === 'function' && typeof globalThis.navigator?.locks?.request === 'function';
}

/**
 * A pacer shared by every context that uses the same `name` on this origin.
 *
 * @param {string} name
 * @param {() => import('./pacer.js').Pacer} makePacer makes the model when this context leads
 */
export function sharedPacer(name, makePacer) {
  const channel = new BroadcastChannel(`edgebucket:${name}`);
  channel.unref?.(); // Node: an open channel alone must not keep the process running
  const me = Math.random().toString(36).slice(2);
  const pending = new Map();
  /** Tickets the leader granted this follower, not yet handed back. */
  const holding = new Map();
  const listeners = new Set();
  let leader = null;
  let nextQuestion = 1;
  let closed = false;
  let stepDown;
  let heartbeat;
  /** The last `state` heard (none of a lower epoch replaces it), and who sent it. */
  let inherited = { state: null, final: false, epoch: -1, from: null };
  const succession = new Succession();
  /** This context's epoch, while it leads. */
  let epoch;
  /** Whether any leader has spoken to this context (then one leads, or led before it). */
  let heardLeader = false;
  /** Ends a new leader's wait for its predecessor's final state (see finalState). */
  let onFinal = null;
  /** When the oldest question no leader answered was asked, since a leader last spoke; or null. */
  let unansweredSince = null;
  /** The pacer this context uses while it hears no leader, and the tickets it granted. */
  let alone = null;
  const aloneTickets = new Set();

  const post = (message) => {
    if (!closed) channel.postMessage(message);
  };
  const changed = () => {
    for (const listener of listeners) listener();
  };

  // No AbortSignal to leave the queue on close: in Node 24, a request carrying one is never
  // granted when the thread holding the lock is terminated, so the followers would stay
  // leaderless. A closed context granted the lock later lets it go at once.
  globalThis.navigator.locks
    .request(`edgebucket:${name}:leader`, async () => {
      if (closed) return undefined;
      // A leader has spoken, and no final state of it has come: it closed (its last word is on
      // the way) or died (no word will come).
      if (heardLeader && !finalIsLatest()) await finalState();
      if (closed) return undefined;
      const asItIs = finalIsLatest();
      leader = adopted(makePacer, inherited.state, !asItIs);
      epoch = succession.lead(me);
      leader.onChange(() => {
        changed();
        post({ type: 'changed' });
      });
      post({ type: 'leader', epoch, from: me });
      answerOwnQuestions();
      changed();
      heartbeat = setInterval(() => post({ type: 'state', state: leader.export(), final: false, epoch, from: me }), STATE_EVERY);
      heartbeat.unref?.();
      return new Promise((resolve) => {
        stepDown = resolve;
      });
    })
    .catch(() => {});

  channel.onmessage = ({ data }) => {
    if (data === null || typeof data !== 'object') return;
    if (leader !== null) {
      try {
        answer(data);
      } catch (error) {
        // One it cannot read (another version's, a bug): thrown from a channel's listener, it
        // would end a Node process.
        report(error, 'a message from another tab could not be handled');
      }
      return;
    }
    if (LEADER_MESSAGES.has(data.type)) {
      unansweredSince = null;
      heardLeader = true;
    }
    // A grant it cannot read leaves its question to time out: settled with it, the queue would
    // throw, or wait for good.
    if (data.type === 'grant' && data.to === me && isGrant(data.grant)) {
      const question = pending.get(data.id);
      pending.delete(data.id);
      if (question) {
        clearTimeout(question.timer);
        if (data.grant.ok) holding.set(data.grant.ticket.id, data.grant.ticket);
        question.resolve(data.grant);
      } else if (data.grant.ok) {
        post({ type: 'refund', ticket: data.grant.ticket });
      }
    } else if (data.type === 'state') {
      // An older version's state, without an epoch, is its leader's latest but never taken as
      // it is (-1); a state of a lower epoch than the one kept is an old leader's, delayed.
      const sent = epochOf(data);
      const from = senderOf(data);
      if (sent !== undefined) succession.heard(sent, from);
      if (sent === undefined || sent >= inherited.epoch) {
        inherited = { state: data.state, final: data.final === true, epoch: sent ?? -1, from };
      }
      if (finalIsLatest()) onFinal?.();
    } else if (data.type === 'changed' || data.type === 'leader') {
      // An older version's leader, without an epoch, counts as later than any heard.
      if (data.type === 'leader') succession.heard(epochOf(data) ?? succession.epoch + 1, senderOf(data));
      changed();
    }
  };

  /** A leader's answer to a message of another context. */
  function answer(data) {
    if (data.type === 'acquire') {
      // Without a scope and an origin the leader would grant a scope named "undefined".
      if (!isDemand(data.demand)) throw new TypeError('an acquire without a demand it can read');
      post({ type: 'grant', to: data.from, id: data.id, grant: leader.acquire(data.demand) });
    } else if (data.type === 'observe') leader.observe(data.ticket, data.status, data.observation);
    else if (data.type === 'release') leader.release(data.ticket);
    else if (data.type === 'refund') leader.refund(data.ticket);
  }

  /**
   * Whether the state kept is a final one to take as it is: its leader's last word, unless a later
   * leader took over after it (and may have spent it, then died without a word of its own).
   */
  function finalIsLatest() {
    return inherited.final && succession.isLatest(inherited.epoch, inherited.from);
  }

  /** Resolves once a final state to take as it is has come, or after FINAL_WITHIN. */
  function finalState() {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, FINAL_WITHIN);
      timer.unref?.();
      onFinal = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      onFinal = null;
    });
  }

  function ask(demand) {
    const id = nextQuestion++;
    return new Promise((resolve, reject) => {
      // Cleared once answered: a timer left running would keep a Node process alive for nothing.
      const asked = Date.now();
      const timer = setTimeout(() => {
        if (!pending.delete(id)) return;
        unansweredSince ??= asked;
        resolve({ ok: false, wait: ASK_AGAIN, reason: 'leader' });
      }, ANSWER_WITHIN);
      pending.set(id, { resolve, reject, timer, demand });
      post({ type: 'acquire', from: me, id, demand });
    });
  }

  /**
   * Answers, from this context's new leader pacer, the questions it asked while it had none: a
   * channel never delivers to its sender, so they would otherwise wait out ANSWER_WITHIN. In a
   * browser the lock is granted in a later task, after a page's first requests have asked.
   */
  function answerOwnQuestions() {
    for (const [id, { resolve, reject, timer, demand }] of pending) {
      pending.delete(id);
      clearTimeout(timer);
      try {
        resolve(leader.acquire(demand));
      } catch (error) {
        reject(error); // as the pacer's own throw would reach the queue
      }
    }
  }

  /** Whether this follower's questions have gone unanswered long enough for it to pace alone. */
  const leaderless = () => unansweredSince !== null && Date.now() - unansweredSince >= LEADERLESS_AFTER;

  /** A grant from this context's own pacer, while no leader answers. */
  function acquireAlone(demand) {
    if (alone === null) {
      alone = makePacer();
      alone.onChange(changed);
    }
    const grant = alone.acquire(demand);
    if (grant.ok) aloneTickets.add(grant.ticket.id);
    return grant;
  }

  /** Hands `ticket` back to the pacer that granted it, as a message of `type` when that is another context's. */
  const handBack = (type, ticket, message) => {
    holding.delete(ticket.id);
    const local = aloneTickets.delete(ticket.id) ? alone : leader;
    if (local === null) post({ type, ticket, ...message });
    else if (type === 'observe') local.observe(ticket, message.status, message.observation);
    else local[type](ticket);
  };

  return {
    acquire(demand) {
      if (leader !== null) return leader.acquire(demand);
      return leaderless() ? acquireAlone(demand) : ask(demand);
    },
    observe: (ticket, status, observation) => handBack('observe', ticket, { status, observation }),
    release: (ticket) => handBack('release', ticket),
    refund: (ticket) => handBack('refund', ticket),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // A follower pacing alone shows its own model; one that asks a leader has none to show.
    snapshot: () => (leader !== null ? leader.snapshot() : alone !== null && leaderless() ? alone.snapshot() : null),
    get leading() {
      return leader !== null;
    },
    close() {
      if (closed) return; // a second close must not cut the first one's wait for answers short
      if (leader !== null) post({ type: 'state', state: leader.export(), final: true, epoch, from: me });
      // Requests still out will not report back: their tickets must not hold the others.
      for (const ticket of holding.values()) post({ type: 'release', ticket });
      holding.clear();
      closed = true;
      clearInterval(heartbeat);
      stepDown?.();
      leader = null;
      alone = null;
      aloneTickets.clear();
      closeOnceAnswered(channel, me, new Set(pending.keys()));
      // The lock request stays queued until this context's turn (see above) and holds this
      // closure until then: let go of what it need not keep.
      inherited = { state: null, final: false, epoch: -1, from: null };
      listeners.clear();
      makePacer = null;
      for (const { resolve, timer } of pending.values()) {
        clearTimeout(timer);
        resolve({ ok: false, wait: Infinity, reason: 'closed' });
      }
      pending.clear();
    },
  };
}

/**
 * A new leader's pacer, from its predecessor's `state`. A state it cannot read (another version
 * of the package on this channel may send another shape) is as none, and reported: it starts
 * empty and probes.
 * Thrown from the lock's callback, it left a leader that never announced itself nor woke its
 * waiting requests, while the lock went on to the next in line (a second leader), or in Node 24
 * stayed held for good.
 */
function adopted(makePacer, state, spent) {
  const pacer = makePacer();
  try {
    pacer.adopt(state, { spent });
    return pacer;
  } catch (error) {
    report(error, "a predecessor's state could not be adopted; starting empty");
    return makePacer();
  }
}

/**
 * Closes a closing follower's `channel` once the questions it asked (ids in `unanswered`) are
 * answered, or after ANSWER_WITHIN, handing back every grant that arrives meanwhile: the leader
 * would otherwise hold those tickets (a probe, a concurrency slot) until they expire. Best
 * effort, as for a tab that dies: a grant later than that still waits out its TTL. In Node the
 * timer keeps the process (or worker thread) alive that long, or it would end before the grant.
 */
function closeOnceAnswered(channel, me, unanswered) {
  if (unanswered.size === 0) {
    channel.close();
    return;
  }
  const stop = setTimeout(() => channel.close(), ANSWER_WITHIN);
  channel.onmessage = ({ data }) => {
    if (data?.type !== 'grant' || data.to !== me || !isGrant(data.grant) || !unanswered.delete(data.id)) return;
    if (data.grant.ok) channel.postMessage({ type: 'refund', ticket: data.grant.ticket });
    if (unanswered.size > 0) return;
    clearTimeout(stop);
    channel.close();
  };
}

/**
 * The leaders a context has heard of, to tell whether a final state may have been spent since
 * it was sent: by epoch, since two senders' messages arrive in any order, and by sender, since
 * two leaders in a row share an epoch when the second heard nothing of the first.
 */
class Succession {
  /** The highest epoch heard (or this context's own, once it leads). */
  epoch = 0;
  /** The leaders heard at `epoch`. */
  #senders = new Set();
  /** Whether an unnamed leader (an older version's) was heard at `epoch`: it could be anyone. */
  #stranger = false;

  /** A `leader` or `state` message of `from` (null: unnamed) at `epoch`. */
  heard(epoch, from) {
    if (epoch > this.epoch) {
      this.epoch = epoch;
      this.#senders.clear();
      this.#stranger = false;
    }
    if (epoch < this.epoch) return;
    if (from === null) this.#stranger = true;
    else this.#senders.add(from);
  }

  /** Whether `from`, at `epoch`, is the only leader heard at the highest epoch. */
  isLatest(epoch, from) {
    return epoch === this.epoch && !this.#stranger && this.#senders.size === 1 && this.#senders.has(from);
  }

  /** This context (`me`) leads: one more than any heard. Returns its epoch. */
  lead(me) {
    this.heard(this.epoch + 1, me);
    return this.epoch;
  }
}

/** Whether `grant` reads as a Grant (pacer.js): a ticket to go with, or a wait. */
function isGrant(grant) {
  if (grant === null || typeof grant !== 'object') return false;
  return grant.ok === true ? typeof grant.ticket?.id === 'string' : grant.ok === false && typeof grant.wait === 'number';
}

/** Whether `demand` reads as a Demand (pacer.js). */
function isDemand(demand) {
  if (demand === null || typeof demand !== 'object') return false;
  const { scope, origin, cost, bytes } = demand;
  // As the client's options make them: a cost below 1 would be granted free by a pacer, and a
  // fraction would make it throw on every repeat of the question.
  return typeof scope === 'string' && typeof origin === 'string' && Number.isSafeInteger(cost) && cost >= 1 && Number.isSafeInteger(bytes) && bytes >= 0;
}

/** A message's leader epoch, or undefined when it has none (an older version sent it). */
function epochOf(data) {
  return Number.isSafeInteger(data.epoch) && data.epoch >= 0 ? data.epoch : undefined;
}

/** A message's sender, or null when it names none (an older version's). */
function senderOf(data) {
  return typeof data.from === 'string' ? data.from : null;
}
