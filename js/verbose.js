// Bucket4j's VerboseBucket: each result comes with the configuration and diagnostics right
// after the operation, taken at the same instant.
import * as ops from './operations.js';
import { readClock } from './clock.js';
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
  constructor({ raw, clock, listener }) {
    this.#raw = raw;
    this.#clock = clock;
    this.#listener = listener;
  }

  tryConsume(tokens) {
    return this.#run((now) => {
      const consumed = ops.tryConsume(this.#raw, tokens, now);
      if (this.#listener !== null) tellConsumption(this.#listener, consumed, tokens);
      return consumed;
    });
  }

  tryConsumeAndReturnRemaining(tokens) {
    return this.#run((now) => {
      const probe = ops.tryConsumeAndReturnRemaining(this.#raw, tokens, now);
      if (this.#listener !== null) tellConsumption(this.#listener, probe.consumed, tokens);
      return probe;
    });
  }

  estimateAbilityToConsume(tokens) {
    return this.#run((now) => ops.estimateAbilityToConsume(this.#raw, tokens, now));
  }

  tryConsumeAsMuchAsPossible(limit) {
    return this.#run((now) => {
      const consumed = ops.tryConsumeAsMuchAsPossible(this.#raw, limit, now);
      if (this.#listener !== null && consumed > 0) this.#listener.onConsumed?.(consumed);
      return consumed;
    });
  }

  addTokens(tokens) {
    return this.#run((now) => ops.addTokens(this.#raw, tokens, now));
  }

  forceAddTokens(tokens) {
    return this.#run((now) => ops.forceAddTokens(this.#raw, tokens, now));
  }

  consumeIgnoringRateLimits(tokens) {
    return this.#run((now) => {
      const wait = ops.consumeIgnoringRateLimits(this.#raw, tokens, now);
      if (this.#listener !== null) this.#listener.onConsumed?.(tokens);
      return wait;
    });
  }

  getAvailableTokens() {
    return this.#run((now) => ops.getAvailableTokens(this.#raw, now));
  }

  reset() {
    return this.#run((now) => ops.reset(this.#raw, now));
  }

  #run(operation) {
    const now = readClock(this.#clock);
    const value = operation(now);
    return { value, configuration: ops.configuration(this.#raw), diagnostics: ops.diagnostics(this.#raw, now) };
  }
}
