package main

import (
	"fmt"
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
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		cpu = f
	}
	var mutexWas int
	if p.mutex != "" {
		mutexWas = runtime.SetMutexProfileFraction(1) // every contention event: a run's are few but long
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return err
			}
		}
		if p.mutex != "" {
			err := writeProfile("--mutex-profile", p.mutex, "mutex")
			runtime.SetMutexProfileFraction(mutexWas)
			if err != nil {
				return err
			}
		}
		if p.mem != "" {
			runtime.GC()
			return writeProfile("--mem-profile", p.mem, "heap")
		}
		return nil
	}, nil
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
	return err
}
