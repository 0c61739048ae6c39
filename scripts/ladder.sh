#!/usr/bin/env bash
# The rate ladder of `make bench`: fineserve-gen and vegeta side by side on
# the same constant-rate schedule, the send lag of both measured by a
# separate mock-server process from the instants requests reach it (see
# docs/PERFORMANCE.md). vegeta is installed with `go install` from the Go
# module proxy into a temporary directory; without network this fails with
# a message (set VEGETA to an installed vegeta binary instead).
#
#   BENCH_RATES     request rates, comma-separated (default 1000,2000,3000,5000,8000,10000,12000)
#   BENCH_DURATION  schedule length per rate and client (default 5s)
#   BENCH_OUT       directory for side-by-side.json and lag-side-by-side.svg (default bin/bench)
#   BENCH_POISSON   1: also run fineserve-gen on a Poisson schedule at each rate
#   VEGETA          vegeta binary to use instead of installing one
set -euo pipefail
BIN=${1:-bin/fineserve-gen}
cd "$(dirname "$0")/.."
RATES=${BENCH_RATES:-1000,2000,3000,5000,8000,10000,12000}
DURATION=${BENCH_DURATION:-5s}
OUT=${BENCH_OUT:-bin/bench}
args=(-bin "$BIN" -side-by-side -rates "$RATES" -duration "$DURATION" -out "$OUT")
if [ "${BENCH_POISSON:-0}" = 1 ]; then
  args+=(-poisson)
fi
if [ -n "${VEGETA:-}" ]; then
  args+=(-vegeta "$VEGETA")
fi
exec go run ./internal/ladder "${args[@]}"
