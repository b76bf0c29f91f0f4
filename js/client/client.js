// createClient: a fetch-compatible function that paces requests ahead of time from the
// server's own rate-limit headers, with a priority queue, bounded retries, hooks and stats.

import { Bucket, BucketConfiguration, TokensInheritanceStrategy, EdgeBucketError } from './engine.js';
import { readHeaders } from './headers.js';
import { Pacer, BLOCKING_STATUSES } from './pacer.js';
import { RequestQueue } from './queue.js';
import { canShare, sharedPacer } from './tabs.js';
import { after } from '../timers.js';
import { clientOptions, requestOptions } from './options.js';
import { report } from './report.js';

const engine = { Bucket, BucketConfiguration, TokensInheritanceStrategy };

/** A retry that its timeout ended before it was made: the response that asked for it is the answer. */
const LATE = Symbol('retry too late');

// What `new Request()` takes; any other `init` field is passed through to the wrapped fetch
// (undici's `dispatcher`, …), except ours.
const REQUEST_INIT = new Set([
  'method', 'headers', 'body', 'referrer', 'referrerPolicy', 'mode', 'credentials', 'cache', 'redirect',
  'integrity', 'keepalive', 'signal', 'duplex', 'priority', 'window', 'edgebucket',
]);

/**
 * A fetch-compatible function that paces its requests. See client.d.ts for the options.
 *
 * @param {import('./index.d.ts').ClientOptions} [options]
 */
