# edgebucket: every command a developer or CI needs. `make test` installs what a fresh machine
# lacks and runs every test the project has; `make demo` runs the main job.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

FUZZ_SECONDS ?= 60
CARGO_FUZZ_VERSION := 0.13.2

.PHONY: setup test lint unit docs fuzz-check demo bench fuzz

## Install the pinned Rust toolchain, components and targets (rust-toolchain.toml).
setup:
	rustup toolchain install

## Everything CI runs.
test: setup lint unit docs fuzz-check

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

## The main job.
demo: setup
	cargo run --release --example demo

## Criterion benchmarks (edgebucket beside governor).
bench: setup
	cargo bench --bench decision

## Coverage-guided fuzzing of every decoder, FUZZ_SECONDS each.
fuzz: setup
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked
	cd fuzz && for target in codec_decode configuration_json; do \
	  mkdir -p corpus/$$target; \
	  cargo fuzz run -s none $$target corpus/$$target seeds/$$target -- -max_total_time=$(FUZZ_SECONDS); \
	done
