// Entry point for Cloudflare Workers (workerd), which forbid compiling wasm from bytes at run
// time: the .wasm file is imported as a module, as wrangler and miniflare expect.
import { initSync } from './wasm/edgebucket.js';
import module from './wasm/edgebucket_bg.wasm';
import { ready } from './runtime.js';

initSync({ module });
ready();

export * from './index.js';
