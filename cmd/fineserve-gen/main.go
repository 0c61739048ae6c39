// Command fineserve-gen is a workload generator and load tester for
// OpenAI-compatible LLM servers. It parses the command line, calls the
// runner or a subcommand, and maps the outcome to an exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// Exit codes.
const (
	exitOK          = 0   // the run completed within its error budget
	exitFailure     = 1   // the run could not be carried out (e.g. server unreachable)
	exitUsage       = 2   // bad arguments or input files
	exitBudget      = 3   // the run completed but too many requests failed
	exitInterrupted = 130 // stopped by a signal
)

// subcommands maps a subcommand name to its entry point.
var subcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"run":         runCommand,
	"mock-server": mockServerCommand,
}

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
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

Run "fineserve-gen run --help" or "fineserve-gen mock-server --help" for flags.
`)
}

// signalContext returns a context canceled by the first SIGINT or SIGTERM;
// a second one exits at once (records already written stay on disk).
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		cancel()
		<-ch
		fmt.Fprintln(os.Stderr, "fineserve-gen: second signal, exiting now")
		os.Exit(exitInterrupted)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// exitCode maps an error to an exit code, printing it.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "fineserve-gen: %v\n", err)
	var ue *runner.UsageError
	if errors.As(err, &ue) || errors.Is(err, pflag.ErrHelp) {
		return exitUsage
	}
	return exitFailure
}
