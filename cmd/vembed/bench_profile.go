package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiles of the end-to-end benchmark: the CPU profile covers the measured
// runs only (after loading and the warm-up), so that it shows where a
// request's time goes; the allocation profile is written at the end and, as
// Go keeps it, counts every allocation since the process started.

type profileFlags struct {
	cpu, mem *string
}

var benchProfile profileFlags

func init() {
	benchFlagHooks = append(benchFlagHooks, func(fs *flag.FlagSet) {
		benchProfile.cpu = fs.String("cpuprofile", "", "write a CPU profile of the measured --model runs to `file` (go tool pprof)")
		benchProfile.mem = fs.String("memprofile", "", "write an allocation profile to `file` after the --model runs (go tool pprof -sample_index=alloc_space)")
	})
}

// profiling is the state of the profiles of one run.
type profiling struct {
	cpuFile *os.File
}

// checkProfileFlags rejects profile flags that would profile nothing.
func checkProfileFlags(withModel bool) error {
	if !withModel && (*benchProfile.cpu != "" || *benchProfile.mem != "") {
		return errors.New("--cpuprofile and --memprofile profile the --model benchmark; add --model")
	}
	return nil
}

// startProfiles starts the CPU profile if one was asked for.
func startProfiles() (*profiling, error) {
	p := &profiling{}
	if *benchProfile.cpu == "" {
		return p, nil
	}
	f, err := os.Create(*benchProfile.cpu)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	p.cpuFile = f
	return p, nil
}

// stop ends the CPU profile and writes the allocation profile.
func (p *profiling) stop() error {
	var errs []error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
		}
		p.cpuFile = nil
	}
	if *benchProfile.mem != "" {
		if err := writeAllocProfile(*benchProfile.mem); err != nil {
			errs = append(errs, fmt.Errorf("--memprofile: %w", err))
		}
	}
	return errors.Join(errs...)
}

func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the in-use figures are as of the last collection
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
