//go:build !unix

package index

import "time"

// cpuTime is unknown on this system: the CPU figures read zero.
func cpuTime() time.Duration { return 0 }
