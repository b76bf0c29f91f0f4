/**
 * Surfaces an error no caller can catch (a hook's, a message from another tab that cannot be
 * handled) without failing anything else: `reportError` where the runtime has it, else
 * `console.error` with `what` happened. Never a throw: from a timer or a channel's listener it
 * would end a Node process.
 *
 * @param {unknown} error
 * @param {string} what
 */
export function report(error, what) {
  if (typeof globalThis.reportError === 'function') globalThis.reportError(error);
  else console.error(`edgebucket/client: ${what}`, error);
}
