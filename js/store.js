// Many buckets by key in wasm memory: the Rust core's BucketStore (Bucket4j's ProxyManager
// idea, local). See src/core/store.rs for the memory layout, expiry and eviction.
import { invalidArgument, EdgeBucketError } from './errors.js';
import { raw, knownOptions, writeKey, keyCopy, tokensArg, fail, result, describe, plainDuration, STATUS_TRUE, STATUS_NEEDS_CONFIGURATION } from './runtime.js';
import { isBucketConfiguration, rawConfiguration, TokensInheritanceStrategy } from './configuration.js';
import { clockOption, readClock, heldReading, timeArg } from './clock.js';
import { consumptionProbe, estimationProbe } from './operations.js';


/**
 * Buckets by key (a string or a Uint8Array; a string is its UTF-8 bytes), about 40–60 bytes
 * each plus the key, in wasm memory.
 *
 * - `configuration`: a {@link BucketConfiguration} for every key, or a function
 *   `(key) => BucketConfiguration` called only for keys the store does not hold (new, or
 *   expired and swept: with the default `idleGrace` of 0 a key whose bucket is full again may
 *   be swept by a later insertion) and for keys of an older `version`.
 * - `version` and `strategy`: raising the version (see {@link BucketStore#configure}) gives
 *   keys of older versions the new configuration on their next access, tokens carried over by
 *   the strategy (Bucket4j's implicit configuration replacement).
 * - `maxKeys` (default 1,000,000): beyond it an insertion evicts a key (CLOCK: the first key
 *   under the hand that is expired or unused since the hand last passed; the call that creates a
 *   key is not a use, so keys used once go first). From 1 to 2^32 - 1,
 *   or `Infinity` for no cap.
 * - `maxKeyBytes` (default 1 GiB): the most bytes of keys held (removed keys' until they are
 *   reclaimed: at the latest once they are an eighth of the bytes held), from 65,536 to 2^32,
 *   rounded up to 64 KiB. Past it, unless dropping expired keys makes room, a new key is
 *   refused with `KEY_SPACE_FULL` while existing keys carry on: it bounds the memory long keys
 *   from clients could take, below the 4 GiB of wasm memory, whose exhaustion would break every
 *   bucket. A key never spans two 64 KiB chunks, so long keys leave chunk tails unused (up to
 *   half the space for keys just over 32 KiB).
 * - `idleGrace` (default 0): a key expires once its bucket has been full that long, counted
 *   from its last consumption attempt at the latest (Bucket4j's expiry "time to refill to
 *   maximum" plus a grace, from the last write): an attempt a full bucket refuses (greedy refill) starts the
 *   grace again, reads do not. Expiry is eventual, as a TTL: insertions sweep a few keys each,
 *   eviction never spares an expired key, `removeExpired()` sweeps all. It is unobservable for
 *   greedy limits whose initial tokens are their capacity, while the configuration stays: after
 *   a version change an expired key starts afresh under the new configuration instead of
 *   carrying its tokens over by the strategy. A key that spent initial tokens above its capacity
 *   never expires: a fresh bucket would hand them out again.
 * - `clock`: 'millis' (default, `Date.now()`), 'nanos', or a function returning nanoseconds.
 *
 * @example
 * const store = new BucketStore({ configuration: BucketConfiguration.builder()
 *   .addLimit(l => l.capacity(100).refillGreedy(100, '1 minute')).build() });
 * if (!store.tryConsume(request.ip, 1)) return tooManyRequests();
 */
export class BucketStore {
  #raw;
  #clock;
  #supplier = null;
  #version = 0;
  #strategy = TokensInheritanceStrategy.RESET;
  #supplying = []; // the keys (as bytes) whose supplier is running: it may use the store for other keys

