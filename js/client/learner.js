// Learning a rate from 429 timing alone, for servers whose headers the client cannot read (CORS
// hides every response header not listed in Access-Control-Expose-Headers) or that send none.
//
// AIMD, as TCP does: the first 429 sets the rate to 90 % of the success rate measured over the
// last seconds (at least one: a burst that a server's capacity let through says nothing of its
// refill); each further 429 multiplies it by 0.75; every second without a 429 (after a
// 2 s calm) raises it by 5 %, probing for room, but only while requests use at least half the
// rate: a rate nobody sends at proves nothing, and would otherwise grow without bound (as TCP
// does not grow an unused window, RFC 7661). The growth is reckoned at each success for the time
// since the last step, so a slow rate (a request a minute) grows 5 % a second too, not 5 % a
// request; one step at most doubles it, as TCP's slow start. The rate becomes an edgebucket
// bucket (a burst of one second's worth), emptied at each 429 because the server has just said it
// is empty.

import { learnedConfiguration, configurationKey } from './policies.js';

/** Slowest rate learned: one request a minute. */
export const MIN_RATE = 1 / 60;
/** Fastest rate learned: a million requests a second (the engine allows up to 10^9). */
export const MAX_RATE = 1e6;
/** Rate assumed when a 429 comes before any success could be timed. */
const FIRST_GUESS = 1;
const DECREASE = 0.75;
const INCREASE = 1.05;
/** The most one step of growth multiplies the rate by. */
const MAX_STEP = 2;
const MEASURE_OVER = 10_000;
/** The shortest span a first rate is measured over. */
const MEASURE_AT_LEAST = 1_000;
const CALM = 2_000;
const MAX_BACKOFF = 30_000;
/** Successes remembered, for measuring the rate. */
const REMEMBERED = 256;

export class Learner {
  #makeBucket;
  #successes = [];
  #last429 = -Infinity;
  /** When a 429 last emptied the bucket, counted or not: a grant before it is not refunded. */
  #lastEmptied = -Infinity;
  #lastIncrease = -Infinity;
  #strikes = 0;
  #key = '';
  /** Requests per second, once a 429 has been seen. */
  rate = undefined;
  /** The bucket pacing at `rate`, or null before the first 429. */
  bucket = null;

  /** @param {(configuration: object, previous: object | null) => object} makeBucket makes or reconfigures a bucket */
  constructor(makeBucket) {
    this.#makeBucket = makeBucket;
  }

  /** A response that was not a 429 (or 503). */
  success(now) {
    this.#strikes = 0;
    this.#successes.push(now);
    if (this.#successes.length > REMEMBERED) this.#successes.shift();
    if (this.rate === undefined) return;
    // The time since the last step (or since the calm after a 429 ended), in steps of a second.
    const span = now - Math.max(this.#lastIncrease, this.#last429 + CALM);
    if (span < 1000) return;
    this.#lastIncrease = now;
    if (span === Infinity) return; // a rate adopted from another context: growth counts from now
    if (2 * this.#successRate(now, span) < this.rate) return;
    this.#setRate(this.rate * Math.min(INCREASE ** (span / 1000), MAX_STEP));
  }

  /**
   * A 429 that said nothing of the rate, to a request granted at `grantedAt`. Returns the extra
   * backoff (ms) for consecutive 429s; the emptied bucket already makes the next request wait
   * one interval.
   */
  rejected(now, grantedAt = now) {
    // Sent before the last 429 came back: the same congestion event, as TCP counts one loss per
    // window. Every request of a burst the server cut short answers 429; each counted on its own
    // would cut the rate by 0.75 per request in flight and double the backoff as often.
    if (this.rate !== undefined && grantedAt <= this.#last429) {
      this.#empty(now);
      return 0;
    }
    this.#strikes += 1;
    const recent = this.#successes.filter((t) => t > now - MEASURE_OVER && t > this.#last429);
    this.#last429 = now;
    this.#lastIncrease = now;
    if (this.rate === undefined) {
      const span = Math.max(now - recent[0], MEASURE_AT_LEAST);
      this.#setRate(recent.length >= 2 ? (0.9 * recent.length * 1000) / span : FIRST_GUESS);
    } else {
      this.#setRate(this.rate * DECREASE);
    }
    this.#empty(now);
    return this.#strikes > 1 ? Math.min(500 * 2 ** (this.#strikes - 2), MAX_BACKOFF) : 0;
  }

  /**
   * Gives back the token a grant made at `grantedAt` took from `charged` (the bucket then, or
   * null), unless a 429 has emptied the bucket since: the server said it was empty after that.
   */
  refund(charged, grantedAt) {
    if (charged !== null && charged === this.bucket && grantedAt > this.#lastEmptied) charged.addTokens(1);
  }

  /** Whole tokens in the bucket (negative in debt), or undefined before the first 429. */
  get level() {
    return this.bucket === null ? undefined : Number(this.bucket.getAvailableTokens());
  }

  /**
   * Starts from a rate another context learned, with its bucket's `level` (none: empty, as from
   * a version that did not send it; a debt counts as empty); `empty`: its bucket may have been
   * spent there since.
   */
  adopt(rate, { empty = false, level = 0 } = {}) {
    if (!(typeof rate === 'number' && rate > 0)) return;
    this.#setRate(rate);
    this.#lowerTo(empty || !(level > 0) ? 0 : Math.floor(level));
  }

  /** The server has just said it is empty. */
  #empty(now) {
    this.#lastEmptied = now;
    this.#lowerTo(0);
  }

  /** Takes tokens until at most `level` are left. */
  #lowerTo(level) {
    const extra = Number(this.bucket.getAvailableTokens()) - level;
    if (extra > 0) this.bucket.consumeIgnoringRateLimits(extra);
  }

  /** Successes per second over the last `over` ms, or since the oldest one remembered if all remembered are in it. */
  #successRate(now, over) {
    const recent = this.#successes.filter((t) => t > now - over);
    const span = recent.length === REMEMBERED ? now - recent[0] : over;
    return span > 0 ? (recent.length * 1000) / span : Infinity;
  }

  #setRate(rate) {
    this.rate = Math.min(Math.max(rate, MIN_RATE), MAX_RATE);
    const configuration = learnedConfiguration(this.rate);
    const key = configurationKey(configuration);
    if (key === this.#key) return;
    this.#key = key;
    this.bucket = this.#makeBucket(configuration, this.bucket);
  }
}
