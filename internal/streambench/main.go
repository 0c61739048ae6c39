// Command streambench measures how far fineserve-gen's streaming figures
// are from the truth, beside a floor client that does the least a client
// can: against a mock-server process that paces its chunks exactly and
// logs when it wrote each one (--pace exact --chunk-log), at a list of
// concurrent stream counts, several runs each. `make bench-stream` runs
// it; docs/PERFORMANCE.md says how to read it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// config is one benchmark's settings.
type config struct {
	bin     string // fineserve-gen binary
	self    string // this binary (the floor client: floorEnv)
	streams []int
	runs    int
	tokens  int
	// rounds is how many requests each stream sends one after another,
	// below slowFrom streams (from it on, one): a run's TTFT figures are
	// then over streams×rounds requests, not a hundred, whose mean and
	// p99 one late request moves.
	rounds int
	ttft   time.Duration
	itl    time.Duration
	// From slowFrom streams on, the mock is paced slowTTFT and slowITL:
	// 10,000 streams at 10 ms would be a million events a second, more
	// than two cores can write, let alone read (0: never).
	slowFrom          int
	slowTTFT, slowITL time.Duration
	// oursFlags are added to fineserve-gen's command line ("{dir}" in one
	// becomes the run's directory: --cpu-profile {dir}/cpu.pprof); keep
	// keeps every run's directory (records, chunk log, profiles) under
	// out/runs, to look into a tail run.
	oursFlags []string
	keep      bool
	// floorProfile has the floor write a CPU profile of each run into its
	// run's directory (with keep), beside ours.
	floorProfile bool
	// floorVsFloor runs the floor in fineserve-gen's place too: how often
	// a client no different from the floor misses the goals against it
	// (the goals' own noise).
	floorVsFloor bool
	out          string // directory for stream-bench.json ("": print only)
	timeout      time.Duration
	progress     io.Writer
}

func main() {
	if os.Getenv(floorEnv) != "" {
		os.Exit(floorMain(os.Args[1:]))
	}
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "bin/fineserve-gen", "fineserve-gen binary")
	streams := flag.String("streams", "100,500,10000", "concurrent stream counts, comma-separated")
	flag.IntVar(&cfg.runs, "runs", 5, "runs of each client at each stream count")
	flag.IntVar(&cfg.tokens, "tokens", 100, "output tokens per stream")
	flag.IntVar(&cfg.rounds, "rounds", 5, "requests each stream sends one after another, below -slow-from streams (from it on, one)")
	flag.DurationVar(&cfg.ttft, "ttft", 50*time.Millisecond, "the mock's time to first token")
	flag.DurationVar(&cfg.itl, "itl", 10*time.Millisecond, "the mock's inter-token latency")
	flag.IntVar(&cfg.slowFrom, "slow-from", 10000, "from this many streams on, pace the mock -slow-ttft and -slow-itl instead (0: never)")
	flag.DurationVar(&cfg.slowTTFT, "slow-ttft", time.Second, "the mock's time to first token from -slow-from streams on")
	flag.DurationVar(&cfg.slowITL, "slow-itl", 100*time.Millisecond, "the mock's inter-token latency from -slow-from streams on")
	flag.StringVar(&cfg.out, "out", "", "directory for stream-bench.json (default: print only)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "give up on one client run after this long")
	oursFlags := flag.String("ours-flags", "", "more flags for fineserve-gen, space-separated; {dir} is the run's directory (e.g. '--cpu-profile {dir}/cpu.pprof')")
	flag.BoolVar(&cfg.keep, "keep", false, "keep every run's records, chunk log, profiles and the client's stderr under -out/runs/STREAMS-RUN-CLIENT")
	flag.BoolVar(&cfg.floorProfile, "floor-profile", false, "have the floor write a CPU profile of each run (cpu.pprof in its run's directory; needs -keep)")
	flag.BoolVar(&cfg.floorVsFloor, "floor-vs-floor", false, "run the floor in fineserve-gen's place too, to see how often the floor misses the goals against itself")
	flag.Parse()
	cfg.oursFlags = strings.Fields(*oursFlags)
	if cfg.keep && cfg.out == "" {
		fmt.Fprintln(os.Stderr, "streambench: -keep needs -out")
		os.Exit(2)
	}
	var err error
	if cfg.streams, err = parseCounts(*streams); err != nil {
		fmt.Fprintln(os.Stderr, "streambench: -streams:", err)
		os.Exit(2)
	}
	if cfg.self, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, "streambench:", err)
		os.Exit(1)
	}
	cfg.progress = os.Stderr
	rows, err := bench(context.Background(), cfg)
	if cfg.floorVsFloor {
		fmt.Println("-floor-vs-floor: the \"ours\" columns are a second run of the floor")
	}
	printRows(os.Stdout, rows)
	if err == nil && cfg.out != "" {
		err = writeJSON(filepath.Join(cfg.out, "stream-bench.json"), rows)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "streambench:", err)
		os.Exit(1)
	}
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want counts ≥ 1, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// side is one client's run, measured against the server's truth: the
// error of its TTFT (its figure less the server's, mean and p99, ms), the
// standard deviation its ITL adds to the server's gaps (ms), its CPU per
// SSE event (µs, net of the client's fixed cost: start, one stream, exit;
// may be noisy or even negative on a tiny run) and its peak RSS (MB).
type side struct {
	TTFTErrMean float64 `json:"ttft_error_mean_ms"`
	TTFTErrP99  float64 `json:"ttft_error_p99_ms"`
	ITLStdAdded float64 `json:"itl_std_added_ms"`
	// ServerLateMean and ServerLateP99 are how late the mock's token
	// writes were against its exact schedule in this client's run (ms):
	// more than a millisecond or two, and the two cores were out of CPU,
	// the client's figures those of a queue.
	ServerLateMean float64 `json:"server_late_mean_ms"`
	ServerLateP99  float64 `json:"server_late_p99_ms"`
	// Matched tells the TTFT error is per request (every request found in
	// the truth by its X-Request-Id), not of the distributions.
	Matched     bool    `json:"ttft_matched"`
	CPUPerEvent float64 `json:"cpu_us_per_event"`
	RSSMB       float64 `json:"rss_mb"`
	Events      int64   `json:"events"`
	// NetCPUUS and NetEvents are the run's CPU (µs) and events less the
	// client's fixed cost's: CPUPerEvent is their ratio; a stream count's
	// runs are judged on their sums (pool).
	NetCPUUS  float64 `json:"net_cpu_us"`
	NetEvents int64   `json:"net_events"`
	Failed    int     `json:"failed"`
	// fixed is this run's CPU and events (for the one-stream run that
	// measures the fixed cost).
	fixed fixedCost
}

