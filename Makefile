# edgebucket: every command a developer or CI needs. `make test` installs what a fresh machine
# lacks and runs every test the project has; `make demo` runs the main job.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

FUZZ_SECONDS ?= 60
CARGO_FUZZ_VERSION := 0.13.2

.PHONY: setup test lint unit docs fuzz-check demo demo-test bench fuzz worker-build worker-lint worker-test bench-worker

## Install the pinned Rust toolchain, components and targets (rust-toolchain.toml).
setup:
	rustup toolchain install

## Everything CI runs.
test: setup lint unit docs fuzz-check worker-test npm-test client-test demo-test

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

unit:
	cargo test

docs:
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps

# The fuzz targets must keep compiling even when nobody fuzzes.
fuzz-check:
	cargo check --manifest-path fuzz/Cargo.toml

## The main job: the worker under `wrangler dev` (local workerd, state in .wrangler/demo), a
## scripted client printing decisions and headers, then a clean stop.
demo: worker-build package
	node examples/worker_demo.mjs

## `make demo` as a test: it exits 0 only if every step went as it says, and stops wrangler.
demo-test: worker-build package
	node --test --test-timeout=300000 tests/demo/*.test.mjs

## The Cloudflare Worker (src/worker/): build with worker-build into build/.
worker-build: setup
	scripts/worker-build.sh

# The worker feature on both targets (natively with its unit tests), and its docs (gated behind it).
worker-lint: setup
	cargo clippy --features worker --lib --profile test -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --features worker --lib -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --features worker

## Worker unit tests (native) and end-to-end tests against the built worker in real workerd.
worker-test: worker-build worker-lint
	scripts/tools.sh node24
	cargo test --features worker --lib worker::
	node --test --test-timeout=300000 tests/worker/*.test.mjs

## Load benchmark of the local worker (autocannon): decisions/s, p50/p99, 1 key and 10k keys (fewer if ulimit -Hn is too low).
bench-worker: worker-build
	node benches/worker_load.mjs

# --- The npm package (src/wasm/, js/, pkg/; docs/npm-package.md) ---
.PHONY: npm-tools browser-tools wasm-build wasm-lint package wasm-test npm-test bench-js

WASM_RELEASE := target/wasm32-unknown-unknown/release/edgebucket.wasm

# wasm-bindgen-cli and the npm dev tools (binaryen's wasm-opt, esbuild, playwright-core, miniflare).
npm-tools: setup
	scripts/tools.sh npm wasm-target wasm-bindgen

# Debian's Chromium and chromedriver (apt-get, as root or with sudo): only the browser tests need
# them, so building the package or running the demo never installs a browser.
browser-tools:
	scripts/tools.sh chromium

## The wasm behind the npm package.
wasm-build: npm-tools
	cargo build --target wasm32-unknown-unknown --features wasm --lib --release

wasm-lint: npm-tools
	cargo clippy --target wasm32-unknown-unknown --features wasm --lib --test wasm -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --features wasm

## The npm package in pkg/dist and the tarball target/npm/edgebucket-<version>.tgz.
package: wasm-build
	node scripts/npm-package.mjs $(WASM_RELEASE)

## The bindings' tests (wasm-bindgen-test), in Node and in headless Chromium.
wasm-test: npm-tools browser-tools
	cargo test --target wasm32-unknown-unknown --features wasm --test wasm
	WASM_BINDGEN_USE_BROWSER=1 cargo test --target wasm32-unknown-unknown --features wasm --test wasm

## The npm package: lint, the bindings' tests, then the packed tarball installed in a scratch
## project: node --test (ESM, CommonJS), headless Chromium, workerd, esbuild bundles, tsc.
npm-test: wasm-lint wasm-test package
	tests/npm/run.sh

## JS benchmark in one Node process: edgebucket beside limiter, rate-limiter-flexible, bottleneck.
bench-js: package
	node --expose-gc benches/js/bench.mjs
	node benches/js/aborts.mjs

# --- The pacing client edgebucket/client (js/client/; docs/client.md) ---
.PHONY: client-test bench-client

## The client against the packed tarball: parser and model tests, a 20 s pacing run at 3x demand
## against a Node server enforcing the limit with edgebucket, ky and axios, two Chromium tabs.
client-test: package browser-tools
	scripts/tools.sh node24
	tests/client/run.sh

## Pacing beside a reactive client (retry after 429, honouring Retry-After): 429s, goodput, time.
bench-client: package
	tests/client/run.sh bench

## Criterion benchmarks (edgebucket beside governor).
bench: setup
	cargo bench --bench decision

## Coverage-guided fuzzing of every decoder, FUZZ_SECONDS each.
fuzz: setup
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked
	cd fuzz && for target in codec_decode configuration_json worker_request worker_settings bucket_ops configuration_ops duration_roundtrip; do \
	  mkdir -p corpus/$$target; \
	  cargo fuzz run -s none $$target corpus/$$target seeds/$$target -- -max_total_time=$(FUZZ_SECONDS); \
	done
