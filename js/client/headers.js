// Reading a response's rate-limit headers, in every dialect servers speak, into one normalized
// observation. Malformed fields are ignored (never thrown); absurd values are clamped to BOUNDS.
//
// Dialects, most modern first (the first one present wins; servers that send two describe the
// same limit twice):
// - draft-ietf-httpapi-ratelimit-headers-10: `RateLimit-Policy: "name";q=100;w=60;qu="requests";pk=:…:`
//   and `RateLimit: "name";r=50;t=30;pk=:…:` (RFC 9651 lists, items joined by policy name).
// - draft-07: `RateLimit: limit=100, remaining=50, reset=30` (a dictionary) + `RateLimit-Policy: 100;w=60`.
// - draft-06: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` + `RateLimit-Policy: 100;w=60`.
// - `X-RateLimit-Limit/-Remaining/-Reset` (also `X-Rate-Limit-*`), GitHub's `-Used` and
//   `-Resource`, Discord's `-Reset-After`.
// plus `Retry-After` and `Date` (for clock skew) whatever the dialect.

import { parseList, parseDictionary, Token } from 'structured-headers';
import { parseHttpDate, parseRfc3339 } from './dates.js';

const SECOND = 1000;

/**
 * Bounds applied to what servers send. A value beyond a bound is clamped to it, not rejected:
 * the server meant "a lot" or "long", and the client should still be usable.
 */
export const BOUNDS = Object.freeze({
  /** Largest quota or remaining count believed (units). */
  maxQuota: 1e9,
  /** Longest policy window believed (30 days). */
  maxWindow: 30 * 86_400 * SECOND,
  /** Longest wait a header can impose: `t`, `Retry-After`, `X-RateLimit-Reset` (1 day). */
  maxWait: 86_400 * SECOND,
  /** Longer fields are ignored unread. */
  maxFieldLength: 8192,
  /** Items past this many in one field are ignored. */
  maxItems: 32,
  /** Longer policy names are ignored. */
  maxNameLength: 128,
});

/** A reset below this is delta seconds; at or above it an epoch (1e9 s is 2001-09-09; as a delta, 31 years). */
const EPOCH_SECONDS_FROM = 1e9;
/** At or above this, epoch milliseconds (1e12 ms is 2001-09-09; in seconds, year 33658). */
const EPOCH_MILLIS_FROM = 1e12;

/**
 * One limit a response describes.
 *
 * @typedef {object} Limit
 * @property {string} policy the policy's name (`"default"` where a dialect names none)
 * @property {string} partitionKey the draft-10 `pk` as base64, `""` without one
 * @property {string} unit `"requests"`, `"content-bytes"`, `"concurrent-requests"` or another registered unit
 * @property {number} [quota] `q`: units allowed per window
 * @property {number} [window] `w`: the window, milliseconds
 * @property {number} [remaining] `r`: units left
 * @property {number} [reset] `t`: milliseconds until more quota is available
 */

/**
 * What a response's headers say about rate limits.
 *
 * @typedef {object} Observation
 * @property {string | null} dialect `"draft-10"`, `"draft-7"`, `"draft-6"`, `"x-ratelimit"`, or null for none
 * @property {Limit[]} limits
 * @property {number} [retryAfter] `Retry-After`, milliseconds from the response
 * @property {number} [date] the server's `Date`, epoch milliseconds
 * @property {number} [skew] the client's clock minus the server's, milliseconds (from `Date`)
 * @property {boolean} [cached] the response came from a cache (`Age` > 0): its quota fields were
 *   ignored, and `retryAfter` is what is left of the wait after its time in the cache
 * @property {boolean} [complete] `limits` are every policy that applies (draft-10 with a
 *   `RateLimit-Policy`): one learned before and missing now was lifted
 */

/**
 * Reads the rate-limit headers of a response. Never throws on header content.
 *
 * @param {Headers | Record<string, string | string[] | undefined> | Map<string, string | string[] | undefined> | {get(name: string): unknown} | null | undefined} headers
 * @param {{ now?: number }} [options] `now`: the client's clock when the response arrived (epoch ms)
 * @returns {Observation}
 */
