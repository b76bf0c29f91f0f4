// Clocks: JS reads the time and passes it to wasm as one number per operation (or a BigInt
// through the exchange). See docs/npm-package.md, "Time across the boundary".
import { invalidArgument, EdgeBucketError } from './errors.js';
import { integerArg, ARG_TIME, describe } from './runtime.js';

/**
 * @typedef {object} Clock
 * @property {boolean} unitIsMillis the unit of `now()`: milliseconds, or nanoseconds
 * @property {number} originMillis added to `now()`, in milliseconds
 * @property {() => number} now the current time in the unit
 * @property {boolean} [isDateNow] `now` reads `Date.now()`
 * @property {boolean} [realTime] `now` reads real time (the built-in clocks; a custom time meter
 *   may be a manual clock)
 * @property {bigint} [lastBigInt] a time meter's last reading when it was a BigInt (see `heldReading`)
 */

/**
 * Wall-clock milliseconds (`Date.now()`), Bucket4j's default precision. `Date.now` is looked up at
 * each reading, never kept: fake timers installed after the clock was made must be seen by every
 * reading alike.
 */
export function millisecondClock() {
  return { unitIsMillis: true, originMillis: 0, now: () => Date.now(), isDateNow: true, realTime: true };
}

/**
 * The time on `clock`. The default clock is called by name, so a hot call site stays
 * monomorphic (inlined `Date.now()`) even when other buckets use other clocks.
 */
export function readClock(clock) {
  return clock.isDateNow ? Date.now() : clock.now();
}

/**
 * Nanosecond precision: `performance.timeOrigin + performance.now()`, monotonic and epoch-based.
 * (Browsers coarsen `performance.now()`; Workers advance it only across I/O.)
 */
export function nanosecondClock() {
  const performance = globalThis.performance;
  if (typeof performance?.now !== 'function') {
    throw new EdgeBucketError('INVALID_ARGUMENT', 'nanosecond precision needs performance.now()');
  }
  const origin = performance.timeOrigin ?? Date.now() - performance.now();
  return { unitIsMillis: true, originMillis: origin, now: () => performance.now(), realTime: true };
}

/**
 * A custom time meter: `meter()` returns nanoseconds as an integer number (exact up to 2^53) or
 * a BigInt (any 64-bit value). Use a manual clock in tests and simulations.
 */
export function customClock(meter) {
  if (typeof meter !== 'function') throw invalidArgument('a time meter must be a function returning nanoseconds');
  const clock = {
    unitIsMillis: false,
    originMillis: 0,
    lastBigInt: undefined,
    now() {
      const nanos = meter();
      clock.lastBigInt = typeof nanos === 'bigint' ? nanos : undefined;
      return integerArg(nanos, ARG_TIME, 'the time meter result');
    },
  };
  return clock;
}

/**
 * A reading of `clock` (what `readClock` just returned) that stays valid after other calls: a time
 * meter's BigInt goes to wasm through the exchange, which any use of the package overwrites, and
 * its reading is NaN; here it is the BigInt. Taken right after the read.
 */
export function heldReading(clock, reading) {
  return reading === reading ? reading : clock.lastBigInt ?? reading;
}

/** A held reading (see `heldReading`) as a time argument again. */
export function timeArg(reading) {
  return integerArg(reading, ARG_TIME, 'the time');
}

/** A reading of `clock` (what `readClock` just returned) in milliseconds, for timers; taken right after the read. */
export function readingMillis(clock, reading) {
  return clock.unitIsMillis ? reading : Number(heldReading(clock, reading)) / 1e6;
}

/** The clock an option names: 'millis' (default), 'nanos', or a time meter function. */
export function clockOption(option) {
  if (option === undefined || option === 'millis') return millisecondClock();
  if (option === 'nanos') return nanosecondClock();
  if (typeof option === 'function') return customClock(option);
  throw invalidArgument(`clock must be 'millis', 'nanos' or a function returning nanoseconds, got ${describe(option)}`);
}
