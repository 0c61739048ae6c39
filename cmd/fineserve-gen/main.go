// Command fineserve-gen is a workload generator and load tester for
// OpenAI-compatible LLM servers. It parses the command line into
// options.Options, runs them (options.Run) or a subcommand, and maps the
// outcome to an exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// Exit codes.
const (
	exitOK          = 0   // the run completed within its error budget
	exitFailure     = 1   // the run could not be carried out (e.g. server unreachable)
	exitUsage       = 2   // bad arguments or input files
	exitBudget      = 3   // the run completed but missed a target: error budget or SLO
	exitInternal    = 4   // a bug: a panic, or requests that failed with class internal
	exitInterrupted = 130 // stopped by a signal
	// exitThreshold (99, repeatcmd.go): a --threshold breached, or a
	// regression found by compare.
)

// subcommands maps a subcommand name to its entry point.
var subcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"run":         runCommand,
	"mock-server": mockServerCommand,
	"report":      reportCommand,
	"fit":         fitCommand,
	"analyze":     analyzeCommand,
	"synthesize":  synthesizeCommand,
	"merge":       mergeCommand,
	"sweep":       sweepCommand,
	"plan":        planCommand,
	"config":      configCommand,
	"compare":     compareCommand,
}

func main() {
	trap, _ := safe.Arm()
	ctx, stop := signalContext(signalNotice(os.Args[1:]))
	code := runTrapped(ctx, trap, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runTrapped runs dispatch on a goroutine of its own and returns its exit
// code; when trap catches a panic first (in dispatch or in any goroutine
// started with safe.Go), it prints it with its stack, has the run write the
// records it has received, and returns exitInternal. Go's own exit code for
// an unrecovered panic, 2, would read as a usage error.
func runTrapped(ctx context.Context, trap *safe.Trap, args []string, stdout, stderr io.Writer) int {
	code := make(chan int, 1)
	safe.Go(func() { code <- dispatch(ctx, args, stdout, stderr) })
	select {
	case c := <-code:
		return c
	case <-trap.Fired():
	}
	p := trap.Panic()
	fmt.Fprintf(stderr, "fineserve-gen: internal error: %v (a bug in fineserve-gen; please report it with this stack)\n%s\n", p.Value, p.Stack)
	if a := flushFrom(ctx); a != nil && flushFinished(a, abortHandoff, abortWrite) {
		fmt.Fprintln(stderr, "fineserve-gen: the records of the finished requests are written; no summary")
	}
	return exitInternal
}

// dispatch runs the subcommand named by args[0], or "run" when args[0] is a
// flag (FineServe's command lines have no subcommand).
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if f, ok := subcommands[args[0]]; ok {
			return f(ctx, args[1:], stdout, stderr)
		}
		switch args[0] {
		case "help", "-h", "--help":
			printUsage(stdout)
			return exitOK
		case "version", "--version":
			fmt.Fprintln(stdout, "fineserve-gen", version)
			return exitOK
		}
		if len(args[0]) > 0 && args[0][0] != '-' {
			fmt.Fprintf(stderr, "fineserve-gen: unknown command %q\n\n", args[0])
			printUsage(stderr)
			return exitUsage
		}
	}
	return runCommand(ctx, args, stdout, stderr)
}

var version = "dev"

func printUsage(w io.Writer) {
	fmt.Fprint(w, `fineserve-gen — workload generator and load tester for OpenAI-compatible LLM servers

Usage:
  fineserve-gen [run] [flags]          run a benchmark (FineServe Generator.py flags)
  fineserve-gen mock-server [flags]    serve a vLLM-like mock on 127.0.0.1
  fineserve-gen fit TRACE [flags]      fit Gamma windows and NB bursts to a trace (for --mode parametric)
  fineserve-gen report FILE… [-o F]   HTML report of a run, or a comparison of runs
  fineserve-gen analyze TRACE [flags]  adapter loads a cache of N slots needs (--max-loras), or a prefix trace's reuse
  fineserve-gen synthesize TRACE -o OUT [flags]  a scaled copy of a prefix trace (Mooncake JSONL)
  fineserve-gen merge S1.json S2.json… [-o F]  merge the summaries of a sharded run
  fineserve-gen sweep [run flags] [sweep flags]  capacity: the highest load within the SLO, and its limit
  fineserve-gen plan [run flags] [plan flags]    replicas a whole day of this workload needs within the SLO, window by window
  fineserve-gen config validate|expand FILE      check a run file (--config), or print the settings it gives
  fineserve-gen compare BASE.json NEW.json [--fail-on KEY:+PCT%]  the differences of two runs; exit 99 on a regression

Run "fineserve-gen COMMAND --help" for a command's flags.
`)
}