export function readHeaders(headers, { now = Date.now() } = {}) {
  const get = getter(headers);
  const observation = { dialect: null, limits: [] };
  const date = parseHttpDate(singleton(get('date')), now);
  if (date !== undefined) {
    observation.date = date;
    observation.skew = now - date;
  }
  // Absolute times are read against the server's clock when it told us, so skew cancels out.
  const serverNow = date ?? now;
  const retryAfterCopies = copies(get('retry-after'));
  const retryAfter = strictest(retryAfterCopies, (copy) => readRetryAfter(copy, serverNow), Math.max);
  if (retryAfter !== undefined) observation.retryAfter = retryAfter;
  // A cached response's quota fields describe the past (draft-10 §7.3). Its Retry-After still
  // holds, counted from when the origin answered (its Date, or delay-seconds from then): less
  // the time the response spent in the cache, unless a date was read against our own clock.
  const age = readAge(singleton(get('age')));
  if (age > 0) {
    observation.cached = true;
    const dateAgainstOurClock = date === undefined && !retryAfterCopies.every(isDelaySeconds);
    if (retryAfter !== undefined && !dateAgainstOurClock) {
      observation.retryAfter = Math.max(retryAfter - age * SECOND, 0);
    }
    return observation;
  }
  for (const dialect of [draft10, draft7, draft6, xRateLimit]) {
    const limits = dialect(get, serverNow);
    if (limits && limits.length > 0) {
      observation.dialect = dialect.label;
      observation.limits = limits;
      // Only policies from RateLimit-Policy have a quota: one there means the list was sent.
      if (dialect === draft10 && limits.some((limit) => limit.quota !== undefined)) observation.complete = true;
      const [only] = limits;
      if (dialect !== xRateLimit && limits.length === 1 && only.remaining === undefined && only.reset === undefined) {
        addLegacyState(only, xRateLimit(get, serverNow));
      }
      break;
    }
  }
  return observation;
}

// ---- field access ----

function getter(headers) {
  if (headers == null || typeof headers !== 'object') return () => null;
  // A Map has a `get` too, but one that matches names exactly, unlike Headers: its names are
  // lower-cased like a record's.
  const isMap = headers instanceof Map;
  if (typeof headers.get === 'function' && !isMap) {
    return (name) => text(headers.get(name));
  }
  const byName = new Map();
  for (const [name, value] of isMap ? headers : Object.entries(headers)) byName.set(String(name).toLowerCase(), value);
  return (name) => text(byName.get(name));
}

/** A field's text; `null` when absent, and when longer than maxFieldLength: ignored unread. */
function text(value) {
  if (value == null) return null;
  const joined = Array.isArray(value) ? value.join(', ') : String(value);
  return joined.length > BOUNDS.maxFieldLength ? null : joined;
}

/**
 * A field that holds one value, sent on several lines (a gateway and its origin both limiting),
 * arrives joined with commas. `Date` and `Age` are read as that value when every copy is the
 * same, else as nothing.
 */
function singleton(value) {
  const all = copies(value);
  return all.length > 0 && all.every((copy) => copy === all[0]) ? all[0] : null;
}

/** Day names open an HTTP-date (IMF-fixdate `Sun, 06 Nov…`, RFC 850 `Sunday, 06-Nov-94…`), its only comma. */
const DAY_NAME = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*$/i;

/** The copies of a one-value field joined with commas; an HTTP-date keeps its own comma. */
function copies(value) {
  if (value == null) return [];
  const parts = value.split(',');
  const all = [];
  for (let i = 0; i < parts.length; i++) {
    // Rejoined as sent: a date with no space after its comma stays malformed.
    if (DAY_NAME.test(parts[i].trim()) && i + 1 < parts.length) all.push(`${parts[i]},${parts[++i]}`.trim());
    else all.push(parts[i].trim());
  }
  return all;
}

/**
 * Copies that differ are two limiters speaking (`Retry-After`, `X-RateLimit-*`, draft-06's
 * `RateLimit-Remaining` and `-Reset`): the strictest readable one is believed, as both hold.
 * `pick` chooses between two values (`Math.max` for a wait, `Math.min` for a quota or what remains).
 */
function strictest(all, read, pick) {
  let best;
  for (const copy of all) {
    const value = read(copy);
    if (value !== undefined) best = best === undefined ? value : pick(best, value);
  }
  return best;
}

function sfList(value) {
  if (value == null) return undefined;
  try {
    return parseList(value).slice(0, BOUNDS.maxItems);
  } catch {
    return undefined;
  }
}

function sfDictionary(value) {
  if (value == null) return undefined;
  try {
    return parseDictionary(value);
  } catch {
    return undefined;
  }
}

/** A one-integer field (draft-06); copies of it make a list, read as the strictest (see `strictest`). */
function sfInteger(value, pick) {
  return strictest(sfList(value) ?? [], ([member]) => nonNegativeInteger(member), pick);
}

