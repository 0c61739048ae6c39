#!/usr/bin/env bash
# Runs the built-in vLLM-like server on 127.0.0.1 and a short Poisson
# benchmark against it, then stops the server.
set -euo pipefail
BIN=${1:-bin/fineserve-gen}
tmp=$(mktemp -d)
trap 'kill "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; rm -rf "$tmp"' EXIT

"$BIN" mock-server --host 127.0.0.1 --port 0 --port-file "$tmp/port" \
  --ttft-ms 20 --itl-ms 5 --prefill-us-per-token 2 --max-num-seqs 64 &
mock=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")

"$BIN" --backend vllm --host 127.0.0.1 --port "$port" \
  --mode poisson --request-rate 40 --num-prompts 200 \
  --random-input-len 512 --random-output-len 64 --random-range-ratio 0.5 \
  --seed 42 --disable-tqdm \
  --results-jsonl "$tmp/results.jsonl" --summary-json "$tmp/summary.json"
