package engine

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// bombPNG writes a PNG of w×h pixels at 16 bits per RGBA channel whose
// rows are all zero: a few hundred kilobytes that decode to w·h·8 bytes.
// It is built row by row, so making it costs no memory either.
func bombPNG(t testing.TB, w, h int) []byte {
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+8*w) // filter byte 0, then zeros
	for range h {
		z.Write(row)
	}
	z.Close()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		out.Write(n[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		out.Write(n[:])
	}
	var hdr [13]byte
	binary.BigEndian.PutUint32(hdr[0:], uint32(w))
	binary.BigEndian.PutUint32(hdr[4:], uint32(h))
	hdr[8], hdr[9] = 16, 6 // 16-bit RGBA
	chunk("IHDR", hdr[:])
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// peakRSS reads the process's peak resident set (VmHWM) in bytes.
func peakRSS(t testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

const bombBudget = 1 << 30 // the default ImageBudgetBytes

// TestImageBombsBoundedRSS sends concurrent decompression bombs (a
// ~100 KB PNG declaring 16384x4096 at 16 bits per channel: 512 MiB
// decoded) and checks that the peak RSS grows by less than the
// image budget plus a margin for the decoder's row buffers and the resize:
// decoding is admitted against the budget from the header, so the bombs
// decode one at a time. It runs in a child process, whose peak RSS is its
// own.
func TestImageBombsBoundedRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes four 64-megapixel images")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory multiplies RSS, which this test bounds")
	}
	if os.Getenv("VEMBED_BOMB_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestImageBombsBoundedRSS$", "-test.v")
		cmd.Env = append(os.Environ(), "VEMBED_BOMB_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`bombs: base (\d+) peak (\d+)`).FindSubmatch(out)
		if m == nil {
			if bytes.Contains(out, []byte("SKIP")) {
				t.Skipf("child skipped:\n%s", out)
			}
			t.Fatalf("child printed no measurement:\n%s", out)
		}
		base, _ := strconv.ParseInt(string(m[1]), 10, 64)
		peak, _ := strconv.ParseInt(string(m[2]), 10, 64)
		// The margin: the PNG decoder's two row buffers and zlib state,
		// the resized image and the goroutines' stacks, well under 128 MiB.
		bound := int64(bombBudget + 128<<20)
		t.Logf("peak RSS %d MiB over %d MiB before the bombs (bound %d MiB: image budget %d MiB + 128)", (peak-base)>>20, base>>20, bound>>20, bombBudget>>20)
		if peak-base > bound {
			t.Errorf("concurrent bombs grew the peak RSS by %d MiB, over the bound %d MiB", (peak-base)>>20, bound>>20)
		}
		return
	}
	debug.SetGCPercent(20) // the heap's slack is not what is measured
	e := newEngine(t, func(c *Config) { c.ImageBudgetBytes = bombBudget; c.EncoderCacheBytes = -1; c.EmbeddingCacheBytes = -1 })
	bomb := bombPNG(t, 16384, 4096)
	base := peakRSS(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			// Each its own bytes, so the image cache cannot share them.
			b := append([]byte(nil), bomb...)
			_, errs[i] = e.Embed(context.Background(), Request{Inputs: []Input{{Parts: []Part{Image(b), Text(fmt.Sprint(i))}}}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("bomb %d: %v", i, err)
		}
	}
	fmt.Printf("bombs: base %d peak %d (%d bytes of PNG)\n", base, peakRSS(t), len(bomb))
}