// ---- values ----

function nonNegativeInteger(value) {
  return Number.isInteger(value) && value >= 0 ? value : undefined;
}

function clamp(value, max) {
  return value === undefined ? undefined : Math.min(Math.max(value, 0), max);
}

function seconds(value, max) {
  return value === undefined ? undefined : Math.min(value * SECOND, max);
}

/** The name of a draft-10 item: a String (as the draft says) or a Token (as its own appendix writes). */
function itemName(value) {
  const name = typeof value === 'string' ? value : value instanceof Token ? value.value : undefined;
  return name !== undefined && name.length <= BOUNDS.maxNameLength ? name : undefined;
}

function base64(buffer) {
  let binary = '';
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** `pk`: absent is `""`; present but not a Byte Sequence makes the item malformed (`undefined`). */
function partitionKey(parameters) {
  if (!parameters.has('pk')) return '';
  const value = parameters.get('pk');
  return value instanceof ArrayBuffer ? base64(value) : undefined;
}

/** `qu`: a String; `"request"` (the draft's registry table) is the same unit as `"requests"`. */
function quotaUnit(parameters) {
  if (!parameters.has('qu')) return 'requests';
  const value = parameters.get('qu');
  const unit = typeof value === 'string' ? value : value instanceof Token ? value.value : undefined;
  if (unit === undefined || unit.length > BOUNDS.maxNameLength) return undefined;
  return unit === 'request' ? 'requests' : unit;
}

// ---- draft-10 ----

function draft10(get) {
  const policies = [];
  for (const [value, parameters] of sfList(get('ratelimit-policy')) ?? []) {
    const policy = policyItem(value, parameters);
    if (policy && !policies.some((p) => sameLimit(p, policy))) policies.push(policy);
  }
  const limits = [...policies];
  for (const [value, parameters] of sfList(get('ratelimit')) ?? []) {
    const state = serviceLimitItem(value, parameters);
    if (!state) continue;
    const policy = limits.find((p) => sameLimit(p, state)) ?? limits.find((p) => joins(p, state));
    if (policy) {
      if (policy.remaining !== undefined || policy.reset !== undefined) {
        mergeStrictest(policy, stateOf(state)); // two limiters under one name: both hold
        continue;
      }
      if (!policy.partitionKey) policy.partitionKey = state.partitionKey;
      assignState(policy, state);
    } else {
      limits.push({ policy: state.policy, partitionKey: state.partitionKey, unit: 'requests', ...stateOf(state) });
    }
  }
  return limits;
}
draft10.label = 'draft-10';

function policyItem(value, parameters) {
  const name = itemName(value);
  const quota = nonNegativeInteger(parameters.get('q'));
  const pk = partitionKey(parameters);
  const unit = quotaUnit(parameters);
  if (name === undefined || quota === undefined || pk === undefined || unit === undefined) return undefined;
  const policy = { policy: name, partitionKey: pk, unit, quota: clamp(quota, BOUNDS.maxQuota) };
  const window = nonNegativeInteger(parameters.get('w'));
  if (window > 0) policy.window = seconds(window, BOUNDS.maxWindow);
  return policy;
}

function serviceLimitItem(value, parameters) {
  const name = itemName(value);
  const pk = partitionKey(parameters);
  if (name === undefined || pk === undefined) return undefined;
  const remaining = nonNegativeInteger(parameters.get('r'));
  const reset = nonNegativeInteger(parameters.get('t'));
  // r is required by the draft, yet its own appendix sends `t` alone: take what is there.
  if (remaining === undefined && reset === undefined) return undefined;
  return { policy: name, partitionKey: pk, remaining, reset };
}

function stateOf({ remaining, reset }) {
  const state = {};
  if (remaining !== undefined) state.remaining = clamp(remaining, BOUNDS.maxQuota);
  if (reset !== undefined) state.reset = seconds(reset, BOUNDS.maxWait);
  return state;
}

/** The least remaining and the latest reset of two reports of one limit. */
function mergeStrictest(limit, { remaining, reset }) {
  if (remaining !== undefined) limit.remaining = Math.min(limit.remaining ?? Infinity, remaining, limit.quota ?? Infinity);
  if (reset !== undefined) limit.reset = Math.max(limit.reset ?? 0, reset);
}

function assignState(limit, state) {
  Object.assign(limit, stateOf(state));
  if (limit.remaining !== undefined && limit.quota !== undefined) {
    limit.remaining = Math.min(limit.remaining, limit.quota);
  }
}

/**
 * A lone policy with no state of its own (a `RateLimit-Policy` without `RateLimit`: the caller
 * checks, so X-RateLimit is read only then) takes the
 * remaining and reset of `X-RateLimit-*` in the same response, when they describe one limit of
 * the same quota: a server moving to the draft may send its policy the new way and its state the
 * old way, and dropping that state would make the client believe the quota untouched.
 */
function addLegacyState(limit, legacy) {
  if (legacy?.length !== 1) return;
  const [state] = legacy;
  if (state.quota !== undefined && state.quota !== limit.quota) return;
  if (state.remaining !== undefined) limit.remaining = Math.min(state.remaining, limit.quota ?? Infinity);
  if (state.reset !== undefined) limit.reset = state.reset;
}

function sameLimit(a, b) {
  return a.policy === b.policy && a.partitionKey === b.partitionKey;
}

// A service limit belongs to the policy of the same name; partition keys must agree when both have one.
function joins(policy, state) {
  if (policy.policy !== state.policy) return false;
  return !policy.partitionKey || !state.partitionKey || policy.partitionKey === state.partitionKey;
}

// ---- draft-07 and draft-06: one "expiring limit" plus a list of `quota;w=window` policies ----

function draft7(get, serverNow) {
  const dictionary = sfDictionary(get('ratelimit'));
  if (!dictionary) return undefined;
  const member = (key) => {
    const entry = dictionary.get(key);
    return entry && !Array.isArray(entry[0]) ? nonNegativeInteger(entry[0]) : undefined;
  };
  return legacyLimits(member('limit'), member('remaining'), resetFrom(member('reset'), serverNow), legacyPolicies(get));
}
draft7.label = 'draft-7';

function draft6(get, serverNow) {
  // Early drafts allowed `RateLimit-Limit: 100, 100;w=60, 1000;w=3600`: the first member is the
  // expiring limit, the others are policies.
  const limitList = sfList(get('ratelimit-limit')) ?? [];
  const policies = legacyPolicies(get);
  for (const [value, parameters] of limitList.slice(1)) {
    const policy = legacyPolicy(value, parameters);
    if (policy) policies.push(policy);
  }
  let limit = limitList.length > 0 ? nonNegativeInteger(limitList[0][0]) : undefined;
  const window = limitList.length > 0 ? nonNegativeInteger(limitList[0][1].get('w')) : undefined;
  if (limit !== undefined && window > 0 && !policies.some((p) => p.quota === limit)) {
    policies.push(legacyPolicy(limit, new Map([['w', window]])));
  }
  const reset = resetFrom(sfInteger(get('ratelimit-reset'), Math.max), serverNow);
  return legacyLimits(limit, sfInteger(get('ratelimit-remaining'), Math.min), reset, policies);
}
draft6.label = 'draft-6';

function legacyPolicies(get) {
  const policies = [];
  for (const [value, parameters] of sfList(get('ratelimit-policy')) ?? []) {
    const policy = legacyPolicy(value, parameters);
    if (policy) policies.push(policy);
  }
  return policies;
}

// Legacy policies have no names: a policy is named by its window, which stays put when a server
// lowers the quota dynamically, so the same local bucket is reconfigured rather than a new one made.
function legacyPolicy(value, parameters) {
  const quota = nonNegativeInteger(value);
  const window = nonNegativeInteger(parameters.get('w'));
  if (quota === undefined || !(window > 0)) return undefined;
  return {
    policy: `w=${window}`,
    partitionKey: '',
    unit: 'requests',
    quota: clamp(quota, BOUNDS.maxQuota),
    window: seconds(window, BOUNDS.maxWindow),
  };
}

/** `reset`: milliseconds from the response (see `resetFrom`). */
function legacyLimits(limit, remaining, reset, policies) {
  // Two policies of one window are one name: the first is read, as in draft-10.
  const unique = policies.filter((p, i) => policies.findIndex((q) => q.policy === p.policy) === i);
  if (limit === undefined && remaining === undefined && reset === undefined) {
    return unique.length > 0 ? unique : undefined;
  }
  const quota = limit === undefined ? undefined : clamp(limit, BOUNDS.maxQuota);
  // The expiring limit is the policy with that quota (draft-07 §3.2); without one, its window is unknown.
  let expiring = quota === undefined ? unique[0] : unique.find((p) => p.quota === quota);
  if (!expiring) {
    expiring = { policy: 'default', partitionKey: '', unit: 'requests' };
    if (quota !== undefined) expiring.quota = quota;
    unique.push(expiring);
  }
  assignState(expiring, { remaining });
  if (reset !== undefined) expiring.reset = Math.ceil(reset);
  return unique;
}

// ---- X-RateLimit-* ----

const X_PREFIXES = ['x-ratelimit-', 'x-rate-limit-'];

function xRateLimit(get, serverNow) {
  for (const prefix of X_PREFIXES) {
    const field = (name) => copies(get(prefix + name));
    const number = (name, pick) => strictest(field(name), decimalNumber, pick);
    const quota = number('limit', Math.min);
    let remaining = number('remaining', Math.min);
    const used = number('used', Math.max);
    // Two huge values (both Infinity) leave nothing to compute: remaining stays unknown.
    const left = quota - used;
    if (remaining === undefined && !Number.isNaN(left)) remaining = Math.max(left, 0);
    let reset = strictest(field('reset'), (copy) => readReset(copy, serverNow), Math.max);
    const resetAfter = number('reset-after', Math.max);
    if (resetAfter !== undefined) reset = Math.min(resetAfter * SECOND, BOUNDS.maxWait);
    if (quota === undefined && remaining === undefined && reset === undefined) continue;
    const resource = singleton(get(prefix + 'resource'));
    const limit = {
      policy: resource && resource.length <= BOUNDS.maxNameLength ? resource : 'default',
      partitionKey: '',
      unit: 'requests',
    };
    if (quota !== undefined) limit.quota = clamp(Math.floor(quota), BOUNDS.maxQuota);
    if (remaining !== undefined) limit.remaining = clamp(Math.floor(remaining), limit.quota ?? BOUNDS.maxQuota);
    if (reset !== undefined) limit.reset = Math.ceil(reset);
    return [limit];
  }
  return undefined;
}
xRateLimit.label = 'x-ratelimit';

/**
 * A non-negative decimal number as these legacy fields write them (`5000`, `1470173023.123`).
 * Any length (within maxFieldLength, see `text`): a huge value is clamped by its caller.
 */
function decimalNumber(value) {
  if (value == null) return undefined;
  const trimmed = value.trim();
  return /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : undefined;
}

/**
 * `X-RateLimit-Reset`: delta seconds, epoch seconds or epoch milliseconds told apart by size
 * (see EPOCH_SECONDS_FROM), or an HTTP-date / RFC 3339 time. Returns ms from the response.
 */
function readReset(value, serverNow) {
  if (value == null) return undefined;
  const number = decimalNumber(value);
  if (number !== undefined) return resetFrom(number, serverNow);
  const at = parseHttpDate(value, serverNow) ?? parseRfc3339(value);
  return at === undefined ? undefined : clamp(at - serverNow, BOUNDS.maxWait);
}

/**
 * A reset number (delta seconds, epoch seconds or epoch milliseconds, by size) as milliseconds
 * from the response. Draft-06/07's `RateLimit-Reset` is delta seconds, but servers (GitLab,
 * Twitch) send epoch seconds there as in `X-RateLimit-Reset`; read as a delta it would be
 * decades, clamped to a day's stall.
 */
function resetFrom(number, serverNow) {
  if (number === undefined) return undefined;
  let delta;
  if (number >= EPOCH_MILLIS_FROM) delta = number - serverNow;
  else if (number >= EPOCH_SECONDS_FROM) delta = number * SECOND - serverNow;
  else delta = number * SECOND;
  return clamp(delta, BOUNDS.maxWait);
}

// ---- Retry-After ----

/** `Age`: delta-seconds, digits only (RFC 9111 §5.1); anything else is no age. */
function readAge(value) {
  return value != null && /^\d+$/.test(value.trim()) ? Number(value) : 0;
}

function isDelaySeconds(value) {
  return value != null && /^\d+(\.\d+)?$/.test(value.trim());
}

/**
 * `Retry-After`: delay-seconds, or an HTTP-date in any of its three forms, read against the
 * server's clock (`serverNow`). Decimal seconds are accepted, though the RFC has only integers.
 */
function readRetryAfter(value, serverNow) {
  if (value == null) return undefined;
  const trimmed = value.trim();
  if (isDelaySeconds(trimmed)) return Math.min(Math.ceil(Number(trimmed) * SECOND), BOUNDS.maxWait);
  const at = parseHttpDate(trimmed, serverNow);
  return at === undefined ? undefined : clamp(at - serverNow, BOUNDS.maxWait);
}
