# fineserve-gen — build, test, demo, benchmark.
GO      ?= go
BIN     ?= bin/fineserve-gen
PKGS    ?= ./...

.PHONY: all build test test-long demo bench bench-stream fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/fineserve-gen

# The quick suite (docs/TESTING.md): formatting, vet, the race-enabled
# tests with the combination matrix in its light form (every value of
# every dimension), the packages whose heavy single-goroutine tests skip
# under the race detector again without it (NORACE_PKGS), and deploy/'s
# checks of the manifests (-short: the static build of the image's binary
# is make test-long's). About 7 min on 2 cores beside four CPU-bound
# processes, measured before TestDocsExamples' quick form (75 s in
# cmd/fineserve-gen under the race detector) was added. It holds no timing assertion against the wall clock
# that a busy machine breaks. deploy/ is a module of its own (its checks
# need the Kubernetes API's packages, which the tool does not): it is
# vetted and tested from there.
NORACE_PKGS ?= ./pkg/parametric ./pkg/replay
test:
	@test -z "$$(gofmt -l .)" || { echo "gofmt: these files need formatting:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)
	cd deploy && $(GO) vet ./...
	$(GO) test -race -count=1 -timeout 12m $(PKGS)
	$(GO) test -count=1 -timeout 5m $(NORACE_PKGS)
	cd deploy && $(GO) test -race -short -count=1 -timeout 10m ./...

# The long suite, after make test (CI runs both: .ci/run): the whole
# combination matrix under the race detector (every pair of values), the
# examples of docs/ that make test leaves out (TestDocsExamples' long
# blocks: the sweeps, plans, agentic replays and sessions with think times,
# about 6 min), the timing tests (TestTiming*: send lag, the sweep's
# capacities, the server's idle share) without it, one package at a time,
# deploy/'s checks with the image's static build and its Job's command
# lines, and every fuzz target for FUZZTIME_LONG each (52 targets). About
# 18 min on 2 cores; with make test, CI stays within 30 min (26.6 min
# measured with 7 s of fuzzing a target; about 25 with 5 s).
FUZZTIME_LONG ?= 5s
test-long:
	FINESERVE_GEN_TEST_LONG=1 $(GO) test -race -count=1 -timeout 20m -run 'TestMatrix$$|TestDocsExamples' ./cmd/fineserve-gen
	FINESERVE_GEN_TEST_LONG=1 $(GO) test -count=1 -timeout 15m -p 1 -run 'Timing' $(PKGS)
	cd deploy && $(GO) test -race -count=1 -timeout 10m ./...
	./scripts/fuzz.sh $(FUZZTIME_LONG)

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
