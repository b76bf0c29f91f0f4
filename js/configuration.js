// Limits: the fluent builders produce the Rust core's JSON schema, which the core validates
// (with serde-wasm-bindgen and humantime), so JS and Rust share one set of rules and one
// duration parser.
import { invalidArgument, EdgeBucketError } from './errors.js';
import { raw, describe, exactNumber, isOddObject, plainData, structCopy, leafCopy, durationCopy, wholeFault } from './runtime.js';

/** How tokens carry over when a configuration is replaced (Bucket4j's names). */
export const TokensInheritanceStrategy = Object.freeze({
  /** Forget the old state: start afresh. */
  RESET: 'RESET',
  /** Scale available tokens by new capacity / old capacity. */
  PROPORTIONALLY: 'PROPORTIONALLY',
  /** Keep available tokens, lowered to the new capacity. */
  AS_IS: 'AS_IS',
  /** Keep available tokens and add the capacity growth. */
  ADDITIVE: 'ADDITIVE',
});

let rawOf;

/**
 * An immutable, validated list of limits.
 *
 * @example
 * const config = BucketConfiguration.builder()
 *   .addLimit(l => l.capacity(50).refillGreedy(10, '1s').id('burst'))
 *   .build();
 */
export class BucketConfiguration {
  #raw;

  /** @internal use `BucketConfiguration.builder()` or `BucketConfiguration.fromJSON()`. */
  constructor(rawConfiguration) {
    if (!(rawConfiguration instanceof raw.RawConfiguration)) {
      throw invalidArgument('use BucketConfiguration.builder() or BucketConfiguration.fromJSON()');
    }
    this.#raw = rawConfiguration;
  }

