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
      } catch (failure) {
        ops.addTokens(this.#raw, tokens, readClock(this.#clock)); // the newest reservation: none behind it
        throw failure;
      }
      try {
        await this.#wait(tokens, wait, signal);
      } catch (reason) {
        if (signal?.aborted) this.#listener?.onAborted?.(reason);
        throw reason;
      }
    }
    this.#listener?.onConsumed?.(tokens);
  }

  /**
   * Waits out a reservation of `tokens`, or rejects with the signal's reason once it aborts. The
   * abort gives the tokens back at once, and the reservations made after this one, which waited
   * behind its tokens, move up (see `#giveBack`).
   */
  #wait(tokens, nanos, signal) {
    const queue = waitingOn(this.#raw);
    return new Promise((resolve, reject) => {
      const reservation = { tokens, signal, timer: null, dueAt: 0, schedule: null, fail: null };
      const leave = () => {
        cancel(reservation.timer);
        const index = queue.indexOf(reservation);
        if (index >= 0) queue.splice(index, 1);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        this.#giveBack(queue, reservation);
        leave();
        reject(signal.reason);
      };
      reservation.fail = (error) => {
        leave();
        reject(error);
      };
      reservation.schedule = (wait) => {
        cancel(reservation.timer);
        reservation.dueAt = Date.now() + Number(wait) / 1e6;
        reservation.timer = after(wait, () => {
          leave();
          resolve();
        });
      };
      if (signal?.aborted) {
        // Aborted before the wait began (by a listener's onDelayed): the newest reservation.
        ops.addTokens(this.#raw, tokens, readClock(this.#clock));
        reject(signal.reason);
        return;
      }
      queue.push(reservation);
      signal?.addEventListener('abort', onAbort, { once: true });
      reservation.schedule(nanos);
    });
  }

  /**
   * Returns an aborted `reservation`'s tokens and moves the later ones up: all are undone first,
   * which leaves the bucket as if none had been made (adding back is capped at capacity, which
   * is what the refill would have reached), then each is made again in order, so none is
   * overtaken by a request made after the abort. A later one whose own signal has aborted too
   * keeps its tokens until its own abort, which follows. A remade wait never ends later than
   * first promised: it can come out longer only if the bucket changed meanwhile (tokens taken
   * ignoring limits, a new configuration), and then the reservation keeps its time; one that
   * cannot be made again at all (its wait has become unbounded) takes its tokens back as a debt,
   * or fails with the core's error.
   */
  #giveBack(queue, reservation) {
    const now = readClock(this.#clock);
    const later = queue.slice(queue.indexOf(reservation) + 1).filter((each) => !each.signal?.aborted);
    for (const each of [reservation, ...later]) ops.addTokens(this.#raw, each.tokens, now);
    for (const each of later) {
      let wait = null;
      try {
        wait = ops.reserve(this.#raw, each.tokens, Infinity, now);
      } catch {
        // unbounded: taken back below
      }
      if (wait === null) {
        try {
          ops.consumeIgnoringRateLimits(this.#raw, each.tokens, now);
        } catch (error) {
          each.fail(error);
        }
      } else if (Number(wait) / 1e6 < each.dueAt - Date.now()) {
        each.schedule(wait);
      }
    }
  }
}

/** The reservations still waiting on a raw bucket, oldest first, shared by all its views. */
const waiting = new WeakMap();

function waitingOn(raw) {
  let queue = waiting.get(raw);
  if (queue === undefined) waiting.set(raw, (queue = []));
  return queue;
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

/** Calls `then` after `nanos` (rounded up to whole milliseconds); returns a handle for `cancel`. */
function after(nanos, then) {
  // A BigInt wait is beyond 2^53 ns; Number() may round it down, so add a millisecond.
  let remaining = Math.ceil(Number(nanos) / 1e6) + (typeof nanos === 'bigint' ? 1 : 0);
  const handle = { id: undefined };
  const next = () => {
    if (remaining <= 0) {
      then();
      return;
    }
    const step = Math.min(remaining, MAX_TIMER_MS);
    remaining -= step;
    handle.id = setTimeout(next, step);
  };
  next();
  return handle;
}

function cancel(handle) {
  if (handle) clearTimeout(handle.id);
}
