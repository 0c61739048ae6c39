package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/internal/editdist"
	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"

	"github.com/spf13/pflag"
)

// newFlagSet returns the flag set of the subcommand name: its flags listed
// in the order they are declared, its errors returned rather than printed.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args with fs; an unknown flag's error names the
// command's flag nearest to it: "unknown flag: --request-rat (did you mean
// --request-rate?)".
func parseFlags(fs *pflag.FlagSet, args []string) error {
	return suggestFlag(fs, fs.Parse(args))
}

// usageFail prints each problem as subcommand name's, then where its flags
// are told, and returns exitUsage. Text from files is made terminal-safe.
func usageFail(stderr io.Writer, name string, errs ...error) int {
	for _, err := range errs {
		fmt.Fprintf(stderr, "fineserve-gen %s: %s\n", name, termsafe.Lines(err.Error()))
	}
	fmt.Fprintf(stderr, "Run 'fineserve-gen %s --help' for the flags.\n", name)
	return exitUsage
}

// parseSubcommand parses subcommand name's flags: --help prints help (its
// usage and what it does) and the flags, and a bad flag fails as usage;
// either way done is true and code is the exit code.
func parseSubcommand(fs *pflag.FlagSet, args []string, name, help string, stdout, stderr io.Writer) (code int, done bool) {
	err := parseFlags(fs, args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(stdout, "%s\n%s", help, fs.FlagUsages())
		return exitOK, true
	}
	return usageFail(stderr, name, err), true
}

// suggestFlag adds to an unknown-flag error the nearest flag of fs, if one
// is near enough to be a typo; any other error is returned as it is.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	typed := ne.GetSpecifiedName()
	if short := ne.GetSpecifiedShortnames(); short != "" {
		// -request-rate: one dash, read by pflag as shorthand letters.
		if typed = short; len(typed) < 2 {
			return err
		}
	}
	typed, _, _ = strings.Cut(typed, "=")
	if best := nearestFlag(fs, typed); best != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, best)
	}
	return err
}

// nearestFlag returns the flag of fs nearest to name by edit distance, when
// the distance is at most a third of name's length (at least 1), or the one
// flag name is a prefix of; else "".
func nearestFlag(fs *pflag.FlagSet, name string) string {
	best, bestD := "", max(1, len(name)/3)+1
	var prefixed []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editdist.Distance(name, f.Name); d < bestD || d == bestD && best != "" && f.Name < best {
			best, bestD = f.Name, d
		}
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			prefixed = append(prefixed, f.Name)
		}
	})
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}