export function createClient(options) {
  const config = clientOptions(options);
  const clock = config.clock ?? monotonicClock();
  const makePacer = () => new Pacer({ engine, now: clock, random: config.random, jitter: config.jitter, probe: config.probe });
  const pacer = config.share !== false && canShare() ? sharedPacer(config.share === true ? 'default' : config.share, makePacer) : makePacer();
  const queue = new RequestQueue({
    concurrency: config.concurrency,
    maxWaiting: config.maxQueue,
    now: clock,
    acquire: (entry) => pacer.acquire(entry.demand),
    refund: (ticket) => pacer.refund(ticket),
  });
  const stopListening = pacer.onChange(() => queue.pump());
  const stats = { requests: 0, sent: 0, responses: 0, rateLimited: 0, retries: 0, paced: 0, dropped: 0 };
  let seq = 0;
  let closed = false;

  const emit = (name, event) => {
    for (const hook of config.hooks[name]) {
      try {
        hook(event);
      } catch (error) {
        // The hook's bug: surfaced, without failing the request it observed.
        report(error, 'a hook threw');
      }
    }
  };

  const drop = (job, reason, error) => {
    stats.dropped += 1;
    emit('dropped', { request: job.request, reason, error });
    return error;
  };

  const queueFull = () => new EdgeBucketError('QUEUE_FULL', `the queue already holds ${config.maxQueue} waiting requests`);

  /**
   * How a wait ends early: the request is dropped, except a retry that its timeout ends, which
   * is not made: the response that asked for it is the answer (`LATE`).
   */
  const ended = (job, reason, error) => (reason === 'timeout' && job.previous !== null ? LATE : drop(job, reason, error));

  /** Waits for the queue to start `job`; resolves with the pacer's ticket. */
  const turn = (job, signal) =>
    new Promise((resolve, reject) => {
      // A retry comes back here after a pause in which the client may have closed or the
      // request been aborted (an abort listener added now would never fire).
      if (closed) {
        reject(new EdgeBucketError('CLOSED', 'the client was closed'));
        return;
      }
      if (signal.aborted) {
        reject(ended(job, abortReason(signal), signal.reason));
        return;
      }
      // Beyond maxQueue plus the free slots this one would wait for certain: refused now, unless
      // it outranks a waiting request, which is shed instead. Short of that, the queue's pass
      // tells (a free slot may take it, or pacing hold it) and sheds what would go last beyond
      // maxQueue (`full` below).
      if (job.attempt === 0 && queue.size >= config.maxQueue + Math.max(0, config.concurrency - queue.running)) {
        const last = queue.lastFirstAttempt();
        if (!(last && job.priority > last.priority)) {
          reject(drop(job, 'queue-full', queueFull()));
          return;
        }
      }
      let reason = null;
      const onAbort = () => {
        if (queue.remove(entry)) fail(ended(job, abortReason(signal), signal.reason));
      };
      const fail = (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      };
      const entry = {
        priority: job.priority,
        seq: job.seq,
        scope: job.demand.scope,
        demand: job.demand,
        notBefore: job.notBefore,
        deadline: job.deadline,
        start(ticket) {
          signal.removeEventListener('abort', onAbort);
          resolve(ticket);
          return new Promise((done) => {
            job.done = done;
          });
        },
        // Told at each new reason to wait (probe, then policy, …), counted once per attempt.
        waiting(grant) {
          if (grant.reason === reason) return;
          if (reason === null) stats.paced += 1;
          reason = grant.reason;
          emit('paced', { request: job.request, wait: grant.wait, reason: grant.reason });
        },
        timedOut: () => fail(ended(job, 'timeout', timeoutError(job))),
        fail,
        retry: job.attempt > 0,
        full: () => fail(drop(job, 'queue-full', queueFull())),
      };
      job.entry = entry;
      signal.addEventListener('abort', onAbort, { once: true });
      queue.add(entry);
    });

  /**
   * Sends one attempt; the response and what its headers said. The fetch is cut by the request's
   * signal and, while this attempt is the request's latest, by its timeout: a response kept as
   * the answer should its retry come too late must stay readable past the timeout.
   */
  const attempt = async (job, ticket, signal) => {
    let response;
    if (signal.aborted) {
      // Aborted or timed out since its turn came: never sent, so its grant comes back.
      pacer.refund(ticket);
      job.done();
      throw drop(job, abortReason(signal), signal.reason);
    }
    try {
      stats.sent += 1;
      const source = job.retryable ? job.request.clone() : job.request;
      const cut = job.cut === null ? job.request.signal : anySignal([job.request.signal, job.cut.signal]);
      const request = new Request(source, { signal: cut });
      // Held while the fetch runs (used after the await), then as long as its response: Node's
      // Request follows its signal only weakly (nodejs/undici#4068), so once a garbage
      // collection took the requests and the signal made for them, neither the timeout nor the
      // caller's abort reached the fetch in flight, nor the caller's abort a body still arriving.
      const carrier = { source: job.request, request, cut };
      response = await config.fetch(request, job.extra);
      if (response !== null && typeof response === 'object') carriers.set(response, carrier);
    } catch (error) {
      pacer.release(ticket);
      job.done();
      if (signal.aborted) throw drop(job, abortReason(signal), signal.reason);
      throw error;
    }
    let observation;
    try {
      // Read like a Response, not checked with instanceof: a fetch from another realm or library
      // (node-fetch, undici) returns a Response of its own class.
      if (typeof response?.status !== 'number' || typeof response.headers !== 'object' || response.headers === null) {
        throw new EdgeBucketError('INVALID_RESPONSE', 'options.fetch must resolve to a Response');
      }
      observation = readHeaders(response.headers);
    } catch (error) {
      pacer.release(ticket); // sent, so spent, though it taught nothing
      job.done();
      throw error;
    }
    try {
      pacer.observe(ticket, response.status, observation);
    } finally {
      job.done(); // the concurrency slot is freed whatever happens
    }
    stats.responses += 1;
    if (response.status === 429) stats.rateLimited += 1;
    return { response, observation };
  };

  /** How long before retrying, or null to hand the response back as it is (the queue may still find the retry too late). */
  const retryDelay = (job, response, observation) => {
    const { retry } = config;
    if (!job.retryable || job.attempt >= retry.limit || !retry.statusCodes.includes(response.status)) return null;
    // A Retry-After of 0 (or a past date) names no wait: as if there were none.
    const retryAfter = observation.retryAfter > 0 ? observation.retryAfter : undefined;
    if (retryAfter !== undefined && retryAfter > retry.maxRetryAfter) return null;
    // A 429 without Retry-After leaves the wait to the pacer (its r/t, or the 429 learner).
    const delay = retryAfter ?? (response.status === 429 ? 0 : Math.min(retry.backoffLimit, 300 * 2 ** job.attempt));
    return clock() + delay > job.deadline ? null : delay;
  };

  const run = async (job) => {
    const timer = job.deadline < Infinity ? deadlineSignal(job, job.deadline - clock()) : null;
    const signal = timer ? anySignal([job.request.signal, timer.signal]) : job.request.signal;
    timer?.signal.addEventListener('abort', () => job.cut?.abort(timer.signal.reason), { once: true });
    try {
      if (signal.aborted) throw drop(job, abortReason(signal), signal.reason);
      for (;;) {
        let ticket;
        try {
          ticket = await turn(job, signal);
        } catch (error) {
          if (error === LATE) return job.previous;
          discard(job.previous);
          throw error;
        }
        // From here the timeout cuts this attempt's fetch.
        job.cut = timer ? new AbortController() : null;
        if (timer?.signal.aborted) job.cut.abort(timer.signal.reason);
        if (job.attempt > 0) stats.retries += 1; // made, not only announced
        discard(job.previous);
        job.previous = null;
        const { response, observation } = await attempt(job, ticket, signal);
        const delay = retryDelay(job, response, observation);
        if (delay === null) return response;
        emit('retry', { request: job.request, response, attempt: job.attempt + 1, delay });
        // With a timeout, kept and freed from it until the retry is under way: if the timeout
        // ends the wait first, the retry is not made and this response is the answer. Without
        // one it can never be the answer: its body is let go now, not held through the wait.
        if (timer) [job.previous, job.cut] = [response, null];
        else discard(response);
        job.attempt += 1;
        // A Retry-After on a 429 or 503 already blocks the scope in the pacer (with jitter);
        // other delays are ours.
        const paced = observation.retryAfter > 0 && BLOCKING_STATUSES.has(response.status);
        job.notBefore = !paced && delay > 0 ? clock() + delay * (1 + config.jitter * config.random()) : 0;
      }
    } finally {
      timer?.clear();
    }
  };

  /**
   * @param {RequestInfo | URL} input
   * @param {RequestInit & { edgebucket?: { priority?: number, cost?: number, timeout?: number | false } }} [init]
   * @returns {Promise<Response>}
   */
  async function client(input, init) {
    if (closed) throw new EdgeBucketError('CLOSED', 'this client was closed');
    const request = new Request(input, init);
    const own = requestOptions(init?.edgebucket, config, request);
    const origin = new URL(request.url).origin;
    const scope = own.partition ? `${origin} ${own.partition}` : origin;
    stats.requests += 1;
    return run({
      request,
      extra: passthrough(init),
      // Custom methods keep their case in a Request ('purge'); the configured ones are upper case.
      retryable: config.retry.limit > 0 && config.retry.methods.includes(request.method.toUpperCase()),
      priority: own.priority,
      seq: seq++,
      demand: { scope, origin, cost: own.cost, bytes: contentBytes(request, init) },
      notBefore: 0,
      deadline: own.timeout === Infinity ? Infinity : clock() + own.timeout,
      timeout: own.timeout,
      attempt: 0,
      previous: null, // the response whose retry is waiting for its turn
      cut: null, // aborts the latest attempt's fetch at the timeout
      done: () => {},
    });
  }

  /** Counters since creation, and what is queued and running now. */
  client.stats = () => ({ ...stats, queued: queue.size, inFlight: queue.running });

  /** What the pacer has learned (null in a tab that does not lead). */
  client.model = () => pacer.snapshot();

  /** Rejects every queued request with CLOSED and lets another tab lead. */
  client.close = () => {
    if (closed) return;
    closed = true;
    stopListening();
    for (const entry of queue.close()) entry.fail(new EdgeBucketError('CLOSED', 'the client was closed'));
    pacer.close?.();
  };

  return client;
}

