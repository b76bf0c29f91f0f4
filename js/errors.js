/**
 * The one error class of edgebucket. `code` is the Rust core's stable error code
 * (`NON_POSITIVE_CAPACITY`, `INVALID_DURATION`, `NON_POSITIVE_TOKENS`, …) or, for a JS argument
 * the core never sees, `INVALID_ARGUMENT` (a wrong type, NaN, a fraction of a token, an unknown
 * strategy). An operation that throws has changed nothing, except when a listener throws:
 * listeners run after the operation took effect.
 *
 * @example
 * try { bucket.tryConsume(0) } catch (e) { if (e instanceof EdgeBucketError) console.log(e.code) }
 */
export class EdgeBucketError extends Error {
  /**
   * @param {string} code stable machine-readable code
   * @param {string} message what was wrong
   */
  constructor(code, message) {
    super(message);
    this.name = 'EdgeBucketError';
    this.code = code;
  }
}

/** An `INVALID_ARGUMENT` error. */
export function invalidArgument(message) {
  return new EdgeBucketError('INVALID_ARGUMENT', message);
}
