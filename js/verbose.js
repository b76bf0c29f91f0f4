// Bucket4j's VerboseBucket: each result comes with the configuration and diagnostics right
// after the operation, taken at the same instant.
import * as ops from './operations.js';
import { invalidArgument } from './errors.js';
import { isRawBucket } from './runtime.js';
import { readClock } from './clock.js';
import { rawConfiguration } from './configuration.js';
import { tellConsumption } from './listener.js';

/**
 * @template T
 * @typedef {{ value: T, configuration: import('./configuration.js').BucketConfiguration, diagnostics: object }} VerboseResult
 */

/** A bucket's verbose view: see `Bucket.asVerbose()`. */
export class VerboseBucket {
  #raw;
  #clock;
  #listener;

  /** @internal */
  constructor(parts) {
    if (!isRawBucket(parts?.raw)) throw invalidArgument('use bucket.asVerbose() to make a verbose view');
    const { raw, clock, listener } = parts;
    this.#raw = raw;
    this.#clock = clock;
    this.#listener = listener;
  }

  tryConsume(tokens) {
    return this.#run(
      (now) => ops.tryConsume(this.#raw, tokens, now),
      (consumed) => tellConsumption(this.#listener, consumed, tokens),
    );
  }

  tryConsumeAndReturnRemaining(tokens) {
    return this.#run(
      (now) => ops.tryConsumeAndReturnRemaining(this.#raw, tokens, now),
      (probe) => tellConsumption(this.#listener, probe.consumed, tokens),
    );
  }

  estimateAbilityToConsume(tokens) {
    return this.#run((now) => ops.estimateAbilityToConsume(this.#raw, tokens, now));
  }

  tryConsumeAsMuchAsPossible(limit) {
    return this.#run(
      (now) => ops.tryConsumeAsMuchAsPossible(this.#raw, limit, now),
      (consumed) => consumed > 0 && this.#listener.onConsumed?.(consumed),
    );
  }

  addTokens(tokens) {
    return this.#run((now) => ops.addTokens(this.#raw, tokens, now));
  }

  forceAddTokens(tokens) {
    return this.#run((now) => ops.forceAddTokens(this.#raw, tokens, now));
  }

  consumeIgnoringRateLimits(tokens) {
    return this.#run(
      (now) => ops.consumeIgnoringRateLimits(this.#raw, tokens, now),
      () => this.#listener.onConsumed?.(tokens),
    );
  }

  getAvailableTokens() {
    return this.#run((now) => ops.getAvailableTokens(this.#raw, now));
  }

  reset() {
    return this.#run((now) => ops.reset(this.#raw, now));
  }

  /** Replaces the limits as `Bucket.replaceConfiguration` does; the result shows the new ones. */
  replaceConfiguration(configuration, strategy) {
    const held = rawConfiguration(configuration); // before the clock: see Bucket.replaceConfiguration
    return this.#run((now) => ops.replaceConfiguration(this.#raw, held, strategy, now));
  }

  /**
   * The operation, then the configuration and diagnostics at its instant, then the listener: a
   * listener may use other buckets, whose clocks would take the place of this one's time.
   */
  #run(operation, tell) {
    const now = readClock(this.#clock);
    const value = operation(now);
    const result = { value, configuration: ops.configuration(this.#raw), diagnostics: ops.diagnostics(this.#raw, now) };
    if (this.#listener !== null) tell?.(value);
    return result;
  }
}
