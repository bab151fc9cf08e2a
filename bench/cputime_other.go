//go:build !unix

package bench

import "time"

// processCPU reports that this OS offers no process CPU time here.
func processCPU() (time.Duration, bool) { return 0, false }
