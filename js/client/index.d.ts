// Types of `edgebucket/client`. See docs/client.md.

/** The package's error: `code` is stable (`INVALID_ARGUMENT`, `QUEUE_FULL`, `TIMEOUT`, `CLOSED`, `INVALID_RESPONSE`, …). */
export declare class EdgeBucketError extends Error {
  constructor(code: string, message: string);
  readonly code: string;
}

/** One limit a response describes (see {@link readHeaders}). */
export interface Limit {
  /** The policy's name (`"default"` where a dialect names none; `"w=60"` for an unnamed draft-6/7 policy). */
  policy: string;
  /** The draft-10 `pk` as base64, `""` without one. */
  partitionKey: string;
  /** `"requests"`, `"content-bytes"`, `"concurrent-requests"`, or another registered unit. */
  unit: string;
  /** `q`: units per window. */
  quota?: number;
  /** `w`: the window, milliseconds. */
  window?: number;
  /** `r`: units left. */
  remaining?: number;
  /** `t`: milliseconds until more quota is available. */
  reset?: number;
}

/** What a response's headers say about rate limits. */
export interface Observation {
  dialect: 'draft-10' | 'draft-7' | 'draft-6' | 'x-ratelimit' | null;
  limits: Limit[];
  /** `Retry-After`, milliseconds from the response. */
  retryAfter?: number;
  /** The server's `Date`, epoch milliseconds. */
  date?: number;
  /** The client's clock minus the server's, milliseconds. */
  skew?: number;
  /** The response came from a cache (`Age` > 0): its rate-limit fields were ignored. */
  cached?: boolean;
  /**
   * `limits` are every policy that applies (draft-10 with a `RateLimit-Policy`): a policy seen
   * before and missing here has been lifted.
   */
  complete?: boolean;
}

/**
 * Bounds applied to header values: quotas, windows and waits beyond them are clamped; longer
 * fields are ignored, and items past `maxItems` and names longer than `maxNameLength` dropped.
 */
export declare const BOUNDS: Readonly<{
  maxQuota: number;
  maxWindow: number;
  maxWait: number;
  maxFieldLength: number;
  maxItems: number;
  maxNameLength: number;
}>;

/**
 * Reads a response's rate-limit headers in every dialect (draft-10, draft-7, draft-6,
 * `X-RateLimit-*`, `Retry-After`, `Date`). Malformed fields are ignored; it never throws on
 * header content. Names are matched case-insensitively in a record or a `Map`; an object with
 * its own `get` (other than a `Map`) is asked for lower-case names, as `Headers` is.
 */
export declare function readHeaders(
  headers:
    | Headers
    | Record<string, string | string[] | undefined>
    | Map<string, string | string[] | undefined>
    | { get(name: string): unknown }
    | null
    | undefined,
  options?: { now?: number },
): Observation;

export interface PacedEvent {
  request: Request;
  /** Milliseconds the request was told to wait (Infinity: until a response changes things). */
  wait: number;
  /** `"policy"`, `"reset"`, `"retry-after"`, `"learned"`, `"probe"`, `"concurrency"`, `"leader"`, `"closed"` (the tab's coordinator was closed) or `"retry"` (a retry's own backoff). */
  reason: string;
}

export interface RetryEvent {
  request: Request;
  response: Response;
  /** 1 for the first retry. */
  attempt: number;
  /** Milliseconds before the retry may go (the pacer may add to it). */
  delay: number;
}

export interface DroppedEvent {
  request: Request;
  /**
   * `"queue-full"` (`maxQueue` was reached), `"timeout"` (the client's own `timeout` option, or a
   * request's `edgebucket.timeout`, ran out) or `"aborted"` (the caller's `signal` fired: an
   * `AbortSignal.timeout()` of the caller's is `"aborted"` too; a reason that is itself an
   * `EdgeBucketError` with code `TIMEOUT` reads as the client's own, `"timeout"`).
   */
  reason: 'queue-full' | 'timeout' | 'aborted';
  /** What the request rejects with: an `EdgeBucketError` (`QUEUE_FULL`, `TIMEOUT`), or the caller's `signal.reason`. */
  error: unknown;
}

export interface RetryOptions {
  /** Retries after the first attempt. Default 2. */
  limit?: number;
  /** Methods retried, in any case. Default the idempotent ones: GET, HEAD, OPTIONS, PUT, DELETE, TRACE. */
  methods?: string[];
  /** Statuses retried. Default [429, 503]. */
  statusCodes?: number[];
  /** A Retry-After longer than this (ms) returns the response instead. Default Infinity. */
  maxRetryAfter?: number;
  /** Longest backoff (ms) for a 503 without Retry-After. Default 30 000. */
  backoffLimit?: number;
}

