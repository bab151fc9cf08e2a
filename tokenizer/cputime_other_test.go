//go:build !unix

package tokenizer

import "time"

// cpuTime is unavailable here; benchmarks then report wall-clock figures only.
func cpuTime() time.Duration { return 0 }
