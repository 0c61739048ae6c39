#!/usr/bin/env bash
# Runs the built-in vLLM-like server on 127.0.0.1 (latencies of a small real
# model) and a short Poisson benchmark against it, stops the server, and
# leaves the summary, the records and the HTML report in demo-out/<time>/.
set -euo pipefail
BIN=${1:-bin/fineserve-gen}
out=demo-out/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'kill "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; rm -rf "$tmp"' EXIT

"$BIN" mock-server --host 127.0.0.1 --port 0 --port-file "$tmp/port" \
  --ttft-ms 30 --itl-ms 8 --prefill-us-per-token 2 --max-num-seqs 64 &
mock=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")

status=0
"$BIN" --backend vllm --host 127.0.0.1 --port "$port" \
  --mode poisson --request-rate 40 --num-prompts 200 \
  --random-input-len 512 --random-output-len 64 --random-range-ratio 0.5 \
  --seed 42 --disable-tqdm \
  --results-jsonl "$out/results.jsonl" --summary-json "$out/summary.json" \
  --report-html "$out/report.html" || status=$?
kill "$mock" 2>/dev/null || true
wait "$mock" 2>/dev/null || true
echo "results in $out/: open $out/report.html (summary.json, results.jsonl beside it)"
exit "$status"
