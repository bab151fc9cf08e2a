package kernels

import (
	"testing"

	"github.com/vembed/vembed/internal/memstat"
)

// vmRSS is the process's resident set in KiB; it skips where it cannot be
// read.
func vmRSS(t *testing.T) int {
	t.Helper()
	n, err := memstat.ResidentKiB()
	if err != nil {
		t.Skip(err)
	}
	return n
}

// TestPackedMemory checks that packed memory is given back: the pages
// trimPacked cuts off, then the rest by freePacked.
func TestPackedMemory(t *testing.T) {
	const n, keep = 32 << 20, 4<<20 + 100
	mem, free := allocPacked(n)
	if mem == nil || !free {
		t.Fatal("no anonymous memory")
	}
	for i := 0; i < n; i += 4096 {
		mem[i] = 1
	}
	r0 := vmRSS(t)
	mem = trimPacked(mem, keep)
	r1 := vmRSS(t)
	if len(mem) != keep || mem[keep-1] != 0 || mem[0] != 1 {
		t.Fatalf("trimmed memory: len %d", len(mem))
	}
	freePacked(mem)
	r2 := vmRSS(t)
	if r0-r1 < (n-keep)/1024*3/4 || r1-r2 < keep/1024*3/4 {
		t.Errorf("resident set %d KiB, %d after trimming %d MiB to %d bytes, %d after freeing", r0, r1, n>>20, keep, r2)
	}
}
