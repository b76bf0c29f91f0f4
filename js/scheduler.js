// Bucket4j's SchedulingBucket, as promises: a wait is a reservation (the tokens are consumed at
// once, as a debt), so a later request queues behind every earlier one, and the promise settles
// after the wait by setTimeout: the event loop is never blocked.
import { EdgeBucketError, invalidArgument } from './errors.js';
import { durationNanos, describe } from './runtime.js';
import * as ops from './operations.js';
import { readClock } from './clock.js';

/** setTimeout's longest delay; longer waits are chained. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A bucket's scheduling view: see `Bucket.asScheduler()`. */
export class Scheduler {
  #raw;
  #clock;
  #listener;

  /** @internal */
  constructor({ raw, clock, listener }) {
    this.#raw = raw;
    this.#clock = clock;
    this.#listener = listener;
  }

  /**
   * Resolves once `tokens` are consumed, waiting as long as it takes. Reserved at once, so it
   * is served before any later request. When `signal` aborts the wait, the promise rejects
   * with `signal.reason` (an `AbortError` DOMException unless another reason was given) and
   * the reserved tokens are returned to the bucket (Bucket4j keeps them).
   *
   * @param {number|bigint} tokens
   * @param {{ signal?: AbortSignal }} [options]
   * @returns {Promise<void>}
   */
  async consume(tokens, options) {
    const signal = signalOption(options);
    signal?.throwIfAborted();
    const wait = ops.reserve(this.#raw, tokens, Infinity, readClock(this.#clock));
    if (wait === null) {
      throw new EdgeBucketError('RESERVATION_OVERFLOW', `${tokens} tokens cannot be reserved: the wait would be unbounded`);
    }
    await this.#serve(tokens, wait, signal);
  }

  /**
   * Resolves `true` once `tokens` are consumed if they can be had within `maxWait` (a
   * duration: ms, '2s', { seconds: 2 }), or `false` at once (nothing consumed) if not.
   * Aborting works as for `consume`.
   *
   * @param {number|bigint} tokens
   * @param {number|string|object} maxWait
   * @param {{ signal?: AbortSignal }} [options]
   * @returns {Promise<boolean>}
   */
  async tryConsume(tokens, maxWait, options) {
    const signal = signalOption(options);
    signal?.throwIfAborted();
    const wait = ops.reserve(this.#raw, tokens, durationNanos(maxWait), readClock(this.#clock));
    if (wait === null) {
      this.#listener?.onRejected?.(tokens);
      return false;
    }
    await this.#serve(tokens, wait, signal);
    return true;
  }

  // A wait that does not complete (aborted, or a listener threw) gives its tokens back.
  async #serve(tokens, wait, signal) {
    if (wait > 0) {
      try {
        this.#listener?.onDelayed?.(wait);
        await sleep(wait, signal);
      } catch (reason) {
        ops.addTokens(this.#raw, tokens, readClock(this.#clock));
        if (signal?.aborted) this.#listener?.onAborted?.(reason);
        throw reason;
      }
    }
    this.#listener?.onConsumed?.(tokens);
  }
}

/** The `signal` of a scheduler call's options (`undefined` or `{ signal?: AbortSignal }`). */
function signalOption(options) {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object') {
    throw invalidArgument(`options must be an object, got ${describe(options)}`);
  }
  const { signal } = options;
  if (signal !== undefined && typeof signal?.throwIfAborted !== 'function') {
    throw invalidArgument(`options.signal must be an AbortSignal, got ${describe(signal)}`);
  }
  return signal;
}

/** Waits `nanos` (rounded up to whole milliseconds), or rejects with the signal's reason. */
function sleep(nanos, signal) {
  // A BigInt wait is beyond 2^53 ns; Number() may round it down, so add a millisecond.
  let remaining = Math.ceil(Number(nanos) / 1e6) + (typeof nanos === 'bigint' ? 1 : 0);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason); // aborted before the wait began (by a listener's onDelayed)
      return;
    }
    let timer;
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const next = () => {
      if (remaining <= 0) {
        signal?.removeEventListener('abort', onAbort);
        resolve();
        return;
      }
      const step = Math.min(remaining, MAX_TIMER_MS);
      remaining -= step;
      timer = setTimeout(next, step);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    next();
  });
}
