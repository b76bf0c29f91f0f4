// The wasm module and the exchange area through which hot operations pass numbers and key bytes
// without allocating (see src/wasm/exchange.rs for the layout, which this file mirrors).
import * as raw from './wasm/edgebucket.js';
import { EdgeBucketError, invalidArgument } from './errors.js';

export { raw };

/** Whether `value` is a bucket's wasm handle, which only `Bucket.builder()` makes. */
export function isRawBucket(value) {
  return value instanceof raw.RawBucket;
}

const SLOTS = 16;
export const ARG_TOKENS = 0;
export const ARG_TIME = SLOTS - 1; // no result uses it: the time outlives an operation's calls
export const ARG_WAIT = 2;
export const ARG_OWED = 3;
export const STATUS_TRUE = 1;
export const STATUS_ERROR = 2;
export const STATUS_NEEDS_CONFIGURATION = 3;

const I64_MIN = -(2n ** 63n);
/** The largest `i64`, the core's integers. */
export const I64_MAX = 2n ** 63n - 1n;

let memory, address, numbers, integers, given, keyBytes;
/** Room for a key in the exchange (the longest key plus one, for encodeInto to overrun into), as the wasm module says. */
let keyRoom, longestKey;
const encoder = new TextEncoder();

/** Called by each entry point once the wasm module is instantiated. */
export function ready() {
  raw.setErrorClass(EdgeBucketError);
  memory = raw.wasmMemory();
  address = raw.exchangeAddress();
  keyRoom = raw.exchangeKeyBytes();
  longestKey = keyRoom - 1;
  views();
}

