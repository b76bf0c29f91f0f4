// Types of the npm package `edgebucket`.

/**
 * A token count or a number of nanoseconds: a number while exact (|n| < 2^53), a BigInt
 * beyond; waits that never end are `Infinity`.
 */
export type Exact = number | bigint;

/** A token count argument: a safe integer number, or a BigInt for 64-bit counts. */
export type Tokens = number | bigint;

/**
 * A duration: milliseconds (`250`), a humantime string (`'250ms'`, `'1s'`, `'10 minutes'`,
 * `'1h 30m'`, `'1d'`) or whole parts (`{ minutes: 1, seconds: 30 }`). Read by the Rust core.
 */
export type Duration =
  | number
  | string
  | {
      days?: number;
      hours?: number;
      minutes?: number;
      seconds?: number;
      milliseconds?: number;
      microseconds?: number;
      nanoseconds?: number;
    };

/** An instant: a Date, epoch milliseconds, or an RFC 3339 timestamp (`Z` or a numeric offset). */
export type Instant = Date | number | string;

/** A time meter: the current time in nanoseconds (a safe integer number, |n| ≤ 2^53 - 1, or a BigInt). */
export type TimeMeter = () => number | bigint;

/**
 * The one error class. `code` is the Rust core's stable code (`NON_POSITIVE_CAPACITY`,
 * `INVALID_DURATION`, `NON_POSITIVE_TOKENS`, `KEY_TOO_LONG`, …) or `INVALID_ARGUMENT` for an
 * operation's or option's argument of the wrong type or form (a builder count such as
 * `capacity('5')` included). Anything wrong inside a configuration object, whatever its type, is
 * `INVALID_CONFIGURATION` or a specific code; a duration
 * that cannot be read is `INVALID_DURATION`, an instant `INVALID_INSTANT`. An operation that throws has changed
 * nothing, except when a listener throws: listeners run after the operation took effect.
 *
 * @example
 * try { bucket.tryConsume(0) } catch (e) { if (e instanceof EdgeBucketError) e.code }
 */
export class EdgeBucketError extends Error {
  constructor(code: string, message: string);
  readonly name: 'EdgeBucketError';
  readonly code: string;
}

/** How tokens carry over when a configuration is replaced. */
export const TokensInheritanceStrategy: {
  readonly RESET: 'RESET';
  readonly PROPORTIONALLY: 'PROPORTIONALLY';
  readonly AS_IS: 'AS_IS';
  readonly ADDITIVE: 'ADDITIVE';
};
export type TokensInheritanceStrategy = (typeof TokensInheritanceStrategy)[keyof typeof TokensInheritanceStrategy];

/** A limit in the JSON schema. */
export interface BandwidthSpec {
  capacity: Tokens;
  refill: {
    kind: 'greedy' | 'intervally' | 'intervallyAligned';
    tokens: Tokens;
    period: Duration;
    firstRefillTime?: number | string;
    adaptiveInitialTokens?: boolean;
  };
  initialTokens?: Tokens;
  id?: string;
}

/** A configuration in the JSON schema. */
export interface ConfigurationSpec {
  bandwidths: BandwidthSpec[];
}

/** One limit under construction (Bucket4j's `Bandwidth.builder()`). */
export class BandwidthBuilder {
  /** The most tokens the limit holds. */
  capacity(tokens: Tokens): this;
  /** `tokens` per `period`, added as soon as possible. */
  refillGreedy(tokens: Tokens, period: Duration): this;
  /** All `tokens` at once whenever a whole `period` has passed. */
  refillIntervally(tokens: Tokens, period: Duration): this;
  /** Intervally, periods aligned to `firstRefillTime`. */
  refillIntervallyAligned(tokens: Tokens, period: Duration, firstRefillTime: Instant): this;
  /** Aligned, starting with only the tokens the current period would earn. */
  refillIntervallyAlignedWithAdaptiveInitialTokens(tokens: Tokens, period: Duration, firstRefillTime: Instant): this;
  /** Tokens a new bucket starts with (default: capacity). */
  initialTokens(tokens: Tokens): this;
  /** Names the limit for configuration replacement. */
  id(id: string): this;
  /** The limit in the JSON schema. */
  toJSON(): BandwidthSpec;
}

