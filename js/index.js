// The public API of the npm package `edgebucket` (the entry points load the wasm first).
export { EdgeBucketError } from './errors.js';
export { BucketConfiguration, ConfigurationBuilder, BandwidthBuilder, TokensInheritanceStrategy } from './configuration.js';
export { Bucket, BucketBuilder } from './bucket.js';
export { VerboseBucket } from './verbose.js';
export { Scheduler } from './scheduler.js';
export { SimpleListener } from './listener.js';
export { BucketStore } from './store.js';

/** Bucket4j's INFINITY_DURATION: a wait that never ends, as the package reports it. */
export const INFINITY_DURATION = Infinity;