  static {
    // A brand check: unlike `instanceof` it runs no Proxy trap, and an object that only
    // inherits from the class has no handle.
    const branded = (value) => typeof value === 'object' && value !== null && #raw in value;
    rawOf = (configuration) => (branded(configuration) ? configuration.#raw : undefined);
  }

  /** Starts building a configuration. */
  static builder() {
    return new ConfigurationBuilder();
  }

  /** A configuration from the JSON schema (`{ bandwidths: [...] }`), checked by the core. */
  static fromJSON(spec) {
    const plain = plainData('INVALID_CONFIGURATION', 'invalid configuration', () => {
      checkPeriods(spec);
      return structCopy(spec, CONFIGURATION);
    });
    checkCounts(plain);
    return new BucketConfiguration(new raw.RawConfiguration(plain));
  }

  /**
   * The configuration in the JSON schema (durations as humantime strings). Integers are numbers
   * while exact, BigInts beyond 2^53 - 1 (which `JSON.stringify` cannot write).
   */
  toJSON() {
    return exactNumbers(this.#raw.toJSON());
  }

  /** True when both describe the same limits. */
  equals(other) {
    const held = rawOf(other) ?? adopted(other);
    return held !== undefined && this.#raw.equals(held);
  }
}

// Marks configurations for other copies of this package: a process that both imports and
// requires it loads two (the dual-package hazard), and a library built on one hands its
// configurations to an application using the other.
// Its value is the schema's version: a copy adopts only configurations it can read.
const ACROSS_COPIES = Symbol.for('edgebucket.BucketConfiguration');
const SCHEMA_VERSION = 1;
Object.defineProperty(BucketConfiguration.prototype, ACROSS_COPIES, { value: SCHEMA_VERSION });

const adoptions = new WeakMap();

/** The handle of this copy's twin of a configuration made by another copy, else undefined. */
function adopted(value) {
  if (typeof value !== 'object' || value === null) return undefined;
  let twin = adoptions.get(value);
  if (twin === undefined) {
    let spec;
    try {
      if (value[ACROSS_COPIES] !== SCHEMA_VERSION) return undefined;
      spec = value.toJSON();
    } catch {
      // A Proxy's trap threw (a revoked Proxy), or an object that only inherits from a copy's
      // class has no configuration to give: neither is one.
      return undefined;
    }
    twin = BucketConfiguration.fromJSON(spec);
    adoptions.set(value, twin);
  }
  return rawOf(twin);
}

/**
 * `value` with safe BigInts as numbers. The bindings give every integer as a BigInt when one
 * of them is beyond 2^53 - 1 (serde-wasm-bindgen chooses per serialization, not per value).
 */
function exactNumbers(value) {
  if (typeof value === 'bigint') return exactNumber(value);
  if (Array.isArray(value)) return value.map(exactNumbers);
  if (value !== null && typeof value === 'object') {
    for (const name of Object.keys(value)) value[name] = exactNumbers(value[name]);
  }
  return value;
}

// The schema as the core reads it (src/core/schema.rs), each struct's fields in order, for
// `structCopy`: a configuration is copied to plain data before Rust reads it (see `plainData`).
const REFILL = new Map([
  ['kind', leafCopy],
  ['tokens', leafCopy],
  ['period', durationCopy],
  ['firstRefillTime', leafCopy],
  ['adaptiveInitialTokens', leafCopy],
]);
const BANDWIDTH = new Map([
  ['capacity', leafCopy],
  ['refill', (refill) => structCopy(refill, REFILL)],
  ['initialTokens', leafCopy],
  ['id', leafCopy],
]);
const CONFIGURATION = new Map([['bandwidths', bandwidthsCopy]]);

/** The bandwidths, by index (an array's own iterator is the caller's code). */
function bandwidthsCopy(list) {
  if (!Array.isArray(list)) return leafCopy(list);
  return Array.from({ length: list.length }, (_, i) => structCopy(list[i], BANDWIDTH));
}

/**
 * Counts that are numbers or BigInts but no 64-bit integer, with the field's place (serde's
 * message names neither). Checked on the copy: a getter is read once. Signs are the core's.
 */
function checkCounts(plain) {
  const bandwidths = plain?.bandwidths;
  if (!Array.isArray(bandwidths)) return;
  bandwidths.forEach((bandwidth, i) => {
    const counts = [['capacity', bandwidth?.capacity], ['refill.tokens', bandwidth?.refill?.tokens], ['initialTokens', bandwidth?.initialTokens]];
    for (const [name, value] of counts) {
      const fault = wholeFault(value, false);
      if (fault !== undefined) throw new EdgeBucketError('INVALID_CONFIGURATION', `invalid configuration: bandwidths[${i}].${name} ${fault}`);
    }
  });
}

/** Refill periods that are not plain objects (see `isOddObject`); the core checks the rest. */
function checkPeriods(spec) {
  const bandwidths = spec?.bandwidths;
  if (!Array.isArray(bandwidths)) return;
  bandwidths.forEach((bandwidth, i) => {
    const period = bandwidth?.refill?.period;
    if (isOddObject(period)) {
      throw new EdgeBucketError(
        'INVALID_CONFIGURATION',
        `invalid configuration: bandwidths[${i}].refill.period is milliseconds, a string or a plain object such as { seconds: 1 }, got ${describe(period)}`,
      );
    }
  });
}

/** Whether `value` is a {@link BucketConfiguration}, of this copy of the package or another (internal). */
export function isBucketConfiguration(value) {
  return (rawOf(value) ?? adopted(value)) !== undefined;
}

/** The wasm handle of a configuration (internal). */
export function rawConfiguration(configuration) {
  const held = rawOf(configuration) ?? adopted(configuration);
  if (held === undefined) throw invalidArgument(`expected a BucketConfiguration, got ${describe(configuration)}`);
  return held;
}

/** Builds a {@link BucketConfiguration}: limits in order. */
export class ConfigurationBuilder {
  #bandwidths = [];

  /**
   * Adds a limit: a function given a {@link BandwidthBuilder} (Bucket4j's style), a
   * BandwidthBuilder, or a bandwidth in the JSON schema.
   */
  addLimit(limit) {
    this.#bandwidths.push(bandwidthSpec(limit));
    return this;
  }

  /** Validates the limits (in Rust) and returns the configuration. */
  build() {
    return BucketConfiguration.fromJSON({ bandwidths: this.#bandwidths });
  }
}

/** The JSON form of a limit given to `addLimit`. */
export function bandwidthSpec(limit) {
  const built = typeof limit === 'function' ? limit(new BandwidthBuilder()) : limit;
  // `instanceof` runs a Proxy's trap, which may throw (a revoked Proxy).
  if (plainData('INVALID_ARGUMENT', 'the limit given to addLimit', () => built instanceof BandwidthBuilder)) {
    return built.toJSON();
  }
  if (built !== null && typeof built === 'object') return built;
  throw invalidArgument(`addLimit expects a function of a BandwidthBuilder, a BandwidthBuilder or a bandwidth object, got ${describe(built)}`);
}

/**
 * One limit: a capacity and how it refills. Type errors are thrown at once
 * (`INVALID_ARGUMENT`); the rules (positive capacity, valid period, …) are the core's, checked
 * when the configuration is built.
 */
export class BandwidthBuilder {
  #spec = {};

  /** The most tokens the bandwidth holds. */
  capacity(tokens) {
    this.#spec.capacity = whole(tokens, 'capacity');
    return this;
  }

  /** `tokens` per `period`, added as soon as possible (10 per second: one every 100 ms). */
  refillGreedy(tokens, period) {
    return this.#refill('greedy', tokens, period);
  }

  /** All `tokens` at once whenever a whole `period` has passed. */
  refillIntervally(tokens, period) {
    return this.#refill('intervally', tokens, period);
  }

  /** As `refillIntervally`, with periods aligned to `firstRefillTime` (a Date, epoch ms or RFC 3339). */
  refillIntervallyAligned(tokens, period, firstRefillTime) {
    return this.#refill('intervallyAligned', tokens, period, instant(firstRefillTime), undefined);
  }

  /** As `refillIntervallyAligned`, starting with only the tokens the current period would earn. */
  refillIntervallyAlignedWithAdaptiveInitialTokens(tokens, period, firstRefillTime) {
    return this.#refill('intervallyAligned', tokens, period, instant(firstRefillTime), true);
  }

  /** Tokens a new bucket starts with (default: capacity). */
  initialTokens(tokens) {
    this.#spec.initialTokens = whole(tokens, 'initialTokens');
    return this;
  }

  /** Names the limit, so a replacing configuration can inherit its tokens. */
  id(id) {
    if (typeof id !== 'string') throw invalidArgument(`id must be a string, got ${describe(id)}`);
    this.#spec.id = id;
    return this;
  }

  /** The limit in the JSON schema. */
  toJSON() {
    return { ...this.#spec };
  }

  #refill(kind, tokens, period, firstRefillTime, adaptiveInitialTokens) {
    const refill = { kind, tokens: whole(tokens, 'refill tokens'), period };
    if (firstRefillTime !== undefined) refill.firstRefillTime = firstRefillTime;
    if (adaptiveInitialTokens !== undefined) refill.adaptiveInitialTokens = adaptiveInitialTokens;
    this.#spec.refill = refill;
    return this;
  }
}

// Integers go to Rust as numbers or BigInts; signs are the core's to judge, a BigInt's range
// is checked here as for an operation's argument.
function whole(value, what) {
  if (typeof value === 'bigint') {
    if (wholeFault(value, false) !== undefined) throw invalidArgument(`${what} ${value} is outside the 64-bit range`);
    return value;
  }
  if (Number.isSafeInteger(value)) return value;
  throw invalidArgument(`${what} must be a whole number (a safe integer or a BigInt), got ${describe(value)}`);
}

function instant(value) {
  const isDate = plainData('INVALID_INSTANT', 'firstRefillTime', () => value instanceof Date);
  return isDate ? value.getTime() : value;
}