export interface ClientOptions {
  /**
   * The fetch to wrap, called as a plain function (`this` undefined) with a `Request` of the
   * platform (its signal also ends at the client's timeout) and the `init` fields a `Request`
   * does not hold (undici's `dispatcher`, …). Default `globalThis.fetch`.
   *
   * A fetch that takes no platform `Request` (node-fetch, the npm `undici` package's own fetch)
   * is wrapped through its URL and fields:
   * @example
   * createClient({
   *   fetch: async (request, extra) => nodeFetch(request.url, {
   *     method: request.method, headers: request.headers, redirect: request.redirect, signal: request.signal,
   *     body: request.body ? new Uint8Array(await request.arrayBuffer()) : undefined, ...extra,
   *   }),
   * });
   */
  fetch?: (request: Request, extra?: object) => Promise<Response>;
  /** Most requests in flight at once. Default 8. */
  concurrency?: number;
  /**
   * Most requests waiting (a positive integer or Infinity), not counting those a free concurrency
   * slot is about to take. Past it the waiting first attempt that would go last (lowest priority,
   * then newest) fails with `QUEUE_FULL`: a new request is refused unless it outranks one waiting.
   * Default 1000.
   */
  maxQueue?: number;
  /**
   * Milliseconds for a request, queue and retries included, before it fails with `TIMEOUT`
   * (at once when the known wait is longer). A retry that could not be made in time is not made:
   * the response that asked for it is returned. Default none.
   */
  timeout?: number | false;
  /** 429/503 retries: a limit, an object, or false. */
  retry?: number | false | RetryOptions;
  /** Waits are stretched by a random fraction up to this, against herds. Default 0.1. */
  jitter?: number;
  /** Default priority: higher goes first. Default 0. */
  priority?: number;
  /** Units a request consumes of a `requests` policy, or a function of the request. Default 1. */
  cost?: number | ((request: Request) => number);
  /**
   * Splits an origin's requests into scopes that learn their partition keys apart (per user, per API key…); `''`, `null`
   * and `undefined` are the origin's own scope, as without `partition`. Any other result that is not a string (a
   * Promise, an object, a number) fails the request with `INVALID_ARGUMENT`.
   *
   * @example
   * createClient({ partition: (request) => request.headers.get('X-User') }); // no X-User: the origin's own scope
   */
  partition?: (request: Request) => string | null | undefined;
  /**
   * Share one budget with other clients, tabs and workers of this origin (Web Locks + BroadcastChannel); a name separates
   * budgets. The clients sharing one use the leading client's model (its `clock`, `random`, `jitter`, `probe`); one whose
   * questions go unanswered for 3 s paces with its own until a leader speaks again. Default true, or false when `clock` is given.
   * Each sharing client holds a channel until `close()`: make one per origin and keep it, or close it when done.
   */
  share?: boolean | string;
  /** Send one request to a server first and learn its policy before sending more. Default true. */
  probe?: boolean;
  hooks?: {
    paced?: ((event: PacedEvent) => void) | Array<(event: PacedEvent) => void>;
    retry?: ((event: RetryEvent) => void) | Array<(event: RetryEvent) => void>;
    dropped?: ((event: DroppedEvent) => void) | Array<(event: DroppedEvent) => void>;
  };
  /** The clock, milliseconds (monotonic by default). For simulations. */
  clock?: () => number;
  /** Uniform random numbers in [0, 1), for jitter. */
  random?: () => number;
}

/** Per-request options, as `init.edgebucket`. */
export interface RequestPacing {
  priority?: number;
  cost?: number;
  timeout?: number | false;
}

export interface ClientStats {
  /** Calls made. */
  requests: number;
  /** Attempts sent (retries included). */
  sent: number;
  responses: number;
  /** Responses with status 429. */
  rateLimited: number;
  /** Retries made (a retry the timeout cut before it was sent is not one). */
  retries: number;
  /** Attempts that had to wait. */
  paced: number;
  /** Requests that failed without a response: queue full, timeout, abort. */
  dropped: number;
  queued: number;
  inFlight: number;
}

export interface LimitSnapshot {
  origin: string;
  policy: string;
  partitionKey: string;
  /** The scope it was learned in, when the server sent no partition key (`pk`). */
  scope?: string;
  unit: string;
  quota?: number;
  window?: number;
  available?: number;
  inFlight: number;
}

export interface PacingClient {
  (input: RequestInfo | URL, init?: RequestInit & { edgebucket?: RequestPacing }): Promise<Response>;
  stats(): ClientStats;
  /** What the client has learned (null in a tab that follows another; a follower pacing alone, its leader silent, shows its own). */
  model(): {
    limits: LimitSnapshot[];
    /** `learnedRate` (requests/s) and `learnedLevel` (whole tokens) once a header-less 429 taught a rate. */
    scopes: Array<{ scope: string; blockedFor: number; learnedRate?: number; learnedLevel?: number }>;
  } | null;
  /** Fails every queued request with `CLOSED` and lets another tab lead. */
  close(): void;
}

/** A fetch-compatible function that paces requests from the server's own rate-limit headers. */
export declare function createClient(options?: ClientOptions): PacingClient;