/** What `addLimit` accepts. */
export type Limit = ((limit: BandwidthBuilder) => BandwidthBuilder) | BandwidthBuilder | BandwidthSpec;

/** Builds a {@link BucketConfiguration}. */
export class ConfigurationBuilder {
  /**
   * Adds a limit: a function given a {@link BandwidthBuilder} (Bucket4j's style), a
   * BandwidthBuilder, or a bandwidth in the JSON schema. A wrong type throws `INVALID_ARGUMENT` at once.
   */
  addLimit(limit: Limit): this;
  /**
   * Checks the limits in the core and returns the configuration: `EMPTY_CONFIGURATION` without
   * any, `NON_POSITIVE_CAPACITY`, `INVALID_DURATION`, `DUPLICATE_BANDWIDTH_ID` and the like.
   */
  build(): BucketConfiguration;
}

/**
 * An immutable, validated list of limits.
 *
 * @example
 * const config = BucketConfiguration.builder()
 *   .addLimit(l => l.capacity(50).refillGreedy(10, '1s').id('burst'))
 *   .addLimit(l => l.capacity(1000).refillIntervally(1000, '1h'))
 *   .build();
 */
export class BucketConfiguration {
  private constructor();
  static builder(): ConfigurationBuilder;
  /** From the JSON schema, checked by the core. */
  static fromJSON(spec: ConfigurationSpec): BucketConfiguration;
  /** In the JSON schema (durations as humantime strings). */
  toJSON(): ConfigurationSpec;
  /** True when both describe the same limits. */
  equals(other: BucketConfiguration): boolean;
}

/** What `tryConsumeAndReturnRemaining` tells (Bucket4j's ConsumptionProbe). */
export interface ConsumptionProbe {
  /** Whether the tokens were consumed. */
  consumed: boolean;
  /** Tokens left, never negative. */
  remainingTokens: Exact;
  /** 0 when consumed; else nanoseconds until it could be, `Infinity` if never. */
  nanosToWaitForRefill: Exact;
  /** Nanoseconds until every limit is full. */
  nanosToWaitForReset: Exact;
}

/** What `estimateAbilityToConsume` tells; nothing is consumed (Bucket4j's EstimationProbe). */
export interface EstimationProbe {
  /** Whether the tokens could be consumed now. */
  canBeConsumed: boolean;
  /** Tokens available, never negative. */
  remainingTokens: Exact;
  /** 0 when they could be consumed; else nanoseconds until they could, `Infinity` if never. */
  nanosToWaitForRefill: Exact;
}

/** One limit's state, in configuration order. */
export interface BandwidthDiagnostics {
  /** The limit's id, `null` without one. */
  id: string | null;
  capacity: Exact;
  /** Tokens the limit holds now: negative in debt, above capacity after `forceAddTokens`. */
  availableTokens: Exact;
  /** Nanoseconds until the limit is full, 0 when it is. */
  nanosToFullRefill: Exact;
}

/** A bucket's state at one instant. */
export interface Diagnostics {
  /** The least of the limits' tokens: what `getAvailableTokens` gives. */
  availableTokens: Exact;
  /** Nanoseconds until every limit is full. */
  nanosToFullRefill: Exact;
  bandwidths: BandwidthDiagnostics[];
}

/** An operation's result with the configuration and diagnostics right after it, at the same instant. */
export interface VerboseResult<T> {
  value: T;
  configuration: BucketConfiguration;
  diagnostics: Diagnostics;
}

/**
 * What a listenable bucket reports; implement any hooks. Hooks run after the operation took
 * effect: a hook that throws makes the call throw with the tokens taken, except `onDelayed`,
 * whose wait is then cancelled and its tokens returned.
 */
