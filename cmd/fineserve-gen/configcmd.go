package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/runfile"
)

const configUsage = `Usage: fineserve-gen config validate FILE [--for run|sweep|plan]
       fineserve-gen config expand FILE [--for run|sweep|plan]

validate checks a run file (YAML or JSON; a summary's settings too) as the
command would read it — every key a flag, every value of its type, the
settings valid together — and sends nothing. expand prints the settings a
run of the file would have, every flag with its value, given or default:
a run file that --config reads back to the same run (docs/EXPERIMENTS.md).

`

// configCommand checks or expands a run file for run, sweep or plan.
func configCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config")
	forCmd := fs.String("for", "run", "the command the file is for: run, sweep or plan (their own flags are keys too)")
	if code, done := parseSubcommand(fs, args, "config", configUsage, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 2 || (fs.Arg(0) != "validate" && fs.Arg(0) != "expand") {
		return usageFail(stderr, "config", fmt.Errorf("want validate FILE or expand FILE (got %d arguments)", fs.NArg()))
	}
	action, path := fs.Arg(0), fs.Arg(1)
	if _, ok := commandFlags[*forCmd]; !ok {
		return usageFail(stderr, "config", fmt.Errorf("--for %q: want run, sweep or plan", *forCmd))
	}
	extra, check := commandOwn(*forCmd)
	o := options.Defaults()
	var prof profiles
	var help bytes.Buffer
	cfs, file, errs, code, ok := parseRunSeries([]string{"--" + runfile.FlagName, path}, &o, &prof, extra, "", &help, stderr)
	if !ok {
		return code
	}
	if check != nil {
		errs = append(errs, check(cfs, &o)...)
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = located(file, errs)
	var series *runfile.Series
	if file != nil {
		series = file.Series
	}
	if series != nil && *forCmd != "run" {
		errs = append(errs, fmt.Errorf("%s: line %d: a list of %s values is a series of runs, which fineserve-gen run makes", path, series.Line, series.Flag))
	}
	if series != nil && len(errs) == 0 {
		// Each run of the series is the file with one value.
		errs = seriesErrors([]string{"--" + runfile.FlagName, path}, file, extra)
	}
	if len(errs) > 0 {
		return usageExit(stderr, errs...)
	}
	switch action {
	case "validate":
		n := 0
		cfs.Visit(func(f *pflag.Flag) {
			if f.Name != runfile.FlagName {
				n++
			}
		})
		runs := ""
		if series != nil {
			n++
			runs = fmt.Sprintf("; a series of %d runs over --%s", len(series.Values), series.Flag)
		}
		fmt.Fprintf(stdout, "%s: valid for %s (%d settings%s; nothing was sent)\n", path, *forCmd, n, runs)
	case "expand":
		if err := runfile.Expand(stdout, cfs, nil, series); err != nil {
			fmt.Fprintf(stderr, "fineserve-gen: config expand: %v\n", err)
			return exitFailure
		}
	}
	return exitOK
}

// commandFlags adds each command's own flags to the run's (nil: run's
// alone), as the commands themselves do.
var commandFlags = map[string]func(*pflag.FlagSet){
	"run": nil,
	"sweep": func(fs *pflag.FlagSet) {
		add, _ := commandOwn("sweep")
		add(fs)
	},
	"plan": func(fs *pflag.FlagSet) {
		add, _ := commandOwn("plan")
		add(fs)
	},
}

// commandOwn returns what adds cmd's own flags to the run's (nil: run's
// alone) and the checks cmd makes of them and of the run's options before
// it starts (nil: none; the run's own are o.Validate), as the commands
// themselves do.
func commandOwn(cmd string) (add func(*pflag.FlagSet), check func(*pflag.FlagSet, *options.Options) []error) {
	switch cmd {
	case "sweep":
		sf := defaultSweepFlags()
		add = func(fs *pflag.FlagSet) { addSweepFlags(fs, &sf) }
		check = func(fs *pflag.FlagSet, o *options.Options) []error {
			if _, _, err := sweepSetup(fs.Changed, o, &sf); err != nil {
				return []error{err}
			}
			return nil
		}
	case "plan":
		sf, pf, vf := defaultSweepFlags(), defaultPlanFlags(), defaultVerifyFlags()
		add = func(fs *pflag.FlagSet) {
			addSearchFlags(fs, &sf)
			addPlanFlags(fs, &pf)
			addVerifyFlags(fs, &vf)
		}
		check = func(fs *pflag.FlagSet, o *options.Options) []error {
			errs := append(planChecks(fs, o, &sf, &pf), verifyChecks(o, &vf)...)
			if err := experimentOnlyRun("plan", o); err != nil {
				errs = append(errs, err)
			}
			return errs
		}
	}
	return add, check
}

// The defaults of the sweep's, the plan's and plan --verify's own flags
// that are not their flags' (the commands and config share them).
func defaultSweepFlags() sweepFlags {
	return sweepFlags{idleQuiet: time.Second, idleTimeout: 2 * time.Minute, probe: true}
}
func defaultPlanFlags() planFlags {
	return planFlags{window: 5 * time.Minute, downDelay: 5 * time.Minute}
}
func defaultVerifyFlags() verifyFlags { return verifyFlags{span: time.Hour, scale: 1} }
