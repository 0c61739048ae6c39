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
	cpuPath, memPath, mutex := p.cpu, p.mem, p.mutex
	for _, o := range []options.Output{{Flag: "--mem-profile", Path: memPath}, {Flag: "--mutex-profile", Path: mutex}} {
		if o.Path != "" { // written at the end: checked now, as the run's outputs are
			if err := options.CheckOutputs([]options.Output{o}); err != nil {
				return nil, err
			}
		}
	}
	if mutex != "" {
		runtime.SetMutexProfileFraction(1) // every contention event: a run's are few but long
	}
	var cpu *os.File
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		cpu = f
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return err
			}
		}
		if mutex != "" {
			if err := writeProfile("--mutex-profile", mutex, "mutex"); err != nil {
				return err
			}
		}
		if memPath != "" {
			f, err := os.Create(memPath)
			if err != nil {
				return fmt.Errorf("--mem-profile: %w", err)
			}
			runtime.GC()
			err = pprof.WriteHeapProfile(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
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