export interface BucketListener {
  onConsumed?(tokens: Tokens): void;
  onRejected?(tokens: Tokens): void;
  onDelayed?(nanos: Exact): void;
  onAborted?(reason: unknown): void;
}

/** A listener with counters (Bucket4j's SimpleBucketListener). */
export class SimpleListener implements BucketListener {
  /** Tokens consumed. Every counter is a number while exact, a BigInt past 2^53. */
  consumed: Exact;
  /** Tokens asked for and refused. */
  rejected: Exact;
  /** Nanoseconds that scheduled waits were delayed by. */
  delayedNanos: Exact;
  /** Scheduled waits aborted through their AbortSignal. */
  aborted: number;
  onConsumed(tokens: Tokens): void;
  onRejected(tokens: Tokens): void;
  onDelayed(nanos: Exact): void;
  onAborted(): void;
}

/**
 * A token bucket with Bucket4j's semantics and a clock.
 *
 * @example
 * const bucket = Bucket.builder().addLimit(l => l.capacity(50).refillGreedy(10, '1s')).build();
 * if (bucket.tryConsume(1)) handle(request);
 */
export class Bucket {
  private constructor();
  /** Starts building a bucket. */
  static builder(): BucketBuilder;
  /** Consumes `tokens` (a positive integer) if every limit has them; whether it did. */
  tryConsume(tokens: Tokens): boolean;
  /**
   * As `tryConsume`, telling what is left and how long to wait.
   *
   * @example
   * const probe = bucket.tryConsumeAndReturnRemaining(cost);
   * // Infinity when `cost` is more than a limit's capacity: no wait helps.
   * if (!probe.consumed && probe.nanosToWaitForRefill !== Infinity) {
   *   response.setHeader('Retry-After', Math.ceil(Number(probe.nanosToWaitForRefill) / 1e9));
   * }
   */
  tryConsumeAndReturnRemaining(tokens: Tokens): ConsumptionProbe;
  /** Whether `tokens` could be consumed now, without consuming them. */
  estimateAbilityToConsume(tokens: Tokens): EstimationProbe;
  /** Consumes every available token, at most `limit` (none or `Infinity`: no limit); how many. */
  tryConsumeAsMuchAsPossible(limit?: Tokens): Exact;
  /** Gives `tokens` back: each limit gets `min(capacity, available + tokens)`. */
  addTokens(tokens: Tokens): void;
  /** Adds `tokens`, beyond capacity if need be. */
  forceAddTokens(tokens: Tokens): void;
  /** Consumes whatever the limits; nanoseconds until the debt is repaid. */
  consumeIgnoringRateLimits(tokens: Tokens): Exact;
  /** Tokens available now: the least over the limits, negative in debt. */
  getAvailableTokens(): Exact;
  /** Fills every limit to capacity. */
  reset(): void;
  /**
   * Replaces the limits, carrying tokens over by `strategy`. Limits are matched by id; a limit
   * without id matches the other configuration's only when each has at most one such limit. A
   * limit without a match starts fresh.
   *
   * @example
   * bucket.replaceConfiguration(stricter, TokensInheritanceStrategy.PROPORTIONALLY);
   */
  replaceConfiguration(configuration: BucketConfiguration, strategy: TokensInheritanceStrategy): void;
  /** The configuration in force: one immutable object, the same until it is replaced. */
  getConfiguration(): BucketConfiguration;
  /** Available tokens and time to full refill, overall and per limit. */
  getDiagnostics(): Diagnostics;
  /** The same bucket, its operations returning `{ value, configuration, diagnostics }`. */
  asVerbose(): VerboseBucket;
  /**
   * The same bucket, with waits as promises that never block.
   *
   * @example
   * await bucket.asScheduler().consume(5, { signal: AbortSignal.timeout(10_000) });
   */
  asScheduler(): Scheduler;
  /** The same bucket (same tokens), reporting to `listener`; a hook that is not a function throws `INVALID_ARGUMENT`. */
  toListenable(listener: BucketListener): Bucket;
}

