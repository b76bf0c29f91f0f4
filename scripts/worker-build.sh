#!/usr/bin/env bash
# Builds the Cloudflare Worker into build/ (build/entry.js, the entry; build/index.js and
# build/index_bg.wasm from worker-build) offline: pinned worker-build, wasm-bindgen, binaryen's wasm-opt and
# esbuild from this repository instead of downloads. Its own target directory keeps the worker's
# wasm from overwriting the npm package's (same crate, other features).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/tools.sh npm wasm-target wasm-bindgen worker-build
eval "$(scripts/tools.sh env)"
CARGO_TARGET_DIR="$PWD/target/worker" worker-build --profile worker --features worker
# worker-build keeps the name section (about 90 KB); stripped here, as the npm package's is. The
# features are worker-build's own list for its wasm-opt run.
features=(mutable-globals sign-ext nontrapping-float-to-int bulk-memory multivalue reference-types exception-handling)
node_modules/.bin/wasm-opt build/index_bg.wasm -o build/index_bg.wasm --strip-debug --strip-producers --strip-target-features \
  "${features[@]/#/--enable-}"
# The entry module: worker-build's exports, with the Durable Object wrapped for RPC.
cp src/worker/entry.js build/entry.js
wasm=build/index_bg.wasm
echo "worker wasm: $(wc -c <"$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
