// The worker's entry module, copied next to worker-build's output (build/index.js) by
// scripts/worker-build.sh; wrangler.toml's `main`.
//
// worker-build exports the Durable Object as a plain class, and the runtime makes RPC calls only
// on classes that extend `DurableObject`. So the object is wrapped here, and the front worker
// calls `decide` over RPC instead of `fetch` (docs/worker.md, "Speed"). All logic stays in Rust.
import { DurableObject } from 'cloudflare:workers';
import worker, { BucketObject as WasmBucketObject } from './index.js';

export default worker;

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

  /** Decides `command` (JSON); resolves to `[status, body]`. */
  decide(command) {
    return this.#bucket.decide(command);
  }
}
