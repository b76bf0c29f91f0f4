// Bucket4j's SchedulingBucket, as promises: a wait is a reservation (the tokens are consumed at
// once, as a debt), so a later request queues behind every earlier one, and the promise settles
// after the wait by setTimeout: the event loop is never blocked.
import { EdgeBucketError, invalidArgument } from './errors.js';
import { durationNanos, describe, exactNumber, I64_MAX, isRawBucket, knownOptions, plainData } from './runtime.js';
import * as ops from './operations.js';
import { readClock, readingMillis, heldReading, timeArg } from './clock.js';
import { after } from './timers.js';
import { onAbort, hasAborted, signalReason } from './abort.js';

/** A bucket's scheduling view: see `Bucket.asScheduler()`. */
export class Scheduler {
  #raw;
  #clock;
  #listener;

  /** @internal */
  constructor(parts) {
    if (!isRawBucket(parts?.raw)) throw invalidArgument('use bucket.asScheduler() to make a scheduler');
    const { raw, clock, listener } = parts;
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
    const now = readClock(this.#clock);
    const at = this.#millis(now);
    const wait = ops.reserve(this.#raw, tokens, Infinity, now);
    if (wait === null) {
      throw new EdgeBucketError('RESERVATION_OVERFLOW', `${tokens} tokens cannot be reserved: the wait would be unbounded`);
    }
    await this.#serve(tokens, wait, signal, at);
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
    if (maxWait === Infinity) {
      // Refused as every infinite duration is, but with the call that does wait without bound.
      throw new EdgeBucketError('INVALID_DURATION', 'invalid duration "Infinity": maxWait must be finite; consume() waits as long as it takes');
    }
    const maxWaitNanos = durationNanos(maxWait);
    const now = readClock(this.#clock);
    const at = this.#millis(now);
    const wait = ops.reserve(this.#raw, tokens, maxWaitNanos, now);
    if (wait === null) {
      this.#listener?.onRejected?.(tokens);
      return false;
    }
    await this.#serve(tokens, wait, signal, at);
    return true;
  }

  // A wait that does not complete (aborted, or a listener threw) gives its tokens back. `at` is
  // when it was reserved, in milliseconds (see `#millis`).
  async #serve(tokens, wait, signal, at) {
    if (wait <= 0) {
      // Awaited so that this one settles after them: their promises were resolved first, and
      // the await puts this continuation behind theirs.
      const late = this.#releaseLate(at);
      if (late.length > 0) await Promise.allSettled(late);
    } else {
      const queue = waitingOn(this.#raw);
      const reservation = {
        tokens, signal, returned: false, dueAt: 0, order: queue.reserved++, settled: null,
        cancel: () => {}, schedule: null, serve: null, fail: null, unwatch: () => {},
      };
      // Queued before onDelayed runs: a reservation the listener makes is behind this one, in
      // the queue as in the bucket's debts.
      queue.waits.add(reservation);
      try {
        this.#listener?.onDelayed?.(wait);
      } catch (failure) {
        this.#withdraw(queue, reservation);
        throw failure;
      }
      try {
        reservation.settled = this.#wait(queue, reservation, wait, at);
        await reservation.settled;
      } catch (reason) {
        if (hasAborted(signal)) this.#listener?.onAborted?.(reason);
        throw reason;
      }
    }
    this.#listener?.onConsumed?.(tokens);
  }

  /**
   * Serves the waits due by `at` whose timers have not fired (the event loop was busy), before a
   * request that needs no wait: they were asked first. A request served at once has tokens
   * beyond every queued wait's debt, so on a built-in clock each of them is due by then; a time
   * meter's waits end by their timers alone (see `#wait`). Returns the promises of those served.
   */
  #releaseLate(at) {
    const queue = waiting.get(this.#raw);
    if (queue === undefined || queue.waits.size === 0 || !this.#clock.realTime) return [];
    // In order, up to the first wait not yet due (or not yet waiting: its `onDelayed` runs),
    // which holds those behind it; past it only `early` waits can be due. So the look costs the
    // waits served, not the queue (thousands of waits stay queued past a `reset`). A wait whose
    // signal has aborted, its abort not yet delivered, is neither served nor holds any.
    const due = new Set();
    const live = (each) => !each.returned && !hasAborted(each.signal);
    const ripe = (each) => each.dueAt <= at && each.settled !== null;
    for (const each of queue.waits) {
      if (!live(each)) continue;
      if (!ripe(each)) break;
      due.add(each);
    }
    for (const each of queue.early) if (live(each) && ripe(each)) due.add(each);
    for (const each of due) queue.ready.add(each);
    this.#release(queue);
    // Only those served: one still held (behind a wait not yet due) may settle much later.
    return [...due].filter((each) => !queue.waits.has(each)).map((each) => each.settled);
  }

  /**
   * Waits out `reservation`, queued and reserved for `nanos`, and for the waits ahead of it due
   * no later (see `#release`). Rejects with the signal's reason once it aborts (maybe already, by a
   * listener's onDelayed), or with `RESERVATION_OVERFLOW` if moving it up finds its wait
   * unbounded (see `#moveUp`).
   */
  #wait(queue, reservation, nanos, at) {
    const { signal } = reservation;
    return new Promise((resolve, reject) => {
      const aborted = () => {
        this.#withdraw(queue, reservation);
        reject(signalReason(signal));
      };
      reservation.fail = (error) => {
        this.#leave(queue, reservation);
        reject(error);
      };
      reservation.serve = resolve;
      const due = () => {
        // Node counts a timer from a clock cut to whole milliseconds, so it may fire up to a
        // millisecond early. A built-in clock is real time: the wait ends once it has passed.
        const left = this.#clock.realTime ? reservation.dueAt - this.#millis(readClock(this.#clock)) : 0;
        if (left > 0) {
          reservation.cancel = after(Math.ceil(left), due);
          return;
        }
        if (queue.waits.has(reservation)) queue.ready.add(reservation);
        this.#release(queue);
      };
      // Due `wait` nanoseconds after `from` (the bucket's time it was reserved or remade at), or
      // at `notBefore` if that is later; both in milliseconds (see `#millis`).
      reservation.schedule = (wait, from, notBefore = -Infinity) => {
        reservation.cancel();
        queue.ready.delete(reservation);
        const own = from + Number(wait) / 1e6;
        reservation.dueAt = Math.max(own, notBefore);
        reservation.cancel = after(own >= notBefore ? timerMillis(wait) : Math.ceil(notBefore - from), due);
      };
      try {
        if (signal?.aborted) {
          aborted();
          return;
        }
        if (signal) reservation.unwatch = onAbort(signal, aborted);
      } catch (error) {
        // A signal-like object that throws cannot end the wait, so it ends now, unserved.
        this.#withdraw(queue, reservation);
        reject(error);
        return;
      }
      reservation.schedule(nanos, at);
      if (reservation.order !== queue.reserved - 1) {
        surveyDueTimes(queue); // waits reserved behind it (from its onDelayed) were scheduled first
      } else {
        joinDueTimes(queue, reservation);
      }
    });
  }

  /**
   * Serves the waits whose timers have fired, except one behind a wait due no later than it:
   * that one goes first (its timer may fire a little later, or fire early and be set again), and
   * serving it releases this one. So waits due at the same time are served in the order they
   * were reserved, as `#remake` leaves a remade wait. A wait due earlier than those ahead of it
   * (reserved after a `reset` found tokens the earlier waits no longer needed) is not held: its
   * time is what was promised. A wait whose tokens went back with an abort not yet delivered
   * (see `#remake`) neither is served nor holds any.
   *
   * The look stops once it has passed every ready wait that could be served: a look over the
   * whole queue for every timer made thousands of waits due together quadratic (found in
   * review). Past a wait not yet ready, only an early one (see `waitingOn`) can be.
   */
  #release(queue) {
    let dueAhead = Infinity; // the earliest time a wait ahead, still unserved, is due
    let onlyEarly = false; // past a wait not ready
    const servable = (each) => queue.ready.has(each) && (!onlyEarly || queue.early.has(each));
    let left = queue.ready.size; // servable waits not yet passed
    // A Set may lose entries while it is iterated; the loop then skips them.
    for (const each of queue.waits) {
      if (left === 0) break;
      if (servable(each)) left -= 1;
      if (each.returned) continue;
      const ready = queue.ready.has(each);
      if (ready && each.dueAt < dueAhead) {
        this.#leave(queue, each);
        each.serve();
        continue;
      }
      if (!ready && !onlyEarly) {
        onlyEarly = true;
        left = 0;
        for (const other of queue.early) if (other.order > each.order && servable(other)) left += 1;
      }
      dueAhead = Math.min(dueAhead, each.dueAt);
    }
  }

  /**
   * A time read from the bucket's clock, in milliseconds: what waits' `dueAt` are counted in. The
   * bucket's own clock, so that due times compare as the bucket's waits do, also on a manual
   * clock that tests move together with mocked timers, and a wait on a built-in clock ends when
   * the bucket has its tokens. (Real time, which mocked timers do not move, made a remade wait
   * due with the one ahead of it end later than first promised; found by a randomized review.)
   */
  #millis(now) {
    return readingMillis(this.#clock, now);
  }

  /** Takes `reservation` off the queue and its timer and signal; whether it was queued. */
  #leave(queue, reservation) {
    reservation.cancel();
    const queued = queue.waits.delete(reservation);
    queue.ready.delete(reservation);
    queue.early.delete(reservation);
    if (queue.waits.size === 0) queue.latestDue = -Infinity;
    reservation.unwatch();
    return queued;
  }

  /** Ends `reservation` unserved: its tokens come back and the waits behind it move up. */
  #withdraw(queue, reservation) {
    if (this.#leave(queue, reservation)) this.#moveUpSoon(queue, reservation);
  }

  /**
   * Gives `withdrawn`'s tokens back and moves up the waits reserved after it, in a microtask
   * queued before the rejection: one step, so that nothing sees the returned tokens while the
   * debts behind them are still counted (adding back is capped at capacity), and after the other
   * aborts of the same dispatch (one signal may end several waits).
   *
   * A move costs time in proportion to the waits behind (each is made again: a bucket call and
   * a timer). After one that took over `SLOW_MOVE_MS` (thousands of waits), the next is put
   * off until nine times as long has passed, and takes every wait withdrawn meanwhile: moves
   * then take at most a tenth of the time. Waits ended one per task from the front of the queue
   * (per-request timeouts) each moved the whole queue, so the event loop's time grew with the
   * square of the waits (found in review). Put off, the waits behind keep their times, which are
   * never early, and the tokens come back after the rejection.
   */
  #moveUpSoon(queue, withdrawn) {
    queue.from = Math.min(queue.from, withdrawn.order);
    queue.withdrawn.push(withdrawn);
    if (queue.pending) return;
    queue.pending = true;
    const move = () => {
      const [from, gone] = [queue.from, queue.withdrawn];
      [queue.pending, queue.from, queue.withdrawn] = [false, Infinity, []];
      const later = [...queue.waits].filter((each) => each.order > from);
      const started = realMillis();
      this.#moveUp(queue, gone.filter((each) => !each.returned), later);
      const took = realMillis() - started;
      queue.movableAt = took > SLOW_MOVE_MS ? started + took * 10 : -Infinity;
    };
    const putOff = queue.movableAt - realMillis();
    if (putOff > 0) after(Math.ceil(putOff), move);
    else queueMicrotask(move);
  }

  /**
   * Returns the tokens of the `leaving` waits (a fresh array: aborted later ones join it) and
   * moves up `later` (the waits behind them, in order). A later wait whose signal has aborted
   * too (its abort event not yet delivered: browsers run microtasks between listeners) goes with
   * them and is not made again.
   *
   * Each bandwidth gets the tokens back up to its capacity less what the waits moving up hold,
   * never losing any (`returnReserved`): those waits' tokens are spent when they are served,
   * now sooner, so a bandwidth in debt is not left room for a burst beyond capacity once they
   * are, and one that has refilled over their debt (a faster bandwidth, `addTokens`, `reset`)
   * keeps what it has. The waits ahead keep their times, as they would have without the waits
   * that leave, so the tokens come back whatever they hold: the bucket is as if the waits that
   * leave had never been asked. The later waits are then made again in order, each at its new place:
   * their tokens are added back beyond capacity and reserved again, which leaves every bandwidth
   * where it was and gives each its wait. A remade wait never ends later than first promised: it
   * comes out longer only if the bucket changed meanwhile (tokens taken ignoring limits, a new
   * configuration), and then it keeps its time; one whose wait has become unbounded fails with
   * `RESERVATION_OVERFLOW` rather than go free, and none is due before a wait ahead of it. The
   * waits whose time has come are then served (`#release`).
   *
   * A time meter that throws, or returns a time the bucket refuses, leaves the tokens taken and
   * the waits as they were, which errs towards refusing: this runs in a microtask, where an
   * error would reach no caller and end a Node process.
   */
  #moveUp(queue, leaving, later) {
    try {
      this.#remake(queue, leaving, later);
    } catch {
      // See above. A bad time fails at the first step, reading the clock, before anything
      // changed. Each bucket call after it takes effect whole or not at all: one that fails
      // leaves its tokens taken and the waits their times, which errs towards refusing.
    }
    surveyDueTimes(queue);
    this.#release(queue);
  }

