package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// startProfiles starts a CPU profile and arranges a heap profile and a
// mutex contention profile, for --cpu-profile, --mem-profile and
// --mutex-profile. The returned function stops and writes them.
func startProfiles(p profiles) (func() error, error) {
	// Written at the end: checked now, as the run's outputs are.
	var late []options.Output
	for _, o := range []options.Output{{Flag: "--mem-profile", Path: p.mem}, {Flag: "--mutex-profile", Path: p.mutex}} {
		if o.Path != "" {
			late = append(late, o)
		}
	}
	if err := options.CheckOutputs(late); err != nil {
		return nil, err
	}
	var cpu *os.File
	var cpuW *errWriter
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		// pprof drops the profile's write error: the writer keeps it.
		cpuW = &errWriter{w: f}
		if err := pprof.StartCPUProfile(cpuW); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		cpu = f
	}
	var mutexWas int
	if p.mutex != "" {
		mutexWas = runtime.SetMutexProfileFraction(1) // every contention event: a run's are few but long
	}
	// Every profile that fails is named, and the others are still written.
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			err := cpuW.err
			if cerr := cpu.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("--cpu-profile %s: %w", p.cpu, err))
			}
		}
		if p.mutex != "" {
			err := writeProfile("--mutex-profile", p.mutex, "mutex")
			runtime.SetMutexProfileFraction(mutexWas)
			if err != nil {
				errs = append(errs, err)
			}
		}
		if p.mem != "" {
			runtime.GC()
			if err := writeProfile("--mem-profile", p.mem, "heap"); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}, nil
}

// errWriter passes writes to w and keeps the first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// writeProfile writes the runtime profile named name to path.
func writeProfile(flag, path, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	err = pprof.Lookup(name).WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return nil
}
