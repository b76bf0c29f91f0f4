// The pacing model: what the client has learned about each server, and whether a request may go
// now. Decisions are synchronous and local, so a queue (or a tab leader, see tabs.js) can ask
// `acquire` and get an answer without awaiting anything.
//
// - A *scope* is where requests go: an origin, optionally split by the client's `partition`
//   option. A scope learns which policies its requests fall under and their partition keys.
// - A *limit* is one policy × partition key of one origin: a local edgebucket Bucket configured
//   from `q`/`w` (policies.js) and corrected from `r`/`t`. Two scopes the server puts in the
//   same partition (`pk`) share it. Without a `pk` (X-RateLimit, or a draft-10 policy without
//   one) the scope stands for the partition: the client's `partition` option is its word that
//   the server counts those requests apart. `t` bounds a limit both ways: a window's end holds
//   what `r` allows until then (`allowance`), and a `t` sooner than the local bucket's own wait
//   lets one request's worth go then (`promise`); see #holdUntilReset.
// - Retry-After blocks the scope and takes precedence over `t`: a limit whose `r` is short of a
//   request then gets the promise at the block's end (#promiseRetryAfter). A 429 that says
//   nothing feeds the scope's Learner (learner.js).
// - Until a scope's first response, one request at a time goes (a probe), so the policy is
//   known before a burst is sent.
//
// docs/client.md explains how corrections account for requests in flight.

import { PACED_UNITS, CONCURRENCY_UNIT, MIN_WINDOW, configurationFor, configurationKey } from './policies.js';
import { Learner } from './learner.js';

const NANOS_PER_MS = 1e6;
/** Cached answers after which a scope's probe ends all the same. */
const CACHED_PROBES = 3;

/**
 * A scope unused this long (and at least its longest window, when its limits would be full
 * again anyway, and the 429 learner's interval) is forgotten with the limits only it used, so a
 * server keyed by thousands of partitions does not grow the client without bound. A forgotten
 * scope probes again.
 */
const IDLE_SCOPE_MS = 60_000;
/** How often idle scopes are looked for, at most. */
const SWEEP_EVERY_MS = 10_000;
/**
 * The deepest debt a limit's bucket takes, in refills of its quota. A quota lowered far below
 * the units in flight (`q=1` with a megabyte upload out) asks for more; the engine could not
 * count the wait of a million 30-day windows, and settling forgives what the server refused
 * anyway. A thousand of the longest windows is 82 years.
 */
const MAX_DEBT_REFILLS = 1000;
/**
 * The most policies a scope keeps, the last seen: names can vary per resource (`RateLimit:
 * "GET /items/123";…`, `X-RateLimit-Resource`), and without a `RateLimit-Policy` listing them
 * all, none is ever known to be lifted; every request would be checked against each.
 */
export const MAX_SCOPE_POLICIES = 64;

/**
 * What a request needs from the model.
 *
 * @typedef {object} Demand
 * @property {string} scope where it goes (see createClient's `partition`)
 * @property {string} origin its origin
 * @property {number} cost units of a `requests` policy it consumes
 * @property {number} bytes its content bytes, for `content-bytes` policies
 */

/**
 * Proof of a grant, handed back with the response.
 *
 * @typedef {{ id: string, scope: string, origin: string }} Ticket
 */

/**
 * `acquire`'s answer: go with a ticket, or wait `wait` ms (Infinity: until something changes).
 * An infinite wait (a probe's answer, a concurrency slot) comes with `recheck`, the ms until the
 * oldest ticket expires: a ticket never handed back (a tab closed mid-request) then frees its
 * hold, and only a new look at the model notices.
 *
 * @typedef {{ ok: true, ticket: Ticket } | { ok: false, wait: number, reason: string, recheck?: number }} Grant
 */

/**
 * The statuses whose `Retry-After` holds back the whole scope: 429 and 503 (the server or the
 * client's quota is unavailable). Elsewhere it concerns one resource: a 202's polling hint for
 * an asynchronous job, a redirect's delay.
 */
export const BLOCKING_STATUSES = new Set([429, 503]);

export class Pacer {
  #engine;
  #now;
  #random;
  #jitter;
  #probe;
  #ticketTtl;
  #origin;
  #scopes = new Map();
  #limits = new Map();
  #tickets = new Map();
  #next = 1;
  #lastSweep;
  // Ticket ids name their pacer, so a tab leader never takes a predecessor's ticket for its own.
  #nonce = Math.random().toString(36).slice(2, 10);
  #listeners = new Set();