// row is one run at one stream count: fineserve-gen's and the floor's.
type row struct {
	Streams int  `json:"streams"`
	Run     int  `json:"run"`
	Ours    side `json:"fineserve_gen"`
	Floor   side `json:"floor"`
}

// bench runs every stream count cfg.runs times, the floor then
// fineserve-gen, each against a fresh mock. CPU per event leaves out each
// client's fixed cost (start, one stream, exit), measured first.
func bench(ctx context.Context, cfg config) ([]row, error) {
	var rows []row
	var base [2]fixedCost
	second := clientOurs
	if cfg.floorVsFloor {
		second = clientFloorB
	}
	for i, cl := range []client{clientFloor, second} {
		// The least of three: a process's start varies by milliseconds,
		// and a fixed cost taken too high would flatter the client.
		for range fixedCostRuns {
			s, err := runSide(ctx, cfg, 1, 0, cl, fixedCost{})
			if err != nil {
				return nil, fmt.Errorf("fixed cost (one stream), %s: %w", cl, err)
			}
			if base[i].events == 0 || s.fixed.cpu < base[i].cpu {
				base[i] = s.fixed
			}
		}
	}
	for _, n := range cfg.streams {
		for r := 1; r <= cfg.runs; r++ {
			fl, err := runSide(ctx, cfg, n, r, clientFloor, base[0])
			if err != nil {
				return rows, fmt.Errorf("%d streams, run %d, floor: %w", n, r, err)
			}
			ours, err := runSide(ctx, cfg, n, r, second, base[1])
			if err != nil {
				return rows, fmt.Errorf("%d streams, run %d, %s: %w", n, r, second, err)
			}
			rows = append(rows, row{Streams: n, Run: r, Ours: ours, Floor: fl})
			if cfg.progress != nil {
				fmt.Fprintf(cfg.progress, "streambench: %d streams, run %d/%d done\n", n, r, cfg.runs)
			}
		}
	}
	return rows, nil
}

// client is a side of a run, named as its directory under -keep.
type client string

const (
	clientFloor  client = "floor"
	clientOurs   client = "fineserve-gen"
	clientFloorB client = "floor-b" // the floor in fineserve-gen's place (-floor-vs-floor)
)

// fixedCostRuns is how many one-stream runs of each client measure its
// fixed cost (the least is taken).
const fixedCostRuns = 3

// fixedCost is a client's CPU and events in a run of one stream: what its
// start and exit cost, left out of CPU per event.
type fixedCost struct {
	cpu    time.Duration
	events int64
}