  constructor(options = {}) {
    const known = ['configuration', 'maxKeys', 'maxKeyBytes', 'idleGrace', 'version', 'strategy', 'clock'];
    const {
      configuration,
      maxKeys = 1_000_000,
      maxKeyBytes = 2 ** 30,
      idleGrace = 0,
      version = 0,
      strategy = TokensInheritanceStrategy.RESET,
      clock,
    } = knownOptions(options, known, 'new BucketStore');
    if (maxKeys !== Infinity && !Number.isSafeInteger(maxKeys)) {
      throw invalidArgument(`maxKeys must be a whole number or Infinity, got ${describe(maxKeys)}`);
    }
    if (!Number.isSafeInteger(maxKeyBytes)) {
      throw invalidArgument(`maxKeyBytes must be a whole number, got ${describe(maxKeyBytes)}`);
    }
    this.#clock = clockOption(clock);
    const grace = plainDuration(idleGrace);
    this.#raw = new raw.RawStore(maxKeys, maxKeyBytes, grace, this.#clock.unitIsMillis, this.#clock.originMillis);
    this.configure({ configuration, version, strategy });
  }

  /**
   * Sets the configuration (or supplier). Keys created under a lower version than `version`
   * get it on their next access, tokens carried over by `strategy`; keys already at `version`
   * keep theirs. Left out, `version` and `strategy` stay as they are, so a new configuration
   * without a new version is for new keys only.
   *
   * @example
   * store.configure({ configuration: stricter, version: 2, strategy: TokensInheritanceStrategy.AS_IS });
   */
  configure(options) {
    if (this.#supplying.length > 0) {
      // The key being supplied would be stamped with the new version but get the configuration
      // its supplier made for the old one, and never be brought up to date.
      throw new EdgeBucketError('STORE_BUSY', 'the store cannot be configured from within its configuration supplier');
    }
    const known = ['configuration', 'version', 'strategy'];
    const { configuration, version = this.#version, strategy = this.#strategy } = knownOptions(options, known, 'configure');
    const supplied = typeof configuration === 'function';
    if (!supplied && !isBucketConfiguration(configuration)) {
      throw invalidArgument('configuration must be a BucketConfiguration or a function (key) => BucketConfiguration');
    }
    if (!Number.isSafeInteger(version) || version < 0) {
      throw invalidArgument(`version must be a whole number from 0 to 2^53 - 1, got ${describe(version)}`);
    }
    if (typeof strategy !== 'string') {
      throw invalidArgument('strategy must be a TokensInheritanceStrategy');
    }
    // (A wasm-bindgen class passed by value would be moved into Rust and emptied: pass a reference.)
    if (supplied) this.#raw.configureSupplied(version, strategy);
    else this.#raw.configureDefault(rawConfiguration(configuration), version, strategy);
    this.#supplier = supplied ? configuration : null;
    [this.#version, this.#strategy] = [version, strategy];
  }

  /** Consumes `tokens` from `key`'s bucket if it has them; whether it did. */
  tryConsume(key, tokens) {
    // Every operation reads the clock before it writes the key and the count: a time meter may
    // use the package itself, which writes its own into the same exchange.
    const now = readClock(this.#clock);
    let status = this.#raw.tryConsume(writeKey(key), tokensArg(tokens), now);
    if (status > STATUS_TRUE) status = this.#retry(status, key, (at) => this.#raw.tryConsume(writeKey(key), tokensArg(tokens), at), now);
    return status === STATUS_TRUE;
  }

  /** As `Bucket.tryConsumeAndReturnRemaining`, on `key`'s bucket. */
  tryConsumeAndReturnRemaining(key, tokens) {
    const op = (at) => this.#raw.tryConsumeAndReturnRemaining(writeKey(key), tokensArg(tokens), at);
    const now = readClock(this.#clock);
    return consumptionProbe(this.#settle(op(now), key, op, now));
  }

  /** As `Bucket.estimateAbilityToConsume`, on `key`'s bucket. */
  estimateAbilityToConsume(key, tokens) {
    const op = (at) => this.#raw.estimateAbilityToConsume(writeKey(key), tokensArg(tokens), at);
    const now = readClock(this.#clock);
    return estimationProbe(this.#settle(op(now), key, op, now));
  }

  /** Tokens available in `key`'s bucket. */
  getAvailableTokens(key) {
    const op = (at) => this.#raw.getAvailableTokens(writeKey(key), at);
    const now = readClock(this.#clock);
    this.#settle(op(now), key, op, now);
    return result(0);
  }

  /** Whether `key` is held: false for a key too long to be held. */
  has(key) {
    const store = this.#live();
    const length = lookupKey(key);
    return length >= 0 && store.has(length);
  }

  /** Drops `key`; whether it was held (false for a key too long to be held). */
  delete(key) {
    const store = this.#live();
    const length = lookupKey(key);
    return length >= 0 && store.remove(length);
  }

  /** Drops every expired key now; how many. */
  removeExpired() {
    const now = readClock(this.#clock); // first: a time meter may free the store
    return this.#raw.removeExpired(now);
  }

  /** Drops every key. */
  clear() {
    this.#raw.clear();
  }

  /** Keys held (expired keys not yet dropped included). */
  get size() {
    return this.#raw.size;
  }

  /**
   * Frees the store's wasm memory now instead of at garbage collection. Any later use throws
   * `STORE_FREED`; freeing again does nothing.
   */
  free() {
    if (this.#raw === FREED) return;
    this.#raw.free();
    this.#raw = FREED;
  }

  /** The wasm store; throws `STORE_FREED` once freed, also where a call on it would be skipped. */
  #live() {
    if (this.#raw === FREED) throw freedError();
    return this.#raw;
  }

  #settle(status, key, again, now) {
    return status > STATUS_TRUE ? this.#retry(status, key, again, now) === STATUS_TRUE : status === STATUS_TRUE;
  }

  // Cold path: an error, or a key that needs its configuration from the supplier. The operation
  // keeps the one time it read: a second read that failed would leave the key supplied.
  #retry(status, key, again, now) {
    if (status === STATUS_NEEDS_CONFIGURATION) {
      const time = heldReading(this.#clock, now); // the supplier may use the package
      this.#supply(key, time);
      status = again(timeArg(time));
    }
    if (status > STATUS_TRUE) fail();
    return status;
  }

  #supply(key, time) {
    const bytes = keyCopy(key);
    // A supplier that asks the store about its own key would be asked for that key again, and
    // again, until the stack overflows.
    if (this.#supplying.some((held) => sameBytes(held, bytes))) {
      throw new EdgeBucketError('STORE_BUSY', 'the configuration supplier used the store for the key it is supplying a configuration for');
    }
    this.#supplying.push(bytes);
    let configuration;
    try {
      // A copy of a byte key: a supplier that changed the caller's bytes would change the key.
      // Of the same class (a Buffer stays a Buffer), and a copy even for a Buffer, whose own
      // `slice` is a view.
      configuration = this.#supplier(typeof key === 'string' ? key : Uint8Array.prototype.slice.call(key));
    } finally {
      this.#supplying.pop();
    }
    // Before the key goes in the exchange: one from another copy of the package is adopted by
    // running its code, which may use this package.
    const held = rawConfiguration(configuration);
    this.#raw.supply(writeKey(key), held, timeArg(time));
  }
}

/** Stands in for a freed store's wasm object: every use throws. */
const FREED = new Proxy(
  {},
  {
    get() {
      throw freedError();
    },
  },
);

function freedError() {
  return new EdgeBucketError('STORE_FREED', 'the store was freed (store.free()); create another');
}

function sameBytes(a, b) {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** `writeKey` for lookups: a key too long to be held is not held (-1), as in the Rust store. */
function lookupKey(key) {
  try {
    return writeKey(key);
  } catch (e) {
    if (e instanceof EdgeBucketError && e.code === 'KEY_TOO_LONG') return -1;
    throw e;
  }
}
