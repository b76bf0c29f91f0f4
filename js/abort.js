/**
 * One `abort` listener per signal, however many waits it may end. A signal shared by many waits
 * (one per server, aborted at shutdown) is ordinary use, and Node warns past ten listeners on one
 * EventTarget (`MaxListenersExceededWarning`, "possible memory leak").
 */

/** signal → { callbacks: Set, listener } while it has callbacks. */
const watched = new WeakMap();

/**
 * Calls `callback` once `signal` aborts, in the order callbacks were added, all within the one
 * event. Returns a function that forgets `callback`; the listener goes with the last one.
 * @param {AbortSignal} signal
 * @param {() => void} callback
 * @returns {() => void}
 */
export function onAbort(signal, callback) {
  let entry = watched.get(signal);
  if (entry === undefined) {
    const callbacks = new Set();
    const listener = () => {
      watched.delete(signal);
      // A copy, skipping any forgotten meanwhile: a callback may end other waits. One that
      // throws must not leave the others' waits hanging: its error is reported afterwards.
      for (const each of [...callbacks]) {
        if (!callbacks.has(each)) continue;
        try {
          each();
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
      }
    };
    entry = { callbacks, listener };
    // Listening first: a signal that refuses the listener is not taken as watched.
    signal.addEventListener('abort', listener, { once: true });
    watched.set(signal, entry);
  }
  entry.callbacks.add(callback);
  return () => {
    if (!entry.callbacks.delete(callback) || entry.callbacks.size > 0 || watched.get(signal) !== entry) return;
    watched.delete(signal);
    try {
      signal.removeEventListener('abort', entry.listener);
    } catch {
      // A signal-like object that keeps the listener: it finds no callbacks when it fires.
    }
  };
}

/**
 * Whether `signal` has aborted; false for none, and for a signal-like object whose `aborted`
 * throws once its wait is queued (its wait then ends as any other, by its time).
 */
export function hasAborted(signal) {
  try {
    return signal?.aborted === true;
  } catch {
    return false;
  }
}

/**
 * Why `signal` aborted, as its wait rejects with it; the error itself for a signal-like object
 * whose `reason` throws, so that the wait still ends.
 */
export function signalReason(signal) {
  try {
    return signal.reason;
  } catch (error) {
    return error;
  }
}
