# fineserve-gen — build, test, demo, benchmark.
GO      ?= go
BIN     ?= bin/fineserve-gen
PKGS    ?= ./...

.PHONY: all build test demo bench bench-stream fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/fineserve-gen

# The test suite CI runs (.ci/run): vet, race-enabled tests, the timing
# tests without the race detector (it distorts latency), short fuzzing.
# deploy/ is a module of its own (its checks need the Kubernetes API's
# packages, which the tool does not): it is vetted and tested from there.
test:
	@test -z "$$(gofmt -l .)" || { echo "gofmt: these files need formatting:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)
	cd deploy && $(GO) vet ./...
	$(GO) test -race -count=1 -timeout 12m $(PKGS)
	cd deploy && $(GO) test -race -count=1 -timeout 10m ./...
	$(GO) test -count=1 -timeout 10m -p 1 -run 'Timing' $(PKGS)
	./scripts/fuzz.sh 10s

# Fuzz every parser for longer: make fuzz FUZZTIME=5m
FUZZTIME ?= 60s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# Start the built-in server, run a short Poisson benchmark against it, stop it.
demo: build
	./scripts/demo.sh $(BIN)

# Component benchmarks, then fineserve-gen and vegeta side by side at a
# ladder of rates against a separate mock-server process, lag measured by
# the server (see docs/PERFORMANCE.md): make bench BENCH_RATES=1000,8000 BENCH_DURATION=10s
BENCH_RATES    ?= 1000,2000,3000,5000,8000,10000,12000
BENCH_DURATION ?= 5s
BENCH_OUT      ?= bin/bench
BENCH_POISSON  ?= 0
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...
	BENCH_RATES=$(BENCH_RATES) BENCH_DURATION=$(BENCH_DURATION) BENCH_OUT=$(BENCH_OUT) BENCH_POISSON=$(BENCH_POISSON) ./scripts/ladder.sh $(BIN)

# Streaming accuracy against a floor client: fineserve-gen and a minimal raw
# client, each against a fresh mock-server --pace exact --chunk-log (the
# server's truth), at each stream count, BENCH_STREAM_RUNS runs each; prints
# TTFT error mean/p99, ITL std added, CPU per SSE event and RSS, ours / the
# floor's (docs/PERFORMANCE.md). 10,000 streams need as many descriptors per
# process: the open-files limit is raised to its hard limit first.
# make bench-stream BENCH_STREAMS=100,500 BENCH_STREAM_RUNS=3
BENCH_STREAMS       ?= 100,500,10000
BENCH_STREAM_RUNS   ?= 5
BENCH_STREAM_TOKENS ?= 100
bench-stream: build
	$(GO) build -o bin/streambench ./internal/streambench
	ulimit -n "$$(ulimit -Hn)" 2>/dev/null || true; \
	echo "bench-stream: open files limit $$(ulimit -n)"; \
	./bin/streambench -bin $(BIN) -streams $(BENCH_STREAMS) -runs $(BENCH_STREAM_RUNS) -tokens $(BENCH_STREAM_TOKENS) -out $(BENCH_OUT)

clean:
	rm -rf bin