// signalNotices is what the first and the second signal make a command
// say (nothing: the mock server, for which a signal is the normal way to
// stop, prints its own line).
type signalNotices struct{ first, second string }

// sends are the commands that send requests: a signal's notice speaks of
// the requests in flight only for them.
var sends = []string{"run", "sweep", "plan"}

// signalNotice returns the notices of the command run by args (no
// subcommand, or a flag first: run).
func signalNotice(args []string) signalNotices {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd = args[0]
	}
	switch {
	case cmd == "mock-server":
		return signalNotices{}
	case slices.Contains(sends, cmd) || subcommands[cmd] == nil:
		return signalNotices{
			first:  "stopping (send it again to cancel the requests in flight)",
			second: "second signal: canceling the requests in flight, then writing the records and the summary (a third signal exits at once)",
		}
	}
	return signalNotices{first: "stopping", second: "second signal: stopping now (a third signal exits at once)"}
}

// signalContext returns a context canceled by the first SIGINT or SIGTERM:
// the run stops sending, drains (--drain-timeout), writes every record and
// its summary and exits with exitInterrupted. A second signal cuts the
// drain short: the requests in flight are canceled and recorded as such,
// and the records, summary and report are written from what came; should
// that take more than abortGrace, or a third signal come, the process
// exits at once after the run has written the records it has received
// (see flushFinished). announce says so on the first signal (the mock
// server, for which a signal is the normal way to stop, prints its own
// line instead; a command that sends nothing speaks of no requests).
func signalContext(say signalNotices) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	abort := make(chan chan<- struct{})
	hurry := make(chan struct{})
	ctx = context.WithValue(ctx, abortKey{}, abort)
	ctx = context.WithValue(ctx, hurryKey{}, (<-chan struct{})(hurry))
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	safe.Go(func() {
		sig := <-ch
		if say.first != "" {
			fmt.Fprintf(os.Stderr, "fineserve-gen: %v: %s\n", sig, say.first)
		}
		cancel()
		<-ch
		if say.second != "" {
			fmt.Fprintln(os.Stderr, "fineserve-gen: "+say.second)
		}
		close(hurry)
		t := time.NewTimer(abortGrace)
		select {
		case <-ch:
			fmt.Fprintln(os.Stderr, "fineserve-gen: third signal: writing the finished records and exiting now")
		case <-t.C:
			fmt.Fprintf(os.Stderr, "fineserve-gen: the run did not end within %v of the second signal: writing the finished records and exiting now\n", abortGrace)
		}
		flushFinished(abort, abortHandoff, abortWrite)
		os.Exit(exitInterrupted)
	})
	return ctx, func() { signal.Stop(ch); cancel() }
}

// hurryKey carries the channel closed by a second signal.
type hurryKey struct{}

// hurryFrom returns the channel of ctx closed by a second signal (nil
// outside a signal context).
func hurryFrom(ctx context.Context) <-chan struct{} {
	h, _ := ctx.Value(hurryKey{}).(<-chan struct{})
	return h
}

// abortKey carries the channel a run listens on for a last flush.
type abortKey struct{}

// abortFrom returns the abort channel of ctx (nil outside a signal context):
// the run listens on it.
func abortFrom(ctx context.Context) <-chan chan<- struct{} {
	if a := flushFrom(ctx); a != nil {
		return a
	}
	return nil
}

// flushFrom returns the sending side of ctx's abort channel (nil outside a
// signal context), for flushFinished.
func flushFrom(ctx context.Context) chan chan<- struct{} {
	a, _ := ctx.Value(abortKey{}).(chan chan<- struct{})
	return a
}

// How long a second signal waits for the run to end by itself; then how
// long it waits for the run to take its flush request (no run may be
// collecting results yet) and to write the records.
const (
	abortGrace   = 3 * time.Second
	abortHandoff = 500 * time.Millisecond
	abortWrite   = 5 * time.Second
)

// flushFinished asks the run collecting results to write every record it
// has received to disk, and waits for it. It reports whether that happened.
func flushFinished(abort chan<- chan<- struct{}, handoff, write time.Duration) bool {
	done := make(chan struct{})
	t := time.NewTimer(handoff)
	defer t.Stop()
	select {
	case abort <- done:
	case <-t.C:
		return false
	}
	t.Reset(write)
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// exitCode maps an error to an exit code, printing it: exitUsage for bad
// arguments or input (every problem on its own line), exitInternal for a
// panic (a *safe.Panic), exitFailure for a run that could not be carried
// out.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ue *options.UsageError
	if errors.As(err, &ue) || errors.Is(err, pflag.ErrHelp) {
		return usageExit(stderr, err)
	}
	fmt.Fprintf(stderr, "fineserve-gen: %s\n", termsafe.Lines(err.Error()))
	var p *safe.Panic
	if errors.As(err, &p) {
		return exitInternal
	}
	return exitFailure
}