// runSide starts a mock, runs one client (the floor or fineserve-gen) with
// n streams against it, stops the mock and measures the client against
// its chunk log, its CPU per event net of base.
func runSide(ctx context.Context, cfg config, n, run int, cl client, base fixedCost) (side, error) {
	floor := cl != clientOurs
	dir, err := os.MkdirTemp("", "streambench")
	if err != nil {
		return side{}, err
	}
	if cfg.keep && run > 0 {
		dir = filepath.Join(cfg.out, "runs", fmt.Sprintf("%d-%d-%s", n, run, cl))
		// An earlier benchmark's run in the same -out is replaced whole.
		if err := os.RemoveAll(dir); err != nil {
			return side{}, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return side{}, err
		}
	} else {
		defer os.RemoveAll(dir)
	}
	chunkLog := filepath.Join(dir, "chunks.jsonl")
	rounds := 1 // the fixed cost's run (run 0): one request
	if run > 0 {
		rounds = cfg.roundsFor(n)
	}
	ttft, itl := cfg.ttft, cfg.itl
	if cfg.slow(n) {
		ttft, itl = cfg.slowTTFT, cfg.slowITL
	}
	m, err := startMock(cfg.bin, dir, "--pace", "exact", "--chunk-log", chunkLog,
		"--ttft-ms", ms(ttft), "--itl-ms", ms(itl), "--max-model-len", "0")
	if err != nil {
		return side{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(m.Port)
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	var cmd *exec.Cmd
	outFile := filepath.Join(dir, "client.out")
	if floor {
		cmd = exec.CommandContext(ctx, cfg.self, "-addr", addr, "-streams", strconv.Itoa(n), "-rounds", strconv.Itoa(rounds), "-tokens", strconv.Itoa(cfg.tokens), "-out", outFile)
		if cfg.floorProfile && run > 0 {
			cmd.Args = append(cmd.Args, "-cpu-profile", filepath.Join(dir, "cpu.pprof"))
		}
		cmd.Env = append(os.Environ(), floorEnv+"=1")
	} else {
		cmd = exec.CommandContext(ctx, cfg.bin, "--base-url", "http://"+addr, "--model", "mock-model", "--num-prompts", strconv.Itoa(n*rounds),
			"--request-rate", "inf", "--max-concurrency", strconv.Itoa(n), "--prewarm-connections", strconv.Itoa(n),
			"--random-input-len", "8", "--random-output-len", strconv.Itoa(cfg.tokens), "--random-range-ratio", "0",
			"--seed", "1", "--warmup-requests", "0", "--quiet", "--disable-tqdm", "--results-jsonl", outFile,
			"--request-id-prefix", "o")
		for _, f := range cfg.oursFlags {
			cmd.Args = append(cmd.Args, strings.ReplaceAll(f, "{dir}", dir))
		}
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	runErr := cmd.Run()
	stopErr := m.Stop()
	if cfg.keep && run > 0 {
		// A kept run keeps what the client said too (GODEBUG=gctrace=1's
		// lines, say, beside a tail run's records).
		if err := os.WriteFile(filepath.Join(dir, "client.err"), stderr.Bytes(), 0o644); err != nil {
			return side{}, err
		}
	}
	if runErr != nil {
		return side{}, fmt.Errorf("%v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	if stopErr != nil {
		return side{}, stopErr
	}
	truth, err := readTruth(chunkLog, ttft, itl)
	if err != nil {
		return side{}, err
	}
	var seen observed
	if floor {
		seen, err = readFloor(outFile)
	} else {
		seen, err = readRecords(outFile)
	}
	if err != nil {
		return side{}, err
	}
	s := compare(seen, truth)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	s.fixed = fixedCost{cpu: cpu, events: s.Events}
	if ev := s.Events - base.events; ev > 0 {
		s.NetCPUUS, s.NetEvents = float64((cpu-base.cpu).Nanoseconds())/1e3, ev
		s.CPUPerEvent = s.NetCPUUS / float64(ev)
	}
	s.RSSMB = float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	return s, nil
}

// slow reports whether n streams are paced slowly (slowFrom).
func (cfg config) slow(n int) bool { return cfg.slowFrom > 0 && n >= cfg.slowFrom }

// roundsFor is how many requests each of n streams sends in a run.
func (cfg config) roundsFor(n int) int {
	if cfg.slow(n) {
		return 1
	}
	return max(cfg.rounds, 1)
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', -1, 64) }

// mock is a mock-server process.
type mock struct{ *mockserver.Process }

func startMock(bin, dir string, args ...string) (*mock, error) {
	p, err := mockserver.StartProcess(bin, dir, args...)
	if err != nil {
		return nil, err
	}
	return &mock{p}, nil
}

func writeJSON(path string, rows []row) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
