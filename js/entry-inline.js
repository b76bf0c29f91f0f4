// Entry point for Node, browsers, bundlers and the default condition: the wasm is inlined
// (base64) and compiled synchronously, so `import` is enough and any bundler works unconfigured.
import { initSync } from './wasm/edgebucket.js';
import { wasmBase64 } from './wasm/inline.js';
import { ready } from './runtime.js';

initSync({ module: Uint8Array.from(atob(wasmBase64), (c) => c.charCodeAt(0)) });
ready();

export * from './index.js';
