// `edgebucket/client`: a fetch-compatible client that paces itself from the server's
// rate-limit headers. See docs/client.md.
export { createClient } from './client.js';
export { readHeaders, BOUNDS } from './headers.js';
export { EdgeBucketError } from './engine.js';
