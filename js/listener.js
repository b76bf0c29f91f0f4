// Bucket4j's BucketListener: what a bucket reports as it is used.

/**
 * A listener with counters (Bucket4j's SimpleBucketListener).
 *
 * @example
 * const listener = new SimpleListener();
 * const observed = bucket.toListenable(listener);
 * observed.tryConsume(1);
 * listener.consumed; // 1
 */
export class SimpleListener {
  /** Tokens consumed. */
  consumed = 0;
  /** Tokens asked for and refused. */
  rejected = 0;
  /** Nanoseconds scheduled waits were delayed by. */
  delayedNanos = 0;
  /** Scheduled waits aborted through their AbortSignal. */
  aborted = 0;

  onConsumed(tokens) {
    this.consumed += Number(tokens);
  }

  onRejected(tokens) {
    this.rejected += Number(tokens);
  }

  onDelayed(nanos) {
    this.delayedNanos += Number(nanos);
  }

  onAborted() {
    this.aborted += 1;
  }
}

/** Tells `listener` (which may implement any of the hooks) about a consumption attempt. */
export function tellConsumption(listener, consumed, tokens) {
  if (consumed) listener.onConsumed?.(tokens);
  else listener.onRejected?.(tokens);
}
