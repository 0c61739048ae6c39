package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// startProfiles starts a CPU profile and arranges a heap profile, for
// --cpu-profile and --mem-profile. The returned function stops and writes
// them.
func startProfiles(cpuPath, memPath string) (func() error, error) {
	if memPath != "" { // written at the end: checked now, as the run's outputs are
		if err := options.CheckOutputs([]options.Output{{Flag: "--mem-profile", Path: memPath}}); err != nil {
			return nil, err
		}
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
