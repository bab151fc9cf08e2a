//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// cpuTime is the processor time the process has used. Benchmarks report
// throughput per CPU second besides wall-clock time, because on a shared
// machine the wall clock mostly measures the other processes.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
