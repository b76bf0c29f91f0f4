#!/usr/bin/env bash
# Builds the Cloudflare Worker into build/ (build/worker/shim.mjs, build/index.js,
# build/index_bg.wasm) offline: pinned worker-build, wasm-bindgen, binaryen's wasm-opt and
# esbuild from this repository instead of downloads. Its own target directory keeps the worker's
# wasm from overwriting the npm package's (same crate, other features).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/tools.sh npm wasm-target wasm-bindgen worker-build
eval "$(scripts/tools.sh env)"
CARGO_TARGET_DIR="$PWD/target/worker" worker-build --profile worker --features worker
wasm=build/index_bg.wasm
echo "worker wasm: $(wc -c <"$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
