#!/usr/bin/env bash
# Installs the packed tarball into a scratch project, as a user would, and runs the JS suite
# against it: node --test on ESM and CommonJS (tests/npm/package), then headless Chromium,
# workerd, an esbuild bundle, the types and the docs' examples (tests/npm/platforms).
#   tests/npm/run.sh [path/to/edgebucket-<version>.tgz]
set -euo pipefail
cd "$(dirname "$0")/../.."
tarball=$(realpath "${1:-$(ls target/npm/edgebucket-*.tgz | tail -1)}")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/edgebucket-npm-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "$tarball")
mkdir "$scratch/test"
cp tests/npm/package/* "$scratch/test/"
# Files, not directories: Node 21 and later read node --test arguments as globs.
EDGEBUCKET_SCRATCH="$scratch" node --test --test-timeout=300000 --test-reporter=spec "$scratch"/test/*.test.{mjs,cjs} tests/npm/platforms/*.test.mjs
