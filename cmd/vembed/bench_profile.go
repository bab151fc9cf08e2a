package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"

	"github.com/vembed/vembed/internal/atomicfile"
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

// profiling is the state of the profiles of one run. The CPU profile is
// written to a temporary file beside its destination and renamed once
// complete, so an interrupted run leaves no partial profile.
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
	path := *benchProfile.cpu
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
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
		tmp := p.cpuFile.Name()
		err := p.cpuFile.Close()
		if err == nil {
			err = os.Chmod(tmp, 0o644)
		}
		if err == nil {
			err = os.Rename(tmp, *benchProfile.cpu)
		}
		if err != nil {
			os.Remove(tmp)
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
	runtime.GC() // the in-use figures are as of the last collection
	return atomicfile.Write(path, func(w io.Writer) error {
		return pprof.Lookup("allocs").WriteTo(w, 0)
	})
}
