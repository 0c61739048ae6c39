# fineserve-gen — build, test, demo, benchmark.
GO      ?= go
BIN     ?= bin/fineserve-gen
PKGS    ?= ./...

.PHONY: all build test demo bench fuzz clean

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

# Component benchmarks and the rate ladder against a separate mock-server
# process (see docs/PERFORMANCE.md).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...
	./scripts/ladder.sh $(BIN)

clean:
	rm -rf bin
