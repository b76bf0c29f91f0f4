// The raw bucket operations and the decoding of their results, shared by Bucket (which reads
// the clock and tells listeners) and VerboseBucket (which adds diagnostics at the same time).
import { result, fail, integerArg, tokensArg, ARG_TOKENS, ARG_WAIT, ARG_OWED, STATUS_TRUE } from './runtime.js';
import { BucketConfiguration, TokensInheritanceStrategy } from './configuration.js';
import { invalidArgument } from './errors.js';


function check(status) {
  if (status > STATUS_TRUE) fail();
  return status === STATUS_TRUE;
}

export function tryConsume(bucket, tokens, now) {
  return check(bucket.tryConsume(tokensArg(tokens), now));
}

export function tryConsumeAndReturnRemaining(bucket, tokens, now) {
  return consumptionProbe(check(bucket.tryConsumeAndReturnRemaining(tokensArg(tokens), now)));
}

export function estimateAbilityToConsume(bucket, tokens, now) {
  return estimationProbe(check(bucket.estimateAbilityToConsume(tokensArg(tokens), now)));
}

export function tryConsumeAsMuchAsPossible(bucket, limit, now) {
  const max = limit === undefined ? Infinity : integerArg(limit, ARG_TOKENS, 'limit');
  check(bucket.tryConsumeAsMuchAsPossible(max, now));
  return result(0);
}

export function addTokens(bucket, tokens, now) {
  check(bucket.addTokens(tokensArg(tokens), now));
}

export function returnReserved(bucket, tokens, stillOwed, now) {
  check(bucket.returnReserved(tokensArg(tokens), integerArg(stillOwed, ARG_OWED, 'tokens still owed'), now));
}

export function forceAddTokens(bucket, tokens, now) {
  check(bucket.forceAddTokens(tokensArg(tokens), now));
}

export function consumeIgnoringRateLimits(bucket, tokens, now) {
  check(bucket.consumeIgnoringRateLimits(tokensArg(tokens), now));
  return result(0);
}

/** The wait in nanoseconds if reserved (consumed now, to be used after the wait), else `null`. */
export function reserve(bucket, tokens, maxWaitNanos, now) {
  const maxWait = integerArg(maxWaitNanos, ARG_WAIT, 'maximum wait');
  return check(bucket.reserve(tokensArg(tokens), maxWait, now)) ? result(0) : null;
}

export function getAvailableTokens(bucket, now) {
  check(bucket.getAvailableTokens(now));
  return result(0);
}

export function reset(bucket, now) {
  check(bucket.reset(now));
}

/**
 * Each raw bucket's configuration and bandwidth ids until it is replaced. A configuration is
 * immutable, so one object serves every call: a copy per verbose result or diagnostics would be
 * wasm memory that only the finalizer frees, which under load grows it for good.
 */
const configurations = new WeakMap();

function held(bucket) {
  let entry = configurations.get(bucket);
  if (entry === undefined) {
    const configuration = new BucketConfiguration(bucket.configuration());
    entry = { configuration, ids: configuration.toJSON().bandwidths.map((b) => b.id ?? null) };
    configurations.set(bucket, entry);
  }
  return entry;
}

export function configuration(bucket) {
  return held(bucket).configuration;
}

/**
 * Replaces the limits with `held` (a configuration's wasm handle: `rawConfiguration`), tokens
 * carried over by `strategy`, a name the core checks.
 */
export function replaceConfiguration(bucket, held, strategy, now) {
  if (typeof strategy !== 'string') {
    throw invalidArgument(`strategy must be one of ${Object.keys(TokensInheritanceStrategy).join(', ')}`);
  }
  bucket.replaceConfiguration(held, strategy, now);
  configurations.delete(bucket);
}

export function diagnostics(bucket, now) {
  check(bucket.diagnostics(now));
  const availableTokens = result(0);
  const nanosToFullRefill = result(1);
  const bandwidths = held(bucket).ids.map((id, i) => {
    check(bucket.diagnostic(i, now));
    return { id, capacity: result(0), availableTokens: result(1), nanosToFullRefill: result(2) };
  });
  return { availableTokens, nanosToFullRefill, bandwidths };
}

export function consumptionProbe(consumed) {
  return { consumed, remainingTokens: result(0), nanosToWaitForRefill: result(1), nanosToWaitForReset: result(2) };
}

export function estimationProbe(canBeConsumed) {
  return { canBeConsumed, remainingTokens: result(0), nanosToWaitForRefill: result(1) };
}
