// Bucket4j's BucketListener: what a bucket reports as it is used.
import { exactNumber } from './runtime.js';

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
  /** Tokens consumed (a number while exact, a BigInt beyond 2^53, as every count). */
  consumed = 0;
  /** Tokens asked for and refused. */
  rejected = 0;
  /** Nanoseconds scheduled waits were delayed by (2^53 ns is 104 days: a busy server's total gets there). */
  delayedNanos = 0;
  /** Scheduled waits aborted through their AbortSignal. */
  aborted = 0;

  onConsumed(tokens) {
    this.consumed = sum(this.consumed, tokens);
  }

  onRejected(tokens) {
    this.rejected = sum(this.rejected, tokens);
  }

  onDelayed(nanos) {
    this.delayedNanos = sum(this.delayedNanos, nanos);
  }

  onAborted() {
    this.aborted += 1;
  }
}

/** `total + n` exactly: a number while the sum is a safe integer, else a BigInt. */
function sum(total, n) {
  if (typeof total === 'number' && typeof n === 'number') {
    const exact = total + n;
    if (Number.isSafeInteger(exact)) return exact;
  }
  return exactNumber(BigInt(total) + BigInt(n));
}

/** Tells `listener` (which may implement any of the hooks) about a consumption attempt. */
export function tellConsumption(listener, consumed, tokens) {
  if (consumed) listener.onConsumed?.(tokens);
  else listener.onRejected?.(tokens);
}
