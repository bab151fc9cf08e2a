//go:build linux

package bench

import "syscall"

// peakRSS returns the largest resident set size of this process so far,
// in bytes (Linux reports ru_maxrss in KiB).
func peakRSS() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return int64(ru.Maxrss) << 10, true
}
