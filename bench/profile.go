package bench

import (
	"errors"
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

// profiling is the state of the profiles of one run. The CPU profile is
// written to a temporary file beside its destination and renamed once
// complete, so an interrupted run leaves no partial profile.
type profiling struct {
	cpuPath, memPath string
	cpuFile          *os.File
}

// startProfiles starts the CPU profile if cpuPath is set; memPath, if set,
// receives the allocation profile when the profiling stops.
func startProfiles(cpuPath, memPath string) (*profiling, error) {
	p := &profiling{cpuPath: cpuPath, memPath: memPath}
	if cpuPath == "" {
		return p, nil
	}
	f, err := os.CreateTemp(filepath.Dir(cpuPath), "."+filepath.Base(cpuPath)+".tmp*")
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
			err = os.Rename(tmp, p.cpuPath)
		}
		if err != nil {
			os.Remove(tmp)
			errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
		}
		p.cpuFile = nil
	}
	if p.memPath != "" {
		if err := writeAllocProfile(p.memPath); err != nil {
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