// Growing wasm memory detaches the old views (their length becomes 0): make new ones.
function views() {
  const buffer = memory.buffer;
  numbers = new Float64Array(buffer, address, SLOTS);
  integers = new BigInt64Array(buffer, address + 8 * SLOTS, SLOTS);
  given = new Uint32Array(buffer, address + 16 * SLOTS, SLOTS);
  keyBytes = new Uint8Array(buffer, address + 20 * SLOTS, keyRoom);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** `big` as a number when it is a safe integer, else as it is: numbers while exact, BigInts beyond. */
export function exactNumber(big) {
  return big >= -MAX_SAFE && big <= MAX_SAFE ? Number(big) : big;
}

/** Result `slot` of the last operation: a number, `Infinity` for an infinite wait, or a BigInt past 2^53. */
export function result(slot) {
  if (numbers.length === 0) views();
  const value = numbers[slot];
  return value === value ? value : integers[slot];
}

/** Throws the error the last operation left (status 2). */
export function fail() {
  throw raw.takeError();
}

/**
 * An integer argument for the wasm side: numbers pass as they are (Rust checks them); a BigInt
 * is left in the exchange and `NaN` passed in its place.
 */
export function integer(value, slot, what) {
  if (typeof value === 'number') {
    // Only NaN needs this: wasm looks for a BigInt when it receives NaN, and a flag left by a
    // call that threw before reaching wasm must not be read in its place.
    if (numbers.length === 0) views();
    given[slot] = 0;
    return value;
  }
  if (typeof value === 'bigint') {
    if (value < I64_MIN || value > I64_MAX) throw invalidArgument(`${what} ${value} is outside the 64-bit range`);
    if (numbers.length === 0) views();
    integers[slot] = value;
    given[slot] = 1;
    return NaN;
  }
  throw invalidArgument(`${what} must be a number or a BigInt, got ${describe(value)}`);
}

/**
 * `integer` for hot paths: a number passes as it is (Rust checks it), except NaN, which goes
 * through `integer` to clear the slot's BigInt flag.
 */
export function integerArg(value, slot, what) {
  return typeof value === 'number' && value === value ? value : integer(value, slot, what);
}

/** A token count argument. */
export const tokensArg = (tokens) => integerArg(tokens, ARG_TOKENS, 'tokens');

/** A store key's bytes (a string as UTF-8), copied out of the exchange. */
export function keyCopy(key) {
  const length = writeKey(key);
  return keyBytes.slice(0, length);
}

/** Keys up to this many characters are copied by a loop when ASCII (see `writeKey`). */
const SHORT_KEY = 24;

/** Writes a store key (a string, as UTF-8, or a Uint8Array) into the exchange; returns its length. */
export function writeKey(key) {
  if (keyBytes.length === 0) views();
  const bytes = keyBytes; // a local: V8 keeps it in a register through the loop
  if (typeof key === 'string') {
    const length = key.length;
    let i = 0;
    if (length <= SHORT_KEY) {
      // Short ASCII keys (ids, IPv4 addresses) are copied directly: cheaper than encodeInto up
      // to about 24 characters (a loop costs about 3 ns a character, encodeInto 75 ns and up).
      for (; i < length; i++) {
        const c = key.charCodeAt(i);
        if (c > 127) break;
        bytes[i] = c;
      }
      if (i === length) return length;
    }
    // Each UTF-16 unit is at least a byte of UTF-8: refused before a huge string is scanned.
    if (length > longestKey) throw keyTooLong(`at least ${length}`);
    // UTF-8 has no form for a lone surrogate: encodeInto writes U+FFFD, so '\uD800' and '\uFFFD'
    // would be one key.
    if (hasLoneSurrogate(key)) throw invalidArgument('a string key must be well-formed Unicode: it has a lone surrogate');
    const { read, written } = encoder.encodeInto(key, keyBytes);
    if (read < length || written > longestKey) throw keyTooLong(encoder.encode(key).length);
    return written;
  }
  if (typedArrayName.call(key) === 'Uint8Array') {
    const length = typedArrayLength.call(key);
    if (length > longestKey) throw keyTooLong(length);
    if (length > 0) {
      keyBytes.set(key);
    } else if (!copies(key)) {
      // Not the empty key: a detached array (or a view its resizable buffer no longer covers)
      // reads as empty.
      throw invalidArgument('a key must not be a Uint8Array whose buffer was detached or shrunk');
    }
    return length;
  }
  throw invalidArgument(`a key must be a string or a Uint8Array, got ${describe(key)}`);
}

// A byte key is read through the built-in getters, which run none of the caller's code: an
// overridden `length` would otherwise name the wrong bytes, and a Proxy of a Uint8Array, which
// passes `instanceof`, fails inside `set`.
const typedArray = Object.getPrototypeOf(Uint8Array.prototype);
const typedArrayName = Object.getOwnPropertyDescriptor(typedArray, Symbol.toStringTag).get;
const typedArrayLength = Object.getOwnPropertyDescriptor(typedArray, 'length').get;

/** Whether `set` takes `bytes`: it refuses an array whose buffer was detached. */
function copies(bytes) {
  try {
    keyBytes.set(bytes);
    return true;
  } catch {
    return false;
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `String.prototype.isWellFormed` where the runtime has it (Node 20+), a regular expression before. */
function hasLoneSurrogate(key) {
  return typeof key.isWellFormed === 'function' ? !key.isWellFormed() : LONE_SURROGATE.test(key);
}

function keyTooLong(length) {
  return new EdgeBucketError('KEY_TOO_LONG', `a key of ${length} bytes is longer than the maximum of ${longestKey} bytes`);
}

/** A duration in the configuration schema's forms, read by the Rust core's parser, in nanoseconds. */
export function durationNanos(duration) {
  raw.durationNanos(plainDuration(duration));
  return result(0);
}

/**
 * A duration as plain data for Rust (see `plainData`); one that is an object but not a plain one
 * (see `isOddObject`) is refused.
 */
export function plainDuration(duration) {
  return plainData('INVALID_DURATION', 'invalid duration', () => {
    if (isOddObject(duration)) {
      throw new EdgeBucketError('INVALID_DURATION', `a duration is milliseconds, a string or a plain object such as { seconds: 1 }, got ${describe(duration)}`);
    }
    return durationCopy(duration);
  });
}

/**
 * What `read` returns: a caller's value checked and copied as plain data (see `structCopy`), in
 * JavaScript. Rust must never run a caller's getter or Proxy trap: an exception thrown through wasm
 * frames leaves the module's stack pointer and borrow flags behind, and enough of them break every
 * later call. An exception the caller's code throws becomes an `EdgeBucketError` with `code`.
 */
export function plainData(code, what, read) {
  try {
    return read();
  } catch (error) {
    if (isOurs(error)) throw error;
    throw new EdgeBucketError(code, `${what}: reading it threw ${thrownText(error)}`);
  }
}

/** Whether `error` is an `EdgeBucketError`: `instanceof` itself throws for a revoked Proxy. */
function isOurs(error) {
  try {
    return error instanceof EdgeBucketError;
  } catch {
    return false;
  }
}

/**
 * `options` itself when it is an object whose every name is in `known`; else `INVALID_ARGUMENT`.
 * A misspelt option (`maxkeys`) would otherwise leave its default in place unnoticed.
 *
 * @template {object} T
 * @param {T} options
 * @param {string[]} known
 * @param {string} what the options' owner, for the message
 * @returns {T}
 */
export function knownOptions(options, known, what) {
  if (options === null || typeof options !== 'object') {
    throw invalidArgument(`${what} takes an object { ${known.join(', ')} }`);
  }
  // A Proxy's trap may throw (a revoked Proxy).
  for (const name of plainData('INVALID_ARGUMENT', `${what}'s options`, () => Object.keys(options))) {
    if (!known.includes(name)) throw invalidArgument(`${what} has no option ${JSON.stringify(name)} (known: ${known.join(', ')})`);
  }
  return options;
}

/** What a caller's code threw, for a message; reading it may throw too. */
function thrownText(error) {
  try {
    return error instanceof Error ? String(error.message) : describe(error);
  } catch {
    return 'a value that cannot be shown';
  }
}

/**
 * A value Rust reads as a whole (a count, a name, an instant) copied for it: a primitive as it
 * is; an object, which is a type error there whatever it holds, as an empty one of a kind serde
 * names in its error (an array, a map, bytes for any typed array or buffer, `FUNCTION` for a
 * function) without reading the caller's object, whose getters (a function's `name`, a view's
 * `Symbol.toStringTag`) and Proxy traps would run inside wasm.
 */
export function leafCopy(value) {
  if (typeof value === 'function') return FUNCTION;
  if (typeof value !== 'object' || value === null) return value;
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return new Uint8Array(0);
  return Array.isArray(value) ? [] : {};
}

/** Stands in for a caller's function (see `leafCopy`); anonymous, its `name` an own empty string. */
const FUNCTION = Object.freeze(function () {});

/** A duration object's parts (src/core/duration.rs), each a leaf. */
const DURATION_PARTS = new Map(
  ['days', 'hours', 'minutes', 'seconds', 'milliseconds', 'microseconds', 'nanoseconds'].map((unit) => [unit, leafCopy]),
);

/**
 * A duration copied as serde reads it: a primitive, or its parts read as a struct's fields
 * (inherited ones too: a class's getter, an `Object.create` prototype). Unknown entries keep
 * their values (leaves), which the error message shows. A part that is a number or BigInt but
 * no 64-bit count is refused here (see `wholeFault`).
 */
export function durationCopy(value) {
  if (Array.isArray(value)) return leafCopy(value);
  const copy = structCopy(value, DURATION_PARTS, leafCopy);
  if (typeof copy !== 'object' || copy === null) return copy;
  for (const unit of DURATION_PARTS.keys()) {
    const fault = wholeFault(copy[unit], true);
    if (fault !== undefined) throw new EdgeBucketError('INVALID_DURATION', `invalid duration "${partsText(copy)}": ${unit} ${fault}`);
  }
  return copy;
}

/** A copied duration object as the core writes one in its messages: JSON, BigInts as digits. */
function partsText(copy) {
  const entries = Object.entries(copy).map(([name, value]) => {
    const text = typeof value === 'bigint' ? String(value) : JSON.stringify(value);
    return `${JSON.stringify(name)}:${text ?? String(value)}`;
  });
  return `{${entries.join(',')}}`;
}

const U64_MAX = 2n ** 64n - 1n;

/**
 * Why `value` cannot be the 64-bit integer the core reads (`unsigned`: a u64, else an i64), or
 * undefined if it can be or is no number at all (serde then names its type). serde-wasm-bindgen
 * reads a number that is not a safe integer as floating point, so -1 for a u64 was "invalid
 * type: floating point `-1.0`", and a BigInt out of range named no value.
 */
export function wholeFault(value, unsigned) {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return `must be a whole number, got ${value}`;
    if (unsigned && value < 0) return `cannot be negative, got ${value}`;
    if (!Number.isSafeInteger(value)) return `is beyond 2^53 - 1, where numbers are not exact (pass a BigInt), got ${value}`;
  } else if (typeof value === 'bigint') {
    if (unsigned && value < 0n) return `cannot be negative, got ${value}`;
    if (value < I64_MIN || value > (unsigned ? U64_MAX : I64_MAX)) return `is outside the 64-bit range, got ${value}`;
  }
  return undefined;
}

/**
 * A struct copied as serde-wasm-bindgen reads it: `fields` (a Map from name to how its value is
 * copied) by name, inherited and non-enumerable ones too; any other own enumerable key through
 * `unknownCopy`, by default only as present (`true`) or left out (null or undefined), all the
 * core asks of an unknown field (of an array, whose elements the core never reads here, none).
 */
export function structCopy(value, fields, unknownCopy = presence) {
  if (typeof value !== 'object' || value === null) return leafCopy(value);
  const copy = {};
  for (const name of Array.isArray(value) ? [] : Object.keys(value)) {
    if (!fields.has(name)) define(copy, name, unknownCopy(value[name]));
  }
  for (const [name, copier] of fields) {
    if (name in value) define(copy, name, copier(value[name]));
  }
  return copy;
}

/** An unknown field as present (`true`) or left out (null or undefined). */
function presence(value) {
  return value === undefined || value === null ? value : true;
}

/** `object[name] = value` as an own property, also for `__proto__`. */
function define(object, name, value) {
  Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * An object that is not a plain one (a Date, RegExp, Map): serde reads only its own fields, and
 * for a duration, whose parts all default to 0, none is zero rather than an error.
 */
export function isOddObject(value) {
  return typeof value === 'object' && value !== null && Object.prototype.toString.call(value) !== '[object Object]';
}

export function describe(value) {
  try {
    if (value === null) return 'null';
    if (typeof value === 'object') {
      const name = value.constructor?.name;
      return typeof name === 'string' ? name : 'object';
    }
    if (value === undefined) return 'undefined';
    return typeof value === 'string' ? JSON.stringify(value) : `${typeof value} ${String(value)}`;
  } catch {
    return typeof value; // the caller's code threw: a getter, a toString, a revoked Proxy
  }
}
