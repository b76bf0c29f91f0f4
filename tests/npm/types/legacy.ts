// Both entry points resolve under TypeScript's older `moduleResolution: node10`, which reads
// `types` and `typesVersions` but not `exports`.
import { Bucket } from 'edgebucket';
import { createClient, readHeaders } from 'edgebucket/client';

const bucket: Bucket = Bucket.builder()
  .addLimit((l) => l.capacity(10).refillGreedy(10, '1s'))
  .build();
export const consumed: boolean = bucket.tryConsume(1);
export const api = createClient({ concurrency: 2 });
export const dialect = readHeaders(new Headers()).dialect;
