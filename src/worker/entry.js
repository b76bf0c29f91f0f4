// The worker's entry module, copied next to worker-build's output (build/index.js) by
// scripts/worker-build.sh; wrangler.toml's `main`.
//
// Rust decides everything; this module does the IO between its decisions. An `Exchange`
// (src/worker/exchange.rs) says what it needs next, as an array led by a STEP:
//   [READ, limit]             the request body, at most `limit` bytes
//   [ASK, key, command, timeout]
//                             the answer of the key's Durable Object to `command` (JSON),
//                             within `timeout` ms when the policy sets one
//   [FORWARD, request]        the origin's answer to `request`
//   [RESPOND, status, head, body, drain]
//                             answer; `head` is the headers as `name\nvalue\nname\nvalue…`
//   [RELAY, response]         answer the origin's response (the bucket's headers added)
// Awaiting here instead of in Rust saves wasm-bindgen's future machinery on every await, about a
// third of the worker's CPU per decision (docs/worker.md, "Speed").
//
// worker-build exports the Durable Object as a plain class, and the runtime makes RPC calls only
// on classes that extend `DurableObject`. So the object is wrapped here too.
import { DurableObject } from 'cloudflare:workers';
import { BucketObject as WasmBucketObject, Exchange } from './index.js';

/** The kinds of step, as `Kind` in src/worker/exchange.rs numbers them. */
const STEP = Object.freeze({ READ: 0, ASK: 1, FORWARD: 2, RESPOND: 3, RELAY: 4 });

/** The Durable Object binding in wrangler.toml. */
const BINDING = 'BUCKETS';

/** Bytes of an unwanted body read and dropped before answering. workerd closes the connection
 * after an answer that left the body unread, and a socket closed with unread data is reset, which
 * can destroy the answer on its way to an HTTP/1.1 client. Larger bodies are cut off. */
const DRAIN_BYTES = 64 * 1024;

export default {
  async fetch(request, env) {
    // Not freed by hand: worker-build hands out a Proxy of the object, and `free()` through it
    // would leave the finalizer registered to free the same memory again. The runtime's
    // finalizer frees it.
    const exchange = new Exchange(request, env);
    let step = exchange.start();
    for (;;) {
      switch (step[0]) {
        case STEP.READ:
          step = await read(exchange, request, step[1]);
          break;
        case STEP.ASK:
          step = await ask(exchange, env, step[1], step[2], step[3]);
          break;
        case STEP.FORWARD:
          step = await forward(exchange, step[1]);
          break;
        case STEP.RELAY:
          return step[1];
        default: // STEP.RESPOND
          // Checked here too: most answers come after the body was read, and skipping the call
          // saves an async function's promise per decision.
          if (step[4] && request.body && !request.bodyUsed) await drain(request);
          return response(step[1], step[2], step[3]);
      }
    }
  },
};

/** A response built from the exchange's parts: one string crosses from wasm for all headers,
 * instead of two per header through `Headers.set`. A header the runtime refuses (never one the
 * worker builds) makes a bare 500, as any response the runtime cannot build. */
function response(status, head, body) {
  try {
    const headers = new Headers();
    const fields = head.split('\n');
    for (let i = 0; i + 1 < fields.length; i += 2) headers.append(fields[i], fields[i + 1]);
    return new Response(body, { status, headers });
  } catch (error) {
    return new Response(describe(error), { status: 500 });
  }
}

/** Reads the body for `exchange`, refusing it past `limit` bytes. */
async function read(exchange, request, limit) {
  let bytes;
  try {
    bytes = await bytesUpTo(request, limit);
  } catch (error) {
    return exchange.body(undefined, describe(error));
  }
  return exchange.body(bytes, undefined);
}

/** Asks the Durable Object of `key` to decide `command` over RPC, giving up after `timeout` ms
 * when there is one. */
async function ask(exchange, env, key, command, timeout) {
  let answer;
  const namespace = env[BINDING];
  if (!namespace) return exchange.unreachable(`no Durable Object binding named ${BINDING}`);
  try {
    const call = namespace.get(namespace.idFromName(key)).decide(command);
    answer = await (timeout === undefined ? call : within(call, timeout));
  } catch (error) {
    return exchange.unreachable(describe(error));
  }
  const status = Array.isArray(answer) ? answer[0] : undefined;
  const body = Array.isArray(answer) ? answer[1] : undefined;
  if (!Number.isInteger(status) || typeof body !== 'string') {
    return exchange.unreachable('the bucket answered neither a status nor a body');
  }
  return exchange.reply(status, body);
}

/** `call`, or a rejection once `ms` milliseconds pass first. The call is not withdrawn (RPC has no
 * way to): the object may still decide it, and its answer is dropped. */
function within(call, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the bucket did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

/** Sends an admitted gateway request to the origin. */
async function forward(exchange, upstream) {
  let response;
  try {
    response = await fetch(upstream);
  } catch (error) {
    return exchange.originFailed(describe(error));
  }
  return exchange.upstream(response);
}

/** The body, or undefined once it passes `limit` bytes: a body of unannounced length (chunked)
 * is refused without being held in memory whole. Past the limit, up to DRAIN_BYTES more are read
 * and dropped before the rest is cancelled. */
async function bytesUpTo(request, limit) {
  if (!request.body) return new Uint8Array(0);
  if (declaredLength(request) <= limit) return new Uint8Array(await request.arrayBuffer()); // framed by it
  const reader = request.body.getReader();
  const chunks = [];
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return read <= limit ? join(chunks, read) : undefined;
    read += value.byteLength;
    if (read <= limit) {
      chunks.push(value);
    } else if (read - limit > DRAIN_BYTES) {
      reader.cancel().catch(() => {}); // the rest is not wanted
      return undefined;
    } else {
      chunks.length = 0;
    }
  }
}

/** Reads and drops a body nobody needs (up to DRAIN_BYTES) before an answer; see DRAIN_BYTES. */
async function drain(request) {
  // A body announced larger would be cut off anyway: not worth reading any of it.
  if (declaredLength(request) > DRAIN_BYTES) return;
  if (!request.body || request.bodyUsed || request.body.locked) return;
  try {
    await bytesUpTo(request, 0);
  } catch {
    // The answer goes out regardless.
  }
}

/** The body's length as `Content-Length` declares it; NaN when it declares none, or when a
 * `Transfer-Encoding` is sent beside it: chunked framing then decides the length (RFC 9112 §6.3),
 * and a small declared length would let a body of any size be read whole. */
function declaredLength(request) {
  if (request.headers.has('Transfer-Encoding')) return NaN;
  const value = request.headers.get('Content-Length');
  return value !== null && /^\d+$/.test(value) ? Number(value) : NaN;
}

function join(chunks, length) {
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

function describe(error) {
  return error instanceof Error ? error.message : String(error);
}

export class BucketObject extends DurableObject {
  #bucket;

  constructor(ctx, env) {
    super(ctx, env);
    this.#bucket = new WasmBucketObject(ctx, env);
  }

  /** Refused with 404 `RPC_ONLY`: the worker calls `decide`. */
  fetch(request) {
    return this.#bucket.fetch(request);
  }

  /** Deletes the bucket once it has been idle for its time to refill plus the grace. */
  alarm(info) {
    return this.#bucket.alarm(info);
  }

  /** Decides `command` (JSON): `[status, body]`, or a promise of it while an alarm write or a
   * deletion settles (the caller's RPC promise resolves to the pair either way). */
  decide(command) {
    return this.#bucket.decide(command);
  }
}