/** Builds a {@link Bucket}. */
export class BucketBuilder {
  /** Adds a limit (see `ConfigurationBuilder.addLimit`). */
  addLimit(limit: Limit): this;
  /** Uses this configuration instead of `addLimit` calls. */
  withConfiguration(configuration: BucketConfiguration): this;
  /** Milliseconds from `Date.now()` (the default). */
  withMillisecondPrecision(): this;
  /** Nanoseconds from `performance.now()`. */
  withNanosecondPrecision(): this;
  /** A manual clock: `() => nanoseconds`. */
  withCustomTimeMeter(meter: TimeMeter): this;
  /** Checks the limits (as `ConfigurationBuilder.build`) and creates the bucket, full unless initial tokens say otherwise. */
  build(): Bucket;
}

/** Each operation's result with the configuration and diagnostics right after it. */
export class VerboseBucket {
  private constructor();
  tryConsume(tokens: Tokens): VerboseResult<boolean>;
  tryConsumeAndReturnRemaining(tokens: Tokens): VerboseResult<ConsumptionProbe>;
  estimateAbilityToConsume(tokens: Tokens): VerboseResult<EstimationProbe>;
  tryConsumeAsMuchAsPossible(limit?: Tokens): VerboseResult<Exact>;
  addTokens(tokens: Tokens): VerboseResult<void>;
  forceAddTokens(tokens: Tokens): VerboseResult<void>;
  consumeIgnoringRateLimits(tokens: Tokens): VerboseResult<Exact>;
  getAvailableTokens(): VerboseResult<Exact>;
  reset(): VerboseResult<void>;
  replaceConfiguration(configuration: BucketConfiguration, strategy: TokensInheritanceStrategy): VerboseResult<void>;
}

/**
 * Waits as promises: fair (reservations queue in order) and never blocking. A wait's time is set
 * when it is reserved: `reset`, `addTokens` or a new configuration meanwhile do not shorten it
 * (as in Bucket4j). A wait that ends unserved (aborted, or its listener threw) returns its
 * tokens and makes the waits behind it again, against the bucket as it is then, never due before
 * those ahead of it; waits due at the same time are served in the order reserved.
 * With the built-in clocks a wait ends by the bucket's clock; with a time meter, by timers alone.
 */
export class Scheduler {
  private constructor();
  /**
   * Resolves once `tokens` are consumed. On abort rejects with `signal.reason` and returns the
   * tokens; they are back in a microtask after the abort event, before the rejection is seen,
   * unless the waits behind were moved up by a slow pass (thousands of waits) just before: then
   * those ended meanwhile come back together, put off so that such passes take at most a tenth of
   * the time.
   */
  consume(tokens: Tokens, options?: { signal?: AbortSignal }): Promise<void>;
  /** `false` at once if `tokens` cannot be had within `maxWait`; else `true` after the wait. */
  tryConsume(tokens: Tokens, maxWait: Duration, options?: { signal?: AbortSignal }): Promise<boolean>;
}

/** A store key: a string (its UTF-8 bytes) or bytes. At most 65,535 bytes. */
export type Key = string | Uint8Array;