  /** `#moveUp`'s work: returns the `leaving` tokens and makes the `later` waits again. */
  #remake(queue, leaving, later) {
    // The time is passed again after the signals' code has run, which may use the package and
    // write its own time into the exchange.
    const time = heldReading(this.#clock, readClock(this.#clock));
    const timerNow = this.#millis(time);
    const staying = [];
    for (const each of later) {
      if (each.returned) continue;
      if (hasAborted(each.signal)) {
        each.returned = true;
        each.cancel(); // its abort, on its way, rejects it
        leaving.push(each);
      } else {
        staying.push(each);
      }
    }
    // Owed: the waits behind the first that leaves, which move up. Those ahead of it keep their
    // times, as they would have without the waits that leave, so their debts need no room kept.
    // Past the 64-bit maximum, what is still owed leaves no bandwidth room for any token anyway,
    // and what is given back fills every bandwidth's room: both are capped there.
    const owed = exactNumber(min(total(staying), I64_MAX));
    // One call for all: giving back a and then b ends where giving back a + b at once does.
    if (leaving.length > 0) ops.returnReserved(this.#raw, exactNumber(min(total(leaving), I64_MAX)), owed, timeArg(time));
    if (staying.length === 0) return;
    // One call: all or, past 64 bits, nothing (and then the waits keep their times).
    ops.forceAddTokens(this.#raw, exactNumber(total(staying)), timeArg(time));
    const remade = new Set(staying);
    // A remade wait is not due before any wait ahead of it, remade or not: those ahead of the
    // aborted one keep their times, though a `reset` may have paid their debts.
    let dueAhead = -Infinity;
    for (const each of [...queue.waits]) {
      if (each.returned) continue;
      if (remade.has(each)) {
        const wait = ops.reserve(this.#raw, each.tokens, Infinity, timeArg(time));
        if (wait === null) {
          each.fail(new EdgeBucketError('RESERVATION_OVERFLOW', `${each.tokens} tokens can no longer be reserved: the wait would be unbounded`));
          continue;
        }
        if (Math.max(timerNow + Number(wait) / 1e6, dueAhead) < each.dueAt) each.schedule(wait, timerNow, dueAhead);
        // Due already: served by this move's `#release`, in order, not by a timer that a
        // request made meanwhile could beat.
        if (each.dueAt <= timerNow) {
          each.cancel();
          queue.ready.add(each);
        }
      }
      dueAhead = Math.max(dueAhead, each.dueAt);
    }
  }
}


/**
 * Sets `latestDue` and `early` from the waits queued (not those returned), for when the values
 * kept as waits join cannot follow: waits moved up (due earlier), or a wait scheduled after
 * waits behind it (reserved from its `onDelayed`).
 */
function surveyDueTimes(queue) {
  queue.latestDue = -Infinity;
  queue.early.clear();
  for (const each of queue.waits) {
    if (!each.returned) joinDueTimes(queue, each);
  }
}

/** Counts `each`, behind every wait counted so far, into `latestDue` and `early`. */
function joinDueTimes(queue, each) {
  if (each.dueAt < queue.latestDue) queue.early.add(each);
  queue.latestDue = Math.max(queue.latestDue, each.dueAt);
}

/** The tokens `reservations` hold, exactly (a BigInt). */
function total(reservations) {
  let sum = 0n;
  for (const each of reservations) sum += BigInt(each.tokens);
  return sum;
}

const min = (a, b) => (a < b ? a : b);

/**
 * The reservations still waiting on a raw bucket, shared by all its views: `waits` in the order
 * they were reserved (a Set, which keeps insertion order and takes one out at once, however many
 * wait), `ready` those whose time has come, `reserved` the count that numbers them (`order`),
 * `latestDue` the latest time one is due (or was: it may be later than any left), `early` the
 * waits due before one ahead of them (tokens added between reservations, a clock that went back;
 * a wait not in it is due no earlier than every wait ahead, so never served before them), and
 * what `#moveUpSoon` gathers for its microtask, and when it may run one again (`movableAt`).
 */
const waiting = new WeakMap();

function waitingOn(raw) {
  let queue = waiting.get(raw);
  if (queue === undefined) {
    queue = {
      waits: new Set(), ready: new Set(), early: new Set(), reserved: 0, latestDue: -Infinity,
      from: Infinity, withdrawn: [], pending: false, movableAt: -Infinity,
    };
    waiting.set(raw, queue);
  }
  return queue;
}

/**
 * A move of waits that takes longer than this (ms) puts off the next: see `#moveUpSoon`. Over,
 * not at: browsers cut `performance.now()` to as coarse as a millisecond, where a short move
 * that crosses a tick reads as 1.
 */
const SLOW_MOVE_MS = 1;

/** Real time in milliseconds, to measure moves: `performance.now()`, where there is one. */
function realMillis() {
  return typeof globalThis.performance?.now === 'function' ? globalThis.performance.now() : Date.now();
}

/** The `signal` of a scheduler call's options (`undefined` or `{ signal?: AbortSignal }`). */
function signalOption(options) {
  if (options === undefined) return undefined;
  // Read through plainData: a Proxy's trap may throw (a revoked Proxy).
  return plainData('INVALID_ARGUMENT', "the scheduler's options", () => {
    // A signal has no own keys, so it would pass for empty options and be ignored.
    if (isSignal(options)) throw invalidArgument('pass the signal as options: { signal }, not as the options themselves');
    const { signal } = knownOptions(options, ['signal'], 'the scheduler');
    // Checked before anything is reserved: a listener that cannot be added would strand the
    // reservation.
    if (signal !== undefined && !isSignal(signal)) {
      throw invalidArgument(`options.signal must be an AbortSignal, got ${describe(signal)}`);
    }
    return signal;
  });
}

/** Whether `value` works as an AbortSignal (one from any realm or polyfill). */
function isSignal(value) {
  return typeof value?.throwIfAborted === 'function' && typeof value.addEventListener === 'function';
}

/** `nanos` as timer milliseconds, rounded up (a timer that still fires early is waited out in `#wait`). */
function timerMillis(nanos) {
  // A BigInt wait is beyond 2^53 ns; Number() may round it down, so add a millisecond.
  return Math.ceil(Number(nanos) / 1e6) + (typeof nanos === 'bigint' ? 1 : 0);
}
