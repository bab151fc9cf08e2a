package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/internal/pngbomb"
)

// procStatus reads a memory figure (VmRSS, VmHWM) of a process in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", field, v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestServeImageBombsBoundedRSS sends vembed serve, running as a process
// with its default budgets and garbage collector settings, concurrent
// decompression bombs over HTTP: PNGs of ~100 KB declaring 16384x4096 at
// 16 bits per channel, 512 MiB each once decoded. Images are admitted
// against --image-budget from their headers, so the peak RSS stays under
// the documented bound: the resident size before the bombs (the model and
// the runtime) plus the image budget plus 256 MiB for the decoder's rows,
// the resized images and the garbage collector's slack. Once idle, the
// server gives the memory back. Before, 8 such requests peaked at 6 GB and
// the idle server kept gigabytes for minutes.
func TestServeImageBombsBoundedRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes four 64-megapixel images")
	}
	const budget = 1 << 30 // --image-budget's default
	p := startServeProcess(t, "--embedding-cache", "-1")
	pid := p.cmd.Process.Pid
	bomb := pngbomb.Make(16384, 4096)
	base := procStatus(t, pid, "VmRSS")
	const bombs = 4
	start := time.Now()
	var wg sync.WaitGroup
	status := make([]int, bombs)
	for i := range bombs {
		wg.Go(func() {
			// Different bytes for the same image: nothing is shared.
			b64 := base64.StdEncoding.EncodeToString(pngbomb.Tag(bomb, fmt.Sprint(i)))
			resp, err := http.Post(p.url+"/v1/embeddings", "application/json", strings.NewReader(`{"input":[{"image":"`+b64+`"}]}`))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if status[i] = resp.StatusCode; status[i] != 200 {
				t.Errorf("bomb %d: %d %s", i, resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	peak := procStatus(t, pid, "VmHWM")
	bound := base + budget + 256<<20
	// Memory goes back to the system within a few seconds of idling.
	var idle int64
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if idle = procStatus(t, pid, "VmRSS"); idle < base+128<<20 || time.Now().After(deadline) {
			break
		}
	}
	idleAfter := time.Since(start) - took
	t.Logf("%d bombs of %d KB in %v: RSS %d MiB before, peak %d MiB (bound %d MiB = before + image budget %d MiB + 256), %d MiB %v after the burst",
		bombs, len(bomb)>>10, took.Round(time.Millisecond), base>>20, peak>>20, bound>>20, budget>>20, idle>>20, idleAfter.Round(100*time.Millisecond))
	if peak > bound {
		t.Errorf("peak RSS %d MiB over the bound %d MiB", peak>>20, bound>>20)
	}
	if idle >= base+128<<20 {
		t.Errorf("RSS %d MiB 15 s after the burst: memory not given back (%d MiB before it)", idle>>20, base>>20)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
