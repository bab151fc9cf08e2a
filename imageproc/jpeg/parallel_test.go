package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	gojpeg "image/jpeg"
	"math/rand/v2"
	"runtime"
	"testing"
)

// forceParallel sends every image through the parallel path with bands of
// the given number of MCU rows and at least three workers (so that bands
// complete out of order), restoring the defaults when the test ends.
func forceParallel(t *testing.T, rows int) {
	t.Helper()
	minPix, band := parallelMinPixels, bandMCURows
	procs := runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 3))
	parallelMinPixels, bandMCURows = 0, rows
	t.Cleanup(func() {
		parallelMinPixels, bandMCURows = minPix, band
		runtime.GOMAXPROCS(procs)
	})
}

// decodeSerial decodes on the calling goroutine only.
func decodeSerial(data []byte) (*Image, error) {
	minPix := parallelMinPixels
	parallelMinPixels = 1 << 62
	defer func() { parallelMinPixels = minPix }()
	return Decode(data, 1<<26)
}

// TestParallelTestdata holds the parallel path to libjpeg-turbo's pixels on
// every reference case (restart intervals, all sampling layouts,
// progressive and multi-scan files, CMYK), with bands of one and of three
// MCU rows.
func TestParallelTestdata(t *testing.T) {
	for _, rows := range []int{1, 3} {
		t.Run(fmt.Sprint("band", rows), func(t *testing.T) {
			forceParallel(t, rows)
			checkTestdata(t)
		})
	}
}

// TestParallelMatchesSerial compares the two paths on generated images of
// odd sizes, whose last band is partial and whose MCUs overhang the edges.
func TestParallelMatchesSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	var files [][]byte
	for _, sz := range [][2]int{{1, 1}, {17, 9}, {333, 517}, {640, 48}, {130, 250}} {
		rgba := image.NewRGBA(image.Rect(0, 0, sz[0], sz[1]))
		gray := image.NewGray(rgba.Rect)
		for i := range rgba.Pix {
			rgba.Pix[i] = uint8(rng.IntN(256))
		}
		for y := range sz[1] {
			for x := range sz[0] {
				gray.SetGray(x, y, color.Gray{uint8(x*3 + y)})
			}
		}
		for _, m := range []image.Image{rgba, gray} {
			var buf bytes.Buffer
			if err := gojpeg.Encode(&buf, m, &gojpeg.Options{Quality: 1 + rng.IntN(100)}); err != nil {
				t.Fatal(err)
			}
			files = append(files, buf.Bytes())
		}
	}
	for _, rows := range []int{1, 2, 5} {
		forceParallel(t, rows)
		for i, data := range files {
			want, err := decodeSerial(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(data, 1<<26)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Pix, want.Pix) {
				t.Errorf("file %d (%dx%d), bands of %d MCU rows: parallel and serial pixels differ", i, want.Width, want.Height, rows)
			}
			// A cut anywhere in the scan data fails the same way on both
			// paths, with every worker stopped.
			cut := data[:len(data)*(1+rng.IntN(9))/10]
			_, errS := decodeSerial(cut)
			_, errP := Decode(cut, 1<<26)
			if (errS == nil) != (errP == nil) || errP != nil && !errors.Is(errP, ErrCorrupt) {
				t.Errorf("file %d cut to %d bytes: serial error %v, parallel error %v", i, len(cut), errS, errP)
			}
		}
	}
}

// TestDecodeRows checks that the row callback sees every row once, in
// order, already holding its final pixels, on both paths.
func TestDecodeRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	m := image.NewRGBA(image.Rect(0, 0, 97, 203))
	for i := range m.Pix {
		m.Pix[i] = uint8(rng.IntN(256))
	}
	var buf bytes.Buffer
	if err := gojpeg.Encode(&buf, m, &gojpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprint("parallel=", parallel), func(t *testing.T) {
			if parallel {
				forceParallel(t, 1)
			}
			seen := make([]uint8, 97*203*3)
			next, calls := 0, 0
			img, err := DecodeRows(buf.Bytes(), 1<<26, func(pix []uint8, y0, y1 int) {
				calls++
				if y0 != next || y1 <= y0 {
					t.Errorf("rows [%d, %d) after %d", y0, y1, next)
				}
				next = y1
				copy(seen[y0*97*3:y1*97*3], pix[y0*97*3:y1*97*3])
			})
			if err != nil {
				t.Fatal(err)
			}
			if next != 203 {
				t.Errorf("rows up to %d delivered, want 203", next)
			}
			if !bytes.Equal(seen, img.Pix) {
				t.Error("rows changed after they were delivered")
			}
			t.Logf("%d calls", calls)
		})
	}
}