// usageExit prints every problem of errs, one a line, and returns exitUsage.
func usageExit(stderr io.Writer, errs ...error) int {
	var flat []error
	for _, err := range errs {
		flat = appendLeaves(flat, err)
	}
	switch len(flat) {
	case 0:
		return exitUsage
	case 1:
		fmt.Fprintf(stderr, "fineserve-gen: %s\n", termsafe.Lines(flat[0].Error()))
	default:
		fmt.Fprintf(stderr, "fineserve-gen: %d problems:\n", len(flat))
		for _, err := range flat {
			fmt.Fprintf(stderr, "  %s\n", strings.ReplaceAll(termsafe.Lines(err.Error()), "\n", "\n    "))
		}
	}
	fmt.Fprintln(stderr, "Run 'fineserve-gen run --help' for the flags.")
	return exitUsage
}

// appendLeaves appends the errors joined in err (errors.Join, UsageError),
// flattened, or err itself.
func appendLeaves(out []error, err error) []error {
	if err == nil {
		return out
	}
	if ue, ok := err.(*options.UsageError); ok {
		return appendLeaves(out, ue.Err)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = appendLeaves(out, e)
		}
		return out
	}
	return append(out, err)
}

// parseAll parses args, collecting every bad flag value instead of stopping
// at the first, so they are reported together with the other problems. err
// is what stops parsing: an unknown flag, a missing value, or help.
func parseAll(fs *pflag.FlagSet, args []string) (valueErrs []error, err error) {
	var restore []func()
	fs.VisitAll(func(f *pflag.Flag) {
		orig := f.Value
		f.Value = &lenientValue{Value: orig, name: f.Name, errs: &valueErrs}
		restore = append(restore, func() { f.Value = orig })
	})
	defer func() {
		for _, r := range restore {
			r()
		}
	}()
	err = parseFlags(fs, args)
	return valueErrs, err
}

// lenientValue records the error of a flag value and lets parsing go on.
type lenientValue struct {
	pflag.Value
	name string
	errs *[]error
}

func (v *lenientValue) Set(s string) error {
	err := v.Value.Set(s)
	if err == nil {
		return nil
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		err = fmt.Errorf("want a value of type %s", v.Value.Type())
	}
	*v.errs = append(*v.errs, fmt.Errorf("--%s %q: %w", v.name, s, err))
	return nil
}

// outcome maps the end of a run to its exit code, printing why:
//
//   - exitUsage: bad arguments or input (a *options.UsageError);
//   - exitInterrupted: stopped by a signal (the records and summary of an
//     interrupted run are written, marked interrupted);
//   - exitFailure: the run could not be carried out (server unreachable,
//     --model not served, warm-up failed, an output could not be written);
//   - exitInternal: requests failed with class internal (their work
//     panicked: a bug), whatever the error budget says;
//   - exitBudget: the run completed but missed a target (metrics.Verdict);
//   - exitOK: the run completed within its targets, or a dry run.
func outcome(ctx context.Context, o *options.Options, sum *metrics.Summary, err error, stderr io.Writer) int {
	var ue *options.UsageError
	switch {
	case err != nil && errors.As(err, &ue):
		return exitCode(err, stderr)
	case err != nil && ctx.Err() != nil && (sum == nil || sum.Interrupted):
		fmt.Fprintf(stderr, "fineserve-gen: interrupted: %s\n", termsafe.Lines(err.Error()))
		return exitInterrupted
	case err != nil:
		return exitCode(err, stderr)
	case sum == nil: // dry run
		return exitOK
	case sum.Interrupted:
		fmt.Fprintf(stderr, "fineserve-gen: interrupted; every finished request's record and the summary are written (%d completed, %d failed, %d not sent)\n",
			sum.Completed, sum.Failed, sum.NotSent)
		return exitInterrupted
	}
	code := exitOK
	for _, r := range metrics.Verdict(o.Targets(), sum) {
		fmt.Fprintf(stderr, "fineserve-gen: %s\n", termsafe.Lines(r.Text))
		switch {
		case r.Kind == metrics.InternalError:
			code = exitInternal
		case code == exitOK:
			code = exitBudget
		}
	}
	return code
}

// safeArgs returns args fit for the summary's command line: the API key
// and URL credentials are hidden wherever they appear.
func safeArgs(args []string, secrets *secret.Redactor) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = secrets.String(a)
	}
	return out
}
