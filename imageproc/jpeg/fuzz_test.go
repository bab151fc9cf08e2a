package jpeg

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FuzzDecode checks that arbitrary input never panics or hangs, that
// DecodeConfig and Decode agree on the size, that a decoded image has the
// advertised shape, and that the parallel path decodes it identically. Seeds: every file in testdata. The seeds are a few
// kilobytes each, so keep minimization short, e.g.
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 2s
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jpg"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, cerr := DecodeConfig(data)
		img, err := Decode(data, 1<<18)
		if err != nil {
			return
		}
		if cerr != nil {
			t.Fatalf("Decode succeeded but DecodeConfig failed: %v", cerr)
		}
		if img.Width != info.Width || img.Height != info.Height || len(img.Pix) != 3*img.Width*img.Height {
			t.Fatalf("image %dx%d with %d bytes, config %dx%d", img.Width, img.Height, len(img.Pix), info.Width, info.Height)
		}
		// The banded parallel path (one-MCU-row bands on three workers)
		// must give the same pixels.
		minPix, band := parallelMinPixels, bandMCURows
		procs := runtime.GOMAXPROCS(3)
		parallelMinPixels, bandMCURows = 0, 1
		par, perr := Decode(data, 1<<18)
		parallelMinPixels, bandMCURows = minPix, band
		runtime.GOMAXPROCS(procs)
		if perr != nil || !bytes.Equal(par.Pix, img.Pix) {
			t.Fatalf("parallel decoding differs from serial (error %v)", perr)
		}
	})
}