/** What `new BucketStore(...)` takes; see {@link BucketStore}. */
export interface StoreOptions {
  /**
   * For every key, or a supplier called only for keys the store does not hold (new, or expired and
   * swept) and outdated keys. The supplier may use the store for other keys. An operation that needs
   * the bucket of the key it is supplying (a consume, estimate, reservation or token count) throws
   * `STORE_BUSY`, and the key is not created; `has` and `delete` work (an outdated key deleted
   * there gets a fresh bucket from the supplied configuration, no tokens carried over).
   */
  configuration: BucketConfiguration | ((key: Key) => BucketConfiguration);
  /** Default 1,000,000; from 1 to 2^32 - 1 (what wasm memory can address), or `Infinity` for no cap. */
  maxKeys?: number;
  /**
   * Default 2^30 (1 GiB); from 65,536 to 2^32, rounded up to 64 KiB: the most bytes of keys held,
   * removed keys' included until reclaimed (at the latest once they are an eighth of it).
   * Past it, unless dropping expired keys makes room, a new key is refused with `KEY_SPACE_FULL`;
   * existing keys carry on. A key never spans two 64 KiB chunks, so keys longer than a few
   * KiB leave chunk tails unused: up to half the space for keys just over 32 KiB.
   */
  maxKeyBytes?: number;
  /**
   * How long a full bucket is kept before it may be swept (default 0), counted from its last
   * consumption attempt at the latest: one a full bucket refuses starts it again where the refill is greedy. Expiry is eventual.
   */
  idleGrace?: Duration;
  /** Configuration version, a whole number from 0 to 2^53 - 1 (default 0; left out in `configure`, the current one stays). */
  version?: number;
  /** How outdated keys inherit tokens (default RESET; left out in `configure`, the current one stays). */
  strategy?: TokensInheritanceStrategy;
  /** 'millis' (default), 'nanos', or a time meter. */
  clock?: 'millis' | 'nanos' | TimeMeter;
}

/**
 * Buckets by key in wasm memory (Bucket4j's ProxyManager idea, local).
 *
 * Every operation on a key gives a key not held a bucket first, from the configuration or the
 * supplier, reads (`estimateAbilityToConsume`, `getAvailableTokens`) included, as a ProxyManager's
 * remote bucket is created on first use. The key then counts in `size` and toward `maxKeys` until
 * it expires; `has` and `delete` create nothing.
 *
 * @example
 * const store = new BucketStore({ configuration: config });
 * if (!store.tryConsume(request.ip, 1)) return tooManyRequests();
 */
export class BucketStore {
  constructor(options: StoreOptions);
  /**
   * Sets the configuration (or supplier). Keys of a lower version than `version` get it on their
   * next access, tokens carried over by `strategy`; keys at `version` keep theirs. Left out,
   * `version` and `strategy` stay as they are: a new configuration alone is for new keys only.
   *
   * Called from the store's own supplier it throws `STORE_BUSY`: the key being supplied would get
   * the old configuration under the new version.
   *
   * @example
   * store.configure({ configuration: stricter, version: 2, strategy: TokensInheritanceStrategy.AS_IS });
   */
  configure(options: Pick<StoreOptions, 'configuration' | 'version' | 'strategy'>): void;
  /** Consumes `tokens` from `key`'s bucket if it has them; whether it did. A new key gets a bucket. */
  tryConsume(key: Key, tokens: Tokens): boolean;
  /** As `Bucket.tryConsumeAndReturnRemaining`, on `key`'s bucket. */
  tryConsumeAndReturnRemaining(key: Key, tokens: Tokens): ConsumptionProbe;
  /** As `Bucket.estimateAbilityToConsume`, on `key`'s bucket. */
  estimateAbilityToConsume(key: Key, tokens: Tokens): EstimationProbe;
  /** Tokens available in `key`'s bucket. */
  getAvailableTokens(key: Key): Exact;
  /** Whether `key` is held; false for a key over 65,535 bytes, which cannot be. */
  has(key: Key): boolean;
  /** Drops `key`; whether it was held (false for a key over 65,535 bytes). */
  delete(key: Key): boolean;
  /** Drops every expired key now; how many. */
  removeExpired(): number;
  /** Drops every key. The store keeps the memory they took for new keys; `free()` releases it. */
  clear(): void;
  /** Keys held, expired keys not yet dropped included. */
  readonly size: number;
  /** Frees the store's wasm memory now; any later use throws `STORE_FREED`. */
  free(): void;
}

/** Bucket4j's INFINITY_DURATION as the package reports it. */
export const INFINITY_DURATION: number;
