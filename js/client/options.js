// createClient's options and the per-request `edgebucket` options: defaults, and a clear
// `EdgeBucketError` (code INVALID_ARGUMENT) for anything else. Unknown names are errors too, so
// a typo never silently turns pacing off.

import { EdgeBucketError } from './engine.js';

/** Methods RFC 9110 §9.2.2 calls idempotent: safe to send twice. */
export const IDEMPOTENT_METHODS = Object.freeze(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

export const DEFAULT_RETRY = Object.freeze({
  limit: 2,
  methods: IDEMPOTENT_METHODS,
  statusCodes: Object.freeze([429, 503]),
  maxRetryAfter: Infinity,
  backoffLimit: 30_000,
});

const CLIENT_KEYS = new Set([
  'fetch', 'concurrency', 'maxQueue', 'timeout', 'retry', 'jitter', 'priority', 'cost', 'partition',
  'share', 'probe', 'hooks', 'clock', 'random',
]);
const RETRY_KEYS = new Set(Object.keys(DEFAULT_RETRY));
const HOOK_KEYS = new Set(['paced', 'retry', 'dropped']);
const REQUEST_KEYS = new Set(['priority', 'cost', 'timeout']);

function invalid(message) {
  return new EdgeBucketError('INVALID_ARGUMENT', message);
}

function shown(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint') return String(value); // NaN, Infinity, 1n
  if (typeof value === 'function') return 'a function';
  if (value instanceof Promise) return 'a Promise';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `value`, or `fallback` when it is undefined: `null` is a value like any other, and refused where it does not fit. */
function orDefault(value, fallback) {
  return value === undefined ? fallback : value;
}

/** `object`'s fields that are not undefined: a field set to undefined takes its default. */
function defined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

function plainObject(value, what) {
  // Collections (an array, a Map) hold their entries where options are not read; any other
  // object (a class instance, a module namespace, one made in another realm) is read by its keys.
  if (value === null || typeof value !== 'object' || typeof value[Symbol.iterator] === 'function') {
    throw invalid(`${what} must be an object, got ${shown(value)}`);
  }
  return value;
}

function knownKeys(object, known, what) {
  for (const key of Object.keys(object)) {
    if (!known.has(key)) throw invalid(`${what} has no option ${shown(key)} (known: ${[...known].join(', ')})`);
  }
}

function positiveInteger(value, what, { infinity = false, zero = false } = {}) {
  const ok = (infinity && value === Infinity) || (Number.isInteger(value) && (value > 0 || (zero && value === 0)));
  if (!ok) {
    const range = `${zero ? 'a non-negative' : 'a positive'} integer${infinity ? ' or Infinity' : ''}`;
    throw invalid(`${what} must be ${range}, got ${shown(value)}`);
  }
  return value;
}

function timeout(value, what) {
  if (value === undefined || value === false) return Infinity;
  if (!(typeof value === 'number' && value > 0)) {
    throw invalid(`${what} must be a positive number of milliseconds or false, got ${shown(value)}`);
  }
  return value;
}

function priority(value, what) {
  if (!Number.isFinite(value)) throw invalid(`${what} must be a finite number, got ${shown(value)}`);
  return value;
}

function fn(value, what) {
  if (typeof value !== 'function') throw invalid(`${what} must be a function, got ${shown(value)}`);
  return value;
}

function retryOptions(value) {
  if (value === undefined) return DEFAULT_RETRY;
  if (value === false) return { ...DEFAULT_RETRY, limit: 0 };
  if (typeof value === 'number') return { ...DEFAULT_RETRY, limit: positiveInteger(value, 'retry', { zero: true }) };
  knownKeys(plainObject(value, 'retry'), RETRY_KEYS, 'retry');
  const retry = { ...DEFAULT_RETRY, ...defined(value) };
  positiveInteger(retry.limit, 'retry.limit', { zero: true });
  if (!Array.isArray(retry.methods) || !retry.methods.every((m) => typeof m === 'string')) {
    throw invalid(`retry.methods must be an array of method names, got ${shown(retry.methods)}`);
  }
  retry.methods = retry.methods.map((m) => m.toUpperCase());
  if (!Array.isArray(retry.statusCodes) || !retry.statusCodes.every((s) => Number.isInteger(s) && s >= 100 && s <= 599)) {
    throw invalid(`retry.statusCodes must be an array of HTTP status codes, got ${shown(retry.statusCodes)}`);
  }
  for (const name of ['maxRetryAfter', 'backoffLimit']) {
    const ms = retry[name];
    if (!(typeof ms === 'number' && ms >= 0)) throw invalid(`retry.${name} must be a non-negative number of ms, got ${shown(ms)}`);
  }
  return retry;
}

function hookOptions(value) {
  const hooks = { paced: [], retry: [], dropped: [] };
  if (value === undefined) return hooks;
  knownKeys(plainObject(value, 'hooks'), HOOK_KEYS, 'hooks');
  for (const [name, given] of Object.entries(defined(value))) {
    const list = Array.isArray(given) ? given : [given];
    hooks[name] = list.map((hook, i) => fn(hook, `hooks.${name}[${i}]`));
  }
  return hooks;
}

/**
 * createClient's options, checked and completed with defaults.
 *
 * @param {object} [options]
 */
export function clientOptions(options = {}) {
  knownKeys(plainObject(options, 'createClient options'), CLIENT_KEYS, 'createClient');
  const fetch = options.fetch === undefined ? globalThis.fetch : fn(options.fetch, 'fetch');
  if (typeof fetch !== 'function') throw invalid('no fetch: pass options.fetch (this runtime has no global fetch)');
  const jitter = orDefault(options.jitter, 0.1);
  if (!(typeof jitter === 'number' && jitter >= 0 && jitter <= 1)) throw invalid(`jitter must be a number from 0 to 1, got ${shown(jitter)}`);
  // A client on a clock of its own (a test's, a simulation's) cannot share one model with others
  // on the real clock: the leading client's clock would decide for it.
  const share = orDefault(options.share, options.clock === undefined);
  if (!(typeof share === 'boolean' || (typeof share === 'string' && share.length > 0))) {
    throw invalid(`share must be true, false or a non-empty name, got ${shown(share)}`);
  }
  const cost = orDefault(options.cost, 1);
  if (typeof cost !== 'function') positiveInteger(cost, 'cost');
  const probe = orDefault(options.probe, true);
  if (typeof probe !== 'boolean') throw invalid(`probe must be true or false, got ${shown(probe)}`);
  return {
    // Called as a plain function: a browser's fetch called as a method of another object (these
    // options) throws "Illegal invocation", so even `{ fetch: globalThis.fetch }` must not be.
    fetch: options.fetch === undefined ? fetch.bind(globalThis) : (input, init) => fetch(input, init),
    concurrency: positiveInteger(orDefault(options.concurrency, 8), 'concurrency', { infinity: true }),
    maxQueue: positiveInteger(orDefault(options.maxQueue, 1000), 'maxQueue', { infinity: true }),
    timeout: timeout(options.timeout, 'timeout'),
    retry: retryOptions(options.retry),
    jitter,
    priority: priority(orDefault(options.priority, 0), 'priority'),
    cost,
    partition: options.partition === undefined ? undefined : fn(options.partition, 'partition'),
    share,
    probe,
    hooks: hookOptions(options.hooks),
    clock: options.clock === undefined ? undefined : fn(options.clock, 'clock'),
    random: options.random === undefined ? Math.random : fn(options.random, 'random'),
  };
}

/**
 * A request's own options (`init.edgebucket`), over the client's.
 *
 * @param {unknown} value
 * @param {ReturnType<typeof clientOptions>} client
 * @param {Request} request for a `cost` or `partition` function
 */
export function requestOptions(value, client, request) {
  const own = value === undefined ? {} : plainObject(value, 'init.edgebucket');
  knownKeys(own, REQUEST_KEYS, 'init.edgebucket');
  const cost = own.cost !== undefined ? own.cost : typeof client.cost === 'function' ? client.cost(request) : client.cost;
  return {
    priority: own.priority === undefined ? client.priority : priority(own.priority, 'init.edgebucket.priority'),
    cost: positiveInteger(cost, own.cost === undefined ? 'the cost option\'s result' : 'init.edgebucket.cost'),
    timeout: own.timeout === undefined ? client.timeout : timeout(own.timeout, 'init.edgebucket.timeout'),
    partition: client.partition === undefined ? '' : partitionName(client.partition(request)),
  };
}

/**
 * The `partition` option's result: a string, or null or undefined for the origin's own scope (as
 * `headers.get` gives for a request without the header). Any other value read as text would put
 * different partitions in one scope (every Promise of an async function is "[object Promise]").
 */
function partitionName(value) {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') throw invalid(`the partition option's result must be a string, got ${shown(value)}`);
  return value;
}
