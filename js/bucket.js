// Bucket4j's Bucket: limits, a clock, and every operation of the core.
import { invalidArgument, EdgeBucketError } from './errors.js';
import { raw, describe, isRawBucket, plainData } from './runtime.js';
import { ConfigurationBuilder, rawConfiguration } from './configuration.js';
import { millisecondClock, nanosecondClock, customClock, readClock } from './clock.js';
import * as ops from './operations.js';
import { tellConsumption } from './listener.js';
import { VerboseBucket } from './verbose.js';
import { Scheduler } from './scheduler.js';

let parts;

/**
 * A token bucket with Bucket4j's semantics, exact integer arithmetic in wasm, and a clock.
 * Token counts and nanoseconds are numbers while exact (below 2^53), BigInts beyond, and
 * `Infinity` for a wait that can never end. Bad arguments throw {@link EdgeBucketError} and
 * change nothing.
 *
 * @example
 * const bucket = Bucket.builder()
 *   .addLimit(l => l.capacity(50).refillGreedy(10, '1s').id('burst'))
 *   .build();
 * if (bucket.tryConsume(1)) handle(request);
 */
export class Bucket {
  #raw;
  #clock;
  #listener;

  /** @internal use `Bucket.builder()`. */
  constructor(rawBucket, clock, listener = null) {
    if (!isRawBucket(rawBucket)) throw invalidArgument('use Bucket.builder() to make a bucket');
    this.#raw = rawBucket;
    this.#clock = clock;
    this.#listener = listener;
  }

  static {
    parts = (bucket) => ({ raw: bucket.#raw, clock: bucket.#clock, listener: bucket.#listener });
  }

  /** Starts building a bucket. */
  static builder() {
    return new BucketBuilder();
  }

  /** Consumes `tokens` if every limit has them; whether it did. */
  tryConsume(tokens) {
    const consumed = ops.tryConsume(this.#raw, tokens, readClock(this.#clock));
    if (this.#listener !== null) tellConsumption(this.#listener, consumed, tokens);
    return consumed;
  }

  /** Consumes if possible; `{ consumed, remainingTokens, nanosToWaitForRefill, nanosToWaitForReset }`. */
  tryConsumeAndReturnRemaining(tokens) {
    const probe = ops.tryConsumeAndReturnRemaining(this.#raw, tokens, readClock(this.#clock));
    if (this.#listener !== null) tellConsumption(this.#listener, probe.consumed, tokens);
    return probe;
  }

  /** Whether `tokens` could be consumed now: `{ canBeConsumed, remainingTokens, nanosToWaitForRefill }`. */
  estimateAbilityToConsume(tokens) {
    return ops.estimateAbilityToConsume(this.#raw, tokens, readClock(this.#clock));
  }

  /** Consumes every available token (at most `limit`); how many. */
  tryConsumeAsMuchAsPossible(limit) {
    const consumed = ops.tryConsumeAsMuchAsPossible(this.#raw, limit, readClock(this.#clock));
    if (this.#listener !== null && consumed > 0) this.#listener.onConsumed?.(consumed);
    return consumed;
  }

  /** Returns `tokens`: `min(capacity, available + tokens)` per limit. */
  addTokens(tokens) {
    ops.addTokens(this.#raw, tokens, readClock(this.#clock));
  }

  /** Adds `tokens`, beyond capacity if need be. */
  forceAddTokens(tokens) {
    ops.forceAddTokens(this.#raw, tokens, readClock(this.#clock));
  }

  /** Consumes `tokens` whatever the limits; the nanoseconds until the debt is repaid. */
  consumeIgnoringRateLimits(tokens) {
    const wait = ops.consumeIgnoringRateLimits(this.#raw, tokens, readClock(this.#clock));
    if (this.#listener !== null) this.#listener.onConsumed?.(tokens);
    return wait;
  }

  /** Tokens available now (negative in debt). */
  getAvailableTokens() {
    return ops.getAvailableTokens(this.#raw, readClock(this.#clock));
  }

  /** Fills every limit to capacity. */
  reset() {
    ops.reset(this.#raw, readClock(this.#clock));
  }

  /** Replaces the limits, carrying tokens over by `strategy` (a {@link TokensInheritanceStrategy}). */
  replaceConfiguration(configuration, strategy) {
    // Before the clock: one from another copy of the package is adopted by running its code,
    // which may use this package and overwrite a BigInt time left in the exchange.
    const held = rawConfiguration(configuration);
    ops.replaceConfiguration(this.#raw, held, strategy, readClock(this.#clock));
  }

  /** The configuration in force. */
  getConfiguration() {
    return ops.configuration(this.#raw);
  }

  /** Available tokens and time to full refill, overall and per limit. */
  getDiagnostics() {
    return ops.diagnostics(this.#raw, readClock(this.#clock));
  }

  /** The same bucket, its operations returning `{ value, configuration, diagnostics }`. */
  asVerbose() {
    return new VerboseBucket(parts(this));
  }

  /** The same bucket, with waits that return promises and never block. */
  asScheduler() {
    return new Scheduler(parts(this));
  }

  /** The same bucket (same tokens), reporting to `listener` (see {@link SimpleListener}). */
  toListenable(listener) {
    if (listener === null || typeof listener !== 'object') throw invalidArgument('a listener must be an object');
    // Checked now: a hook that is not a function would throw only after its operation took effect.
    for (const hook of LISTENER_HOOKS) {
      const value = plainData('INVALID_ARGUMENT', `listener.${hook}`, () => listener[hook]);
      if (value != null && typeof value !== 'function') {
        throw invalidArgument(`listener.${hook} must be a function, got ${describe(value)}`);
      }
    }
    return new Bucket(this.#raw, this.#clock, listener);
  }
}

const LISTENER_HOOKS = ['onConsumed', 'onRejected', 'onDelayed', 'onAborted'];

/** Builds a {@link Bucket}: limits, then optionally the clock. */
export class BucketBuilder {
  #configuration = new ConfigurationBuilder();
  #limits = 0;
  #given = null;
  #clock = millisecondClock();

  /** Adds a limit (see `ConfigurationBuilder.addLimit`). */
  addLimit(limit) {
    this.#configuration.addLimit(limit);
    this.#limits += 1;
    return this;
  }

  /** Uses this configuration instead of `addLimit` calls. */
  withConfiguration(configuration) {
    rawConfiguration(configuration);
    this.#given = configuration;
    return this;
  }

  /** Milliseconds from `Date.now()` (the default). */
  withMillisecondPrecision() {
    this.#clock = millisecondClock();
    return this;
  }

  /** Nanoseconds from `performance.now()`. */
  withNanosecondPrecision() {
    this.#clock = nanosecondClock();
    return this;
  }

  /** A custom time meter returning nanoseconds (number or BigInt): a manual clock for tests. */
  withCustomTimeMeter(meter) {
    this.#clock = customClock(meter);
    return this;
  }

  /** Validates the limits and creates the bucket now. */
  build() {
    if (this.#given !== null && this.#limits > 0) {
      throw new EdgeBucketError('INVALID_ARGUMENT', 'use either withConfiguration or addLimit, not both');
    }
    const configuration = this.#given ?? this.#configuration.build();
    const clock = this.#clock;
    const rawBucket = new raw.RawBucket(rawConfiguration(configuration), clock.unitIsMillis, clock.originMillis, readClock(clock));
    return new Bucket(rawBucket, clock);
  }
}
