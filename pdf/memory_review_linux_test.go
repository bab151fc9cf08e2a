//go:build linux

package pdf

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statusKB reads a "Vm..." line of /proc/self/status in KiB.
func statusKB(t *testing.T, key string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == key+":" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skipf("no %s in /proc/self/status", key)
	return 0
}

// TestMemoryBounded: a small PDF whose content stream inflates to 1 GiB
// raises the process's peak resident memory by about its instance's cap at
// most (the instance traps at the cap), and the pages come back as soon as
// the instance is discarded.
func TestMemoryBounded(t *testing.T) {
	renderer(t)
	const maxBytes, maxPixels = 16 << 20, 1 << 20
	r, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDir, Timeout: 30 * time.Second, MaxBytes: maxBytes, MaxPixels: maxPixels})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bomb := contentBomb(1 << 30)
	checkWorks(t, r, "start") // the first instance's code and tables
	debug.FreeOSMemory()
	// Writing 5 to clear_refs resets the peak (VmHWM) to the current RSS.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident size: %v", err)
	}
	base := statusKB(t, "VmRSS")
	d, err := r.Open(context.Background(), bomb, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Render(context.Background(), 0, 72)
	d.Close()
	if err == nil {
		t.Fatal("a content stream of 1 GiB rendered inside a small instance")
	}
	peak := statusKB(t, "VmHWM") - base
	after := statusKB(t, "VmRSS") - base
	// The instance's cap as NewRenderer sizes it, plus slack for the
	// process's own allocations around the call.
	capKB := int64(maxBytes+8*maxPixels+256<<20) >> 10
	t.Logf("1 GiB content stream: %v; peak resident +%d MiB (instance cap %d MiB), %+d MiB after", err, peak>>10, capKB>>10, after>>10)
	if peak > capKB+128<<10 {
		t.Errorf("peak resident memory rose by %d MiB, the instance's cap is %d MiB", peak>>10, capKB>>10)
	}
	if after > 64<<10 {
		t.Errorf("resident memory stays %d MiB above its start after the instance was discarded", after>>10)
	}
	checkWorks(t, r, "the bomb")
}
