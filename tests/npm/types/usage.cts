// The CommonJS view of the types (index.d.cts).
import edgebucket = require('edgebucket');

const bucket: edgebucket.Bucket = edgebucket.Bucket.builder().addLimit((l) => l.capacity(1).refillGreedy(1, '1s')).build();
// @ts-expect-error tokens are numbers or BigInts
bucket.tryConsume('1');
export const ok: boolean = bucket.tryConsume(1);
