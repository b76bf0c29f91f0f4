// A learned policy as an edgebucket configuration, in the project's one JSON schema:
// `{"bandwidths":[{"id":"…","capacity":q,"refill":{"kind":"greedy","tokens":q,"period":"…s"}}]}`.
//
// `q` per `w` seconds is read as a greedy token bucket of capacity `q` refilling `q` per `w`:
// exactly what an edgebucket server advertises (`w` is the time to refill from empty), and for a
// fixed-window server the `r`/`t` corrections (see pacer.js) keep the client inside the window.

/** Units the pacer can count per request; other `qu` values are not paced (Retry-After still is). */
export const PACED_UNITS = new Set(['requests', 'content-bytes']);

/** The `qu` that limits requests in flight rather than a rate. */
export const CONCURRENCY_UNIT = 'concurrent-requests';

/** Shortest window a learned policy is given when the server names none (ms). */
export const MIN_WINDOW = 1000;

/**
 * The configuration for `quota` units per `window` ms, or `null` when it cannot pace anything
 * (`quota` 0 means "nothing until the reset": the pacer blocks on `t` instead).
 *
 * @param {{ policy: string, quota?: number, window?: number }} learned
 * @returns {{ bandwidths: object[] } | null}
 */
export function configurationFor({ policy, quota, window }) {
  if (!(quota >= 1) || !(window >= 1)) return null;
  return {
    bandwidths: [
      {
        id: policy,
        capacity: quota,
        refill: { kind: 'greedy', tokens: quota, period: duration(window) },
      },
    ],
  };
}

/**
 * A configuration for a rate learned from 429 timing alone: `rate` requests per second with a
 * burst of one second's worth (at least one request).
 *
 * @param {number} rate requests per second, positive
 * @returns {{ bandwidths: object[] }}
 */
export function learnedConfiguration(rate) {
  const capacity = Math.max(1, Math.floor(rate));
  const period = Math.max(1, Math.ceil((capacity / rate) * 1000));
  return {
    bandwidths: [{ id: 'learned', capacity, refill: { kind: 'greedy', tokens: capacity, period: duration(period) } }],
  };
}

/** A key that changes exactly when the configuration would. */
export function configurationKey(configuration) {
  return configuration === null ? '' : JSON.stringify(configuration.bandwidths);
}

function duration(ms) {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