  /**
   * @param {object} options
   * @param {{ Bucket: any, BucketConfiguration: any, TokensInheritanceStrategy: any }} options.engine the edgebucket package
   * @param {() => number} options.now the clock, milliseconds (monotonic preferred)
   * @param {() => number} [options.random] uniform in [0, 1), for jitter
   * @param {number} [options.jitter] waits are stretched by up to this fraction
   * @param {boolean} [options.probe] one request at a time to a scope until its first response
   * @param {number} [options.ticketTtl] a ticket not returned within this many ms is forgotten
   */
  constructor({ engine, now, random = Math.random, jitter = 0.1, probe = true, ticketTtl = 300_000 }) {
    this.#engine = engine;
    this.#now = now;
    this.#random = random;
    this.#jitter = jitter;
    this.#probe = probe;
    this.#ticketTtl = ticketTtl;
    this.#origin = now();
    this.#lastSweep = this.#origin;
  }

  /**
   * Whether a request may go now. A grant consumes from every limit of its scope at once.
   *
   * @param {Demand} demand
   * @returns {Grant}
   */
  acquire(demand) {
    const now = this.#now();
    this.#expireTickets(now);
    const scope = this.#scope(demand);
    // Marked used before the sweep: a scope asked for now is not idle, even if its last request
    // was a minute ago (the 429 learner's slowest rate spaces requests that far apart).
    scope.lastUsed = now;
    this.#sweep(now);
    if (this.#probe && !scope.known && scope.probe !== null) return this.#held(now, 'probe');
    let wait = 0;
    let reason = '';
    const consider = (ms, why) => {
      if (ms > wait) [wait, reason] = [ms, why];
    };
    consider(scope.blockedUntil - now, 'retry-after');
    const limits = this.#limitsOf(scope);
    for (const limit of limits) {
      keepRoomForInflight(limit);
      keepPromise(limit, now);
      const [ms, why] = this.#waitFor(limit, demand, now);
      consider(ms, why);
    }
    if (scope.learner.bucket) consider(this.#stretched(nanosToWait(scope.learner.bucket, 1) / NANOS_PER_MS), 'learned');
    if (wait === Infinity) return this.#held(now, reason);
    if (wait > 0) return { ok: false, wait: Math.ceil(wait), reason };
    return { ok: true, ticket: this.#grant(scope, limits, demand, now) };
  }

  /**
   * What the response to a granted request said.
   *
   * @param {Ticket} ticket
   * @param {number} status
   * @param {import('./headers.js').Observation} observation
   */
  observe(ticket, status, observation) {
    const now = this.#now();
    const record = this.#tickets.get(ticket.id);
    const scope = this.#scope(ticket);
    // A cached response says nothing of the server's policy: the next request probes again, but
    // only a few times, or an origin whose every answer is cached would be fetched one at a time.
    if (!observation.cached || ++scope.cachedProbes >= CACHED_PROBES) scope.known = true;
    scope.lastUsed = now;
    // A cached response's quota fields describe the past, but its Retry-After (already less
    // the response's Age) still says when to come back.
    if (observation.cached) this.#obeyRetryAfter(scope, status, observation, now);
    else this.#learnFrom(scope, record, status, observation, now);
    this.#forget(ticket, record);
  }

  /** A granted request ended without a response (network error, abort): the server may have counted it. */
  release(ticket) {
    this.#forget(ticket, this.#tickets.get(ticket.id));
  }

  /**
   * A grant that was never used (its request left the queue while the grant was decided, or the
   * grant reached a tab after it had asked again): what it took comes back.
   */
  refund(ticket) {
    const record = this.#tickets.get(ticket.id);
    if (record) {
      for (const limit of record.limits) giveBack(limit, ticket.id);
      this.#scopes.get(ticket.scope)?.learner.refund(record.learned, record.at);
    }
    this.#forget(ticket, record);
  }

  /** Calls `listener` whenever a waiting request might now go; returns the unsubscribe function. */
  onChange(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** What the model holds, for stats and debugging. */
  snapshot() {
    const now = this.#now();
    const limits = [...this.#limits.values()].map((limit) => ({
      ...describeLimit(limit),
      available: limit.bucket ? Number(limit.bucket.getAvailableTokens()) : undefined,
      inFlight: limit.inflight.size,
    }));
    const scopes = [...this.#scopes.values()].map((scope) => ({
      scope: scope.key,
      blockedFor: Math.max(0, scope.blockedUntil - now),
      learnedRate: scope.learner.rate,
      learnedLevel: scope.learner.level,
    }));
    return { limits, scopes };
  }

