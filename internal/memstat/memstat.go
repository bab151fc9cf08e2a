// Package memstat reads the process's own memory figures, for tests that
// check what a change does to the resident set.
package memstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ResidentKiB is the process's resident set in KiB (VmRSS of
// /proc/self/status); it fails where that file does not exist.
func ResidentKiB() (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("memstat: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return 0, fmt.Errorf("memstat: VmRSS %q: %w", l, err)
			}
			return n, nil
		}
	}
	return 0, errors.New("memstat: no VmRSS line in /proc/self/status")
}