/**
 * Frees a response nobody will read. Not awaited: a body slow to cancel must not hold a retry
 * past its timeout.
 */
function discard(response) {
  try {
    const body = response?.body;
    if (typeof body?.cancel === 'function') Promise.resolve(body.cancel()).catch(() => {});
    else if (typeof body?.destroy === 'function') body.destroy(); // a Node stream (node-fetch)
  } catch {
    // A body of another library that cannot be let go: the garbage collector will.
  }
}

function monotonicClock() {
  const performance = globalThis.performance;
  if (typeof performance?.now !== 'function') return Date.now;
  const origin = performance.timeOrigin ?? Date.now() - performance.now();
  return () => origin + performance.now();
}

function timeoutError(job) {
  return new EdgeBucketError('TIMEOUT', `the request did not complete within ${job.timeout} ms`);
}

function deadlineSignal(job, ms) {
  const controller = new AbortController();
  const clear = after(ms, () => controller.abort(timeoutError(job)));
  return { signal: controller.signal, clear };
}

function abortReason(signal) {
  try {
    return signal.reason instanceof EdgeBucketError && signal.reason.code === 'TIMEOUT' ? 'timeout' : 'aborted';
  } catch {
    // A reason whose prototype cannot be read (a revoked Proxy) is the caller's own, not our
    // TIMEOUT; thrown here, it would leave the request out of the queue and never settled.
    return 'aborted';
  }
}

/** What carries the caller's signal to each response's body, kept as long as the response (see `attempt`). */
const carriers = new WeakMap();

function anySignal(signals) {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

function passthrough(init) {
  const extra = {};
  if (init) for (const key of Object.keys(init)) if (!REQUEST_INIT.has(key)) extra[key] = init[key];
  return extra;
}

/** Request content bytes, for `qu="content-bytes"` policies: the header, else the body as given. */
function contentBytes(request, init) {
  // Browsers drop `Content-Length` from a Request (a forbidden request header), so the header as
  // given in `init` counts too. Only digits count (RFC 9110 §8.6): a malformed header is ignored.
  const header = request.headers.get('content-length') ?? (init?.body == null ? null : givenHeader(init, 'content-length'));
  const declared = header !== null && /^\d+$/.test(header) ? Number(header) : 0;
  if (Number.isSafeInteger(declared) && declared > 0) return declared;
  const body = init?.body;
  if (typeof body === 'string') return new TextEncoder().encode(body).length;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return body.byteLength;
  if (typeof Blob === 'function' && body instanceof Blob) return body.size;
  if (body instanceof URLSearchParams) return body.toString().length;
  return 0;
}

/** A header of `init.headers` as given (a standalone Headers keeps what a Request drops). */
function givenHeader(init, name) {
  if (init?.headers === undefined || init.headers === null) return null;
  try {
    return new Headers(init.headers).get(name);
  } catch {
    return null; // the Request accepted these headers; a failure here only loses the hint
  }
}
