// The edgebucket package the client paces with: the same exact token bucket the server runs.
// In the built package (scripts/client-package.mjs) this import becomes the package's own entry
// beside the client: entry-inline.js, entry-workerd.js in Workers, edgebucket.cjs for require.
export { Bucket, BucketConfiguration, TokensInheritanceStrategy, EdgeBucketError } from '../entry-inline.js';
