// setTimeout for delays of any length. Browsers and Node run a timer of more than 2^31 − 1 ms
// (24.8 days) at once, and a scheduled wait, a policy window, a Retry-After or a timeout can be
// longer than that. Shared by the scheduler and the pacing client (which bundles it).

const LONGEST = 2 ** 31 - 1;

/**
 * Calls `callback` once `ms` milliseconds have passed, however many; returns what cancels it.
 *
 * @param {number} ms
 * @param {() => void} callback
 * @returns {() => void}
 */
export function after(ms, callback) {
  let id;
  const arm = (left) => {
    id = left > LONGEST ? setTimeout(() => arm(left - LONGEST), LONGEST) : setTimeout(callback, Math.max(0, left));
  };
  arm(ms);
  return () => clearTimeout(id);
}