  /**
   * The learned state, to hand to a successor (a tab that takes over leading): times are made
   * relative, bucket levels whole tokens (rounded down, so a successor never starts richer).
   */
  export() {
    const now = this.#now();
    const limits = [...this.#limits.values()].map((limit) => ({
      ...describeLimit(limit),
      longestReset: limit.longestReset,
      admittedReset: limit.admittedReset,
      level: limit.bucket ? Number(limit.bucket.getAvailableTokens()) : undefined,
      allowance: limit.allowance && limit.allowance.until > now
        ? { remaining: limit.allowance.remaining, for: limit.allowance.until - now }
        : null,
      promise: limit.promise ? { cost: limit.promise.cost, for: Math.max(0, limit.promise.at - now) } : null,
    }));
    const scopes = [...this.#scopes.values()].map((scope) => ({
      scope: scope.key,
      origin: scope.origin,
      known: scope.known,
      blockedFor: Math.max(0, scope.blockedUntil - now),
      policies: [...scope.policies.values()],
      learnedRate: scope.learner.rate,
      learnedLevel: scope.learner.level,
    }));
    return { limits, scopes };
  }

  /**
   * Takes over a predecessor's `export()`. `spent`: the predecessor may have granted more since
   * it exported (a heartbeat, not its last word), so every level and allowance starts empty: what
   * it had could all be spent, and only refill and the server's `r` raise them.
   */
  adopt(state, { spent = false } = {}) {
    const now = this.#now();
    for (const saved of state?.limits ?? []) {
      const limit = this.#limit(saved.origin, saved, saved.scope);
      Object.assign(limit, { unit: saved.unit, quota: saved.quota, window: saved.window, longestReset: saved.longestReset, admittedReset: saved.admittedReset === true });
      this.#configure(limit);
      const level = spent ? 0 : saved.level;
      if (limit.bucket !== null && level !== undefined) setLevel(limit.bucket, Math.min(level, limit.quota), limit.quota);
      if (saved.allowance) limit.allowance = { remaining: spent ? 0 : saved.allowance.remaining, until: now + saved.allowance.for };
      // A heartbeat's promise may have been granted since (see #holdUntilReset): only a last word hands it on.
      if (saved.promise && !spent) limit.promise = { cost: saved.promise.cost, at: now + saved.promise.for };
    }
    for (const saved of state?.scopes ?? []) {
      const scope = this.#scope(saved);
      scope.known = saved.known;
      scope.blockedUntil = Math.max(scope.blockedUntil, now + saved.blockedFor);
      for (const [policy, partitionKey] of saved.policies) listPolicy(scope, policy, partitionKey);
      if (saved.learnedRate !== undefined) scope.learner.adopt(saved.learnedRate, { empty: spent, level: saved.learnedLevel });
    }
  }

  // ---- granting ----

  #grant(scope, limits, demand, now) {
    const ticket = { id: `${this.#nonce}.${this.#next++}`, scope: scope.key, origin: scope.origin };
    // `learned`: the 429 learner's bucket it was charged to (or null), for a refund.
    const record = { ticket, at: now, limits: [], learned: scope.learner.bucket };
    for (const limit of limits) this.#consume(limit, demand, record);
    const { learned } = record;
    if (learned && !learned.tryConsume(1)) learned.consumeIgnoringRateLimits(1);
    if (!scope.known) scope.probe = ticket.id;
    this.#tickets.set(ticket.id, record);
    return ticket;
  }

  #waitFor(limit, demand, now) {
    if (limit.unit === CONCURRENCY_UNIT) {
      // A quota of 0 would hold every request for good (only a settling one wakes the queue):
      // it is left to the server, whose refusals then slow the scope (the 429 learner).
      return limit.quota >= 1 && limit.inflight.size >= limit.quota ? [Infinity, 'concurrency'] : [0, ''];
    }
    const cost = this.#cost(limit, demand);
    if (cost === 0) return [0, ''];
    let wait = 0;
    let reason = '';
    if (limit.allowance !== null && limit.allowance.until <= now) limit.allowance = null;
    if (limit.allowance !== null && limit.allowance.remaining < cost) {
      [wait, reason] = [limit.allowance.until - now, 'reset'];
    }
    if (limit.bucket !== null) {
      let [refill, why] = [this.#stretched(nanosToWait(limit.bucket, cost) / NANOS_PER_MS), 'policy'];
      // The server named a sooner time for this many units (#holdUntilReset): not later than that.
      const { promise } = limit;
      if (promise !== null && cost <= promise.cost && promise.at - now < refill) [refill, why] = [promise.at - now, 'reset'];
      if (refill > wait) [wait, reason] = [refill, why];
    }
    return [wait, reason];
  }

  #consume(limit, demand, record) {
    const id = record.ticket.id;
    if (limit.unit === CONCURRENCY_UNIT) {
      limit.inflight.set(id, { mark: limit.dispatched, cost: 0, overlap: 0 });
      record.limits.push(limit);
      return;
    }
    const cost = this.#cost(limit, demand);
    if (cost === 0) return;
    if (limit.bucket !== null && !limit.bucket.tryConsume(cost)) limit.bucket.consumeIgnoringRateLimits(cost);
    if (limit.allowance !== null) limit.allowance.remaining -= cost;
    // The next request takes what a `t` promised, whether that time or the refill let it go: one
    // request's worth, never a second one at the promised time.
    limit.promise = null;
    limit.dispatched += cost;
    limit.inflight.set(id, { mark: limit.dispatched, cost, overlap: 0 });
    record.limits.push(limit);
  }

  /** Units a request takes from a limit; never more than the quota, or it could never go. */
  #cost(limit, demand) {
    const units = limit.unit === 'content-bytes' ? demand.bytes : demand.cost;
    if (!(units > 0)) return 0;
    return limit.quota >= 1 ? Math.min(units, limit.quota) : units;
  }

  /** An infinite wait, rechecked when the oldest ticket expires (see Grant). */
  #held(now, reason) {
    const oldest = this.#tickets.values().next().value;
    const recheck = oldest === undefined ? Infinity : Math.max(1, oldest.at + this.#ticketTtl - now);
    return { ok: false, wait: Infinity, reason, recheck };
  }

  /**
   * `wait` stretched by the jitter. A deadline the server named (Retry-After, a window's end,
   * the 429 backoff) is stretched once, when learned: stretching what is left at each look would
   * fade to nothing as the end nears, and clients told the same time would return together. A
   * refill wait, which no two clients share, is stretched when computed.
   */
  #stretched(wait) {
    return wait > 0 ? Math.ceil(wait * (1 + this.#jitter * this.#random())) : wait;
  }

  // ---- learning ----

  /**
   * A Retry-After on a 429 or 503 blocks the scope; whether it named a wait. A zero one (or a
   * date already past) names none: taken as told, a 429 would switch off every backoff and the
   * client would retry as fast as the server refuses.
   */
  #obeyRetryAfter(scope, status, observation, now) {
    const retryAfter = BLOCKING_STATUSES.has(status) ? observation.retryAfter : undefined;
    if (retryAfter !== undefined) scope.blockedUntil = Math.max(scope.blockedUntil, now + this.#stretched(retryAfter));
    return retryAfter > 0;
  }

  #learnFrom(scope, record, status, observation, now) {
    const retryAfterGiven = this.#obeyRetryAfter(scope, status, observation, now);
    // X-RateLimit's reset is mostly a clock time (an epoch second or a date, read against the
    // server's Date, itself whole seconds): a second coarser than a `t` (see #holdUntilReset).
    const answer = { record, status, retryAfterGiven, resetSlack: observation.dialect === 'x-ratelimit' ? 1000 : 0, now };
    let told = false;
    for (const limit of observation.limits) told = this.#learnLimit(scope, limit, answer) || told;
    if (observation.complete) dropUnlisted(scope, observation.limits);
    if (status === 429 && !told) {
      // A Retry-After says when to come back, not how fast to go then: without a rate from the
      // headers the learner still learns one, and the Retry-After's wait replaces its backoff.
      const backoff = scope.learner.rejected(now, record?.at);
      if (!retryAfterGiven) {
        scope.blockedUntil = Math.max(scope.blockedUntil, now + this.#stretched(backoff));
        scope.silent429 = true;
      }
    } else if (status < 400) {
      // A rate learned only from Retry-After 429s gives way once the server's own headers pace
      // the scope: they tell the rate, the learner guessed it (and from a 429 before two
      // successes, at one request a second). A server silent on its 429s keeps the learner.
      if (told && !scope.silent429 && scope.learner.rate !== undefined) scope.learner = this.#newLearner();
      scope.learner.success(now);
    }
  }

  /** Learns one limit; whether it said when quota returns (`r` or `t`). */
  #learnLimit(scope, seen, { record, status, retryAfterGiven, resetSlack, now }) {
    if (!PACED_UNITS.has(seen.unit) && seen.unit !== CONCURRENCY_UNIT) return false;
    listPolicy(scope, seen.policy, seen.partitionKey);
    const limit = this.#limit(scope.origin, seen, scope.key);
    limit.unit = seen.unit;
    if (seen.quota !== undefined) limit.quota = seen.quota;
    if (seen.window !== undefined) limit.window = seen.window;
    if (seen.reset !== undefined) learnReset(limit, seen.reset, !BLOCKING_STATUSES.has(status));
    if (limit.unit === CONCURRENCY_UNIT) {
      // A concurrency cap has no bucket: one kept from a rate would be charged against the cap.
      [limit.bucket, limit.configurationKey] = [null, ''];
      return false;
    }
    this.#configure(limit);
    // A 429 naming only `t` (the draft's own example) means nothing remains until then.
    const remaining = seen.remaining ?? (status === 429 && seen.reset !== undefined ? 0 : undefined);
    if (remaining === undefined) return false;
    const cost = record === undefined ? 1 : (limit.inflight.get(record.ticket.id)?.cost ?? 1);
    const estimate = this.#correct(limit, record, remaining);
    // Each answer whose `r` is short of its cost replaces what an earlier one promised (with its
    // own promise, or none).
    if (remaining < cost && limit.bucket !== null) limit.promise = null;
    if (!retryAfterGiven && seen.reset > 0) {
      // Since the grant, so the server's handling too: a slow answer may carry a `t` computed on
      // arrival or on leaving, and counts for a second at most.
      const flight = record === undefined ? 0 : Math.min(now - record.at, 1000);
      this.#holdUntilReset(limit, { remaining, estimate, cost, flight, resetSlack }, seen.reset, now);
    } else if (retryAfterGiven) {
      this.#promiseRetryAfter(limit, { remaining, cost }, scope.blockedUntil, now);
    }
    // A 429 is this limit's doing only when it had no room for the request: one that shows room
    // was refused for something else (a secondary limit, an origin's own 429 behind a gateway),
    // and the 429 learner must slow the scope. An exhausted limit says when quota returns only with
    // a reset still ahead, or with a window that paces (a bucket: a quota of 0 makes none); else
    // the window is a guess, and the learner must slow the scope too.
    if (status !== 429) return true;
    const windowKnown = limit.window !== undefined || limit.longestReset > 0;
    return remaining < cost && (seen.reset > 0 || (limit.bucket !== null && windowKnown));
  }

  /** (Re)configures a limit's bucket from what is known; a window never told is guessed from resets. */
  #configure(limit) {
    let window = limit.window;
    if (window === undefined && limit.quota !== undefined) {
      window = Math.max(Math.ceil(limit.longestReset / 1000) * 1000, MIN_WINDOW);
    }
    const configuration = configurationFor({ policy: limit.policy, quota: limit.quota, window });
    const key = configurationKey(configuration);
    if (key === limit.configurationKey) return;
    limit.configurationKey = key;
    limit.bucket = configuration === null ? null : this.#bucket(configuration, limit.bucket);
  }

  /**
   * Sets the bucket to what the server's `r` implies now, never above the truth (docs/client.md,
   * "Corrections"). `r` was counted when the server handled this request. Requests sent after it,
   * and earlier ones still unanswered, may not have been counted yet: subtracting them gives the
   * likely level. Earlier requests answered meanwhile (`overlap`) were probably counted, but the
   * server may have handled them after this one: subtracting those too gives a sure lower bound.
   * The likely level is trusted only as far as the local bucket, which was itself never above the
   * truth; the sure one always. Returns the estimate.
   */
  #correct(limit, record, remaining) {
    const mine = record === undefined ? undefined : limit.inflight.get(record.ticket.id);
    let unseen = mine ? limit.dispatched - mine.mark : 0;
    for (const [id, entry] of limit.inflight) {
      if (!mine || (id !== record.ticket.id && entry.mark < mine.mark)) unseen += entry.cost;
    }
    keepRoomForInflight(limit);
    const quota = limit.quota ?? Infinity;
    const likely = Math.min(remaining - unseen, quota);
    // Without its own entry here (the limit was new to the request's scope when it left, or the
    // ticket expired), nothing says what the server counted after this request: requests sent
    // later may be answered already. The likely level is then trusted only as far as the local
    // bucket, which a new limit's fresh bucket (full) does not bound.
    const sure = mine ? likely - mine.overlap : -Infinity;
    if (limit.bucket === null) return likely;
    const level = Number(limit.bucket.getAvailableTokens());
    const estimate = Math.max(sure, Math.min(level, likely));
    // Equal whole tokens: keep the bucket, and the fraction of a token it has refilled since.
    if (estimate !== level) setLevel(limit.bucket, estimate, limit.quota);
    return estimate;
  }

  /**
   * `t` with `r`: no more than `r` until `t` (a window's end). A token bucket that reports its
   * wait for the request's tokens rounded up to whole seconds is recognized and our finer wait is
   * kept, or every empty bucket would cost a second. Its wait, when it answered, was at most ours
   * now (our level is never above its own) plus the flight since: a `t` no longer than that
   * rounded up is such a wait, give or take `resetSlack` for a coarser reset; a longer one is a
   * window's end, held. A `t` shorter than our own wait is none that rounding up explains: the
   * server has the request's units sooner than our bucket (a fixed window ending, a faster refill
   * than `q`/`w` tell), and says when. That is a `promise` of the request's cost by `t`: the wait
   * for that many units is cut to it, and once it has come the level is raised to that cost, less
   * what is still in flight (keepPromise). Only that: the answer to the request it lets go tells
   * the rest with its `r`. It is no hold: a refill the local bucket gets sooner (a debt for
   * requests in flight, forgiven when they are refused) still counts, so a wait is only ever cut.
   * Each answer whose `r` is below its cost replaces the promise (with a new one, or none: its
   * `t` is then a window's end or our own wait).
   */
  #holdUntilReset(limit, { remaining, estimate, cost, flight, resetSlack }, reset, now) {
    if (remaining < cost && limit.bucket !== null) {
      const ownWait = nanosToWait(limit.bucket, cost) / NANOS_PER_MS;
      if (reset < ownWait) {
        limit.promise = { cost, at: now + this.#stretched(reset) };
        return;
      }
      if (reset <= Math.ceil((ownWait + flight) / 1000) * 1000 + resetSlack) return;
    }
    limit.allowance = { remaining: estimate, until: now + this.#stretched(reset) };
  }

  /**
   * A Retry-After on a 429 or 503 in place of `t` (it takes precedence, draft-10 §7): the scope is
   * blocked until `until` (#obeyRetryAfter, stretched once there), and a limit whose `r` is below
   * the request's cost, while our bucket would wait longer for it, is told the same as by a `t`
   * sooner than that wait: the server has the units by then. The request's cost is promised at
   * the block's end (keepPromise), so one request's worth goes then, never sooner and never a
   * burst, and its answer's `r` tells the rest. A limit whose own wait ends sooner, or that shows
   * room, is left as it was. Like a `t`, each such answer replaces the promise. A 429 without
   * rate headers names no limit: its limits keep their own waits (and any promise), and the 429
   * learner paces the scope after the block.
   */
  #promiseRetryAfter(limit, { remaining, cost }, until, now) {
    if (!(remaining < cost) || limit.bucket === null) return;
    const ownWait = nanosToWait(limit.bucket, cost) / NANOS_PER_MS;
    if (until - now < ownWait) limit.promise = { cost, at: until };
  }

  #bucket(configuration, previous) {
    const { Bucket, BucketConfiguration, TokensInheritanceStrategy } = this.#engine;
    const parsed = BucketConfiguration.fromJSON(configuration);
    if (previous) {
      previous.replaceConfiguration(parsed, TokensInheritanceStrategy.AS_IS);
      return previous;
    }
    return Bucket.builder().withConfiguration(parsed).withCustomTimeMeter(this.#meter).build();
  }

  // Nanoseconds since the pacer started: exact as a number for 104 days.
  #meter = () => {
    const nanos = Math.round((this.#now() - this.#origin) * NANOS_PER_MS);
    return Number.isSafeInteger(nanos) ? nanos : BigInt(nanos);
  };

  // ---- bookkeeping ----

  #scope({ scope: key, origin }) {
    let scope = this.#scopes.get(key);
    if (!scope) {
      scope = {
        key,
        origin,
        known: false,
        cachedProbes: 0,
        probe: null,
        blockedUntil: 0,
        lastUsed: this.#now(),
        policies: new Map(), // JSON [policy, partitionKey] -> [policy, partitionKey]; see listPolicy
        learner: this.#newLearner(),
        silent429: false, // a 429 that named no wait was seen: see #learnFrom
      };
      this.#scopes.set(key, scope);
    }
    return scope;
  }

  #newLearner() {
    return new Learner((configuration, previous) => this.#bucket(configuration, previous));
  }

  #limit(origin, { policy, partitionKey }, scopeKey) {
    const key = limitKey(origin, policy, partitionKey, scopeKey);
    let limit = this.#limits.get(key);
    if (!limit) {
      limit = {
        origin,
        policy,
        partitionKey,
        scope: partitionKey === '' ? scopeKey : undefined,
        unit: 'requests',
        quota: undefined,
        window: undefined,
        longestReset: 0,
        admittedReset: false,
        configurationKey: '',
        bucket: null,
        allowance: null,
        promise: null, // { cost, at }: a `t` promised `cost` units by `at` (#holdUntilReset)
        dispatched: 0,
        inflight: new Map(),
      };
      this.#limits.set(key, limit);
    }
    return limit;
  }

  #limitsOf(scope) {
    const limits = [];
    for (const [policy, partitionKey] of scope.policies.values()) {
      const limit = this.#limits.get(limitKey(scope.origin, policy, partitionKey, scope.key));
      if (limit) limits.push(limit);
    }
    return limits;
  }

  #forget(ticket, record) {
    if (record) {
      this.#tickets.delete(ticket.id);
      for (const limit of record.limits) settle(limit, ticket.id);
    }
    const scope = this.#scopes.get(ticket.scope);
    if (scope && scope.probe === ticket.id) scope.probe = null;
    for (const listener of this.#listeners) listener();
  }

  /** Forgets scopes idle past IDLE_SCOPE_MS (see there) and the limits no scope uses any more. */
  #sweep(now) {
    if (now - this.#lastSweep < SWEEP_EVERY_MS) return;
    this.#lastSweep = now;
    const busy = new Set([...this.#tickets.values()].map((record) => record.ticket.scope));
    for (const [key, scope] of this.#scopes) {
      const limits = this.#limitsOf(scope);
      const idleFor = Math.max(
        IDLE_SCOPE_MS,
        this.#learnedInterval(scope),
        ...limits.map((limit) => limit.window ?? limit.longestReset),
      );
      const held = limits.some((limit) => limit.allowance !== null && limit.allowance.until > now);
      const idle = now - scope.lastUsed > idleFor && scope.blockedUntil <= now && scope.probe === null && !held;
      if (idle && !busy.has(key)) this.#scopes.delete(key);
    }
    const used = new Set();
    for (const scope of this.#scopes.values()) for (const limit of this.#limitsOf(scope)) used.add(limit);
    for (const [key, limit] of this.#limits) {
      if (!used.has(limit) && limit.inflight.size === 0) this.#limits.delete(key);
    }
  }

  /**
   * The longest wait the 429 learner can impose between two requests (one interval at its rate,
   * stretched by the most jitter), or 0 before it learned a rate. A scope waiting that long is
   * not idle: forgetting it would forget the rate and start learning again with more 429s.
   */
  #learnedInterval(scope) {
    const rate = scope.learner.rate;
    return rate === undefined ? 0 : (1000 / rate) * (1 + this.#jitter);
  }

  // A ticket never handed back (its tab closed mid-request) stops counting as in flight.
  #expireTickets(now) {
    for (const [, record] of this.#tickets) {
      if (record.at > now - this.#ticketTtl) break;
      this.#forget(record.ticket, record);
    }
  }
}

/**
 * Forgets the policies of `scope` that a response listing all of them no longer names: the server
 * lifted them (a penalty that ended, a renamed policy) or moved the client to another partition,
 * and pacing by them would go on for good. Partition keys must match, except that a policy
 * listed with no key and no state (a `RateLimit-Policy` alone, as on a 304) says nothing about
 * partitions, and lifts none of its partitions' holds.
 * Their limits go with the next sweep once no scope uses them.
 */
function dropUnlisted(scope, listed) {
  const silent = (limit) => !limit.partitionKey && limit.remaining === undefined && limit.reset === undefined;
  const names = (policy, partitionKey) => (limit) =>
    limit.policy === policy && (limit.partitionKey === partitionKey || silent(limit));
  for (const [key, [policy, partitionKey]] of scope.policies) {
    if (!listed.some(names(policy, partitionKey))) scope.policies.delete(key);
  }
}

/**
 * Lists a policy in a scope, last: one entry per name and partition key, since a server may
 * apply two limits of one name to different partitions. The oldest goes past
 * MAX_SCOPE_POLICIES.
 */
function listPolicy(scope, policy, partitionKey) {
  const key = JSON.stringify([policy, partitionKey]);
  scope.policies.delete(key); // kept in the order last seen
  scope.policies.set(key, [policy, partitionKey]);
  if (scope.policies.size > MAX_SCOPE_POLICIES) scope.policies.delete(scope.policies.keys().next().value);
}

/**
 * Takes `reset` as a hint of the window (X-RateLimit tells none). An admitted answer's reset is
 * the best hint; a refusal's (429, 503) may be a penalty, a ban of a day, so it counts only until
 * an admitted answer has given one, and is then dropped: it is held all the same (`allowance`).
 */
function learnReset(limit, reset, admitted) {
  if (admitted && !limit.admittedReset) [limit.longestReset, limit.admittedReset] = [0, true];
  if (admitted || !limit.admittedReset) limit.longestReset = Math.max(limit.longestReset, reset);
}

/** A request that was never sent leaves a limit's in-flight set, its units back in the limit. */
function giveBack(limit, id) {
  const entry = limit.inflight.get(id);
  // Gone before `settle`: a request never sent overlaps nothing the server counted.
  limit.inflight.delete(id);
  if (!(entry?.cost > 0)) return;
  limit.bucket?.addTokens(entry.cost);
  if (limit.allowance !== null) limit.allowance.remaining += entry.cost;
}

/**
 * A request leaves a limit's in-flight set. Requests sent after it and still out record its cost
 * as overlap: the server may have counted it before or after them, whichever answers first.
 * And a server never holds less than nothing (docs/client.md, "A lowered quota"): a debt beyond
 * what is still in flight, which corrections took on for requests the server then refused, is
 * forgiven.
 */
function settle(limit, id) {
  keepRoomForInflight(limit);
  const { mark, cost } = limit.inflight.get(id) ?? {};
  limit.inflight.delete(id);
  if (!(cost > 0)) return;
  for (const entry of limit.inflight.values()) if (entry.mark > mark) entry.overlap += cost;
  if (limit.bucket === null || !(limit.quota >= 1)) return;
  const owed = inflightCost(limit);
  if (Number(limit.bucket.getAvailableTokens()) < -owed) setLevel(limit.bucket, -owed, limit.quota);
}

/**
 * Caps a limit's level at its quota less what is in flight (docs/client.md, section
 * "In flight at capacity"). The server counts a request when it arrives, the local bucket when it
 * leaves; while the server is full it loses refill that the local bucket, already charged, would
 * gain, so pacing would run ahead of the server by the flight time. Capping the level plus the
 * requests in flight at the quota, at every event that reads the level or ends a flight, counts
 * each request as if it arrived only when answered: never earlier than the server counted it.
 */
function keepRoomForInflight(limit) {
  if (limit.bucket === null || !(limit.quota >= 1) || limit.inflight.size === 0) return;
  const room = limit.quota - inflightCost(limit);
  if (Number(limit.bucket.getAvailableTokens()) >= room) setLevel(limit.bucket, room, limit.quota);
}

/**
 * Keeps a limit's promise once its time has come (see Pacer's #holdUntilReset): the level is
 * raised to the promised cost, less the requests still in flight (the server may count them
 * against it), and the promise is forgotten. Raised once, to the promised units (the answered
 * request's cost, which cheaper requests may share): a queue behind them goes as the answers'
 * `r` allow, not in a burst.
 */
function keepPromise(limit, now) {
  const { promise } = limit;
  if (promise === null || promise.at > now) return;
  limit.promise = null;
  if (limit.bucket === null) return;
  const level = Math.min(promise.cost, limit.quota) - inflightCost(limit);
  if (Number(limit.bucket.getAvailableTokens()) < level) setLevel(limit.bucket, level, limit.quota);
}

/** The units of the requests in flight on a limit. */
function inflightCost(limit) {
  let units = 0;
  for (const { cost } of limit.inflight.values()) units += cost;
  return units;
}

/** Nanoseconds until `tokens` are there, as a number (Infinity if never). */
function nanosToWait(bucket, tokens) {
  const probe = bucket.estimateAbilityToConsume(tokens);
  return probe.canBeConsumed ? 0 : Number(probe.nanosToWaitForRefill);
}

/** Sets a one-bandwidth bucket to exactly `level` whole tokens (no fraction): full, then a debt. */
function setLevel(bucket, level, capacity) {
  bucket.reset();
  const taken = Math.min(capacity - level, capacity * MAX_DEBT_REFILLS);
  if (taken > 0) bucket.consumeIgnoringRateLimits(taken);
}

/** What identifies a learned limit and its policy, as `snapshot()` and `export()` show it. */
function describeLimit(limit) {
  const { origin, policy, partitionKey, scope, unit, quota, window } = limit;
  return { origin, policy, partitionKey, scope, unit, quota, window };
}

/** A limit's key: the server's partition key (`pk`) when it sent one, else the client's scope. */
function limitKey(origin, policy, partitionKey, scopeKey) {
  return JSON.stringify(partitionKey === '' ? [origin, policy, '', scopeKey] : [origin, policy, partitionKey]);
}
