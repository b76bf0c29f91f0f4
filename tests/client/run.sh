#!/usr/bin/env bash
# Installs the packed tarball into a scratch project, as a user would, and runs the client's
# tests against it (tests/client/*.test.mjs): the model and queue (repository sources with the
# package's Bucket), the parser, the client against a real Node server enforcing the limit with
# edgebucket (a 20 s pacing run), ky and axios, and two tabs in headless Chromium.
#   tests/client/run.sh [bench] [path/to/edgebucket-<version>.tgz]
# `bench` runs tests/client/bench.mjs instead: pacing beside a reactive client, figures printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=test
if [ "${1:-}" = bench ]; then mode=bench; shift; fi
tarball=$(realpath "${1:-$(ls target/npm/edgebucket-*.tgz | tail -1)}")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/edgebucket-client-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "$tarball")
mkdir "$scratch/client"
cp tests/client/*.mjs "$scratch/client/"
export EDGEBUCKET_REPO="$PWD"
# Node 24 for the process-exit test, where scripts/tools.sh node24 put it (skipped without it).
node24=$(ls target/node-*/package/bin/node 2>/dev/null | tail -1 || true)
if [ -n "$node24" ]; then export EDGEBUCKET_NODE24="$PWD/$node24"; fi
if [ "$mode" = bench ]; then
  node "$scratch/client/bench.mjs"
else
  # One file at a time: the timing runs must not share two cores with Chromium.
  node --test --test-timeout=300000 --test-reporter=spec --test-concurrency=1 "$scratch"/client/*.test.mjs
fi
