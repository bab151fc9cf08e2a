package pdf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vembed/vembed/synth"
)

// pdftoppmSize runs poppler's pdftoppm (what pdf2image runs) on page 1 of
// data at dpi and returns the size of the image it writes.
func pdftoppmSize(t *testing.T, bin string, data []byte, dpi float64) (int, int) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dpiArg := strconv.FormatFloat(dpi, 'f', -1, 64)
	out, err := exec.Command(bin, "-r", dpiArg, "-f", "1", "-l", "1", "-singlefile", in, filepath.Join(dir, "out")).CombinedOutput()
	if err != nil {
		t.Fatalf("pdftoppm: %v: %s", err, out)
	}
	ppm, err := os.ReadFile(filepath.Join(dir, "out.ppm"))
	if err != nil {
		t.Fatal(err)
	}
	var magic string
	var w, h int
	if _, err := fmt.Fscan(bufio.NewReader(bytes.NewReader(ppm)), &magic, &w, &h); err != nil || magic != "P6" {
		t.Fatalf("pdftoppm wrote %q...: %v", ppm[:min(len(ppm), 16)], err)
	}
	return w, h
}

// TestSizesAsPdftoppm: rendered sizes equal pdftoppm's for odd page sizes,
// resolutions and rotations (skipped where pdftoppm is not installed; on
// Debian it is in poppler-utils).
func TestSizesAsPdftoppm(t *testing.T) {
	bin, err := exec.LookPath("pdftoppm")
	if err != nil {
		t.Skip("pdftoppm (poppler-utils) not installed: sizes not compared with poppler")
	}
	renderer(t) // fills the compilation cache
	r, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDir, MaxPixels: 1 << 26})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		w, h   float64
		rotate int
		dpi    float64
	}{
		{612, 792, 0, 200},
		{612, 792, 0, 600},
		{612, 792, 0, 300},
		{595.28, 841.89, 0, 200},
		{595.28, 841.89, 0, 150},
		{300, 200, 90, 150},
		{300, 200, 270, 200},
		{300, 200, 180, 97},
		{100.2, 100.7, 0, 72},
		{1000.5, 333.3, 0, 97},
		{842, 595, 0, 110},
		{7.3, 9.1, 0, 200},
		{2000, 3000, 0, 96},
	} {
		data := synth.PDF([]synth.PDFPage{{WidthPt: c.w, HeightPt: c.h, Rotate: c.rotate, Text: []string{"size"}}}, synth.PDFOptions{})
		pw, ph := pdftoppmSize(t, bin, data, c.dpi)
		d, err := r.Open(context.Background(), data, "")
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Render(context.Background(), 0, c.dpi)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		if b := p.Image.Bounds(); b.Dx() != pw || b.Dy() != ph {
			t.Errorf("%gx%g pt, /Rotate %d, %g DPI: rendered %dx%d, pdftoppm %dx%d", c.w, c.h, c.rotate, c.dpi, b.Dx(), b.Dy(), pw, ph)
		}
	}
}
