package pdf

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// One Renderer for the package's tests: compiling PDFium takes seconds.
// TestMain closes it.
var (
	sharedOnce     sync.Once
	sharedRenderer *Renderer
	sharedCacheDir string
	sharedErr      error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedRenderer != nil {
		sharedRenderer.Close()
	}
	os.Exit(code)
}

// testOptions bound the shared renderer tightly enough for the hostile
// tests to reach the bounds quickly.
var testOptions = Options{Workers: 2, MaxPixels: 4 << 20, MaxBytes: 64 << 20, Timeout: 20 * time.Second}

func renderer(t testing.TB) *Renderer {
	t.Helper()
	sharedOnce.Do(func() {
		// A cache kept across runs and fuzz worker processes, each of
		// which would otherwise compile PDFium again.
		sharedCacheDir = filepath.Join(os.TempDir(), "vembed-pdf-test-cache")
		opts := testOptions
		opts.CacheDir = sharedCacheDir
		sharedRenderer, sharedErr = NewRenderer(opts)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedRenderer
}

// testImage is a photograph-like pattern: smooth gradients with sharp
// edges, so a misplaced or resampled pixel shows.
func testImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{byte(x * 255 / w), byte(y * 255 / h), byte((x ^ y) & 0xff), 255}
			if (x/16+y/16)%2 == 0 {
				c.B = 255 - c.B
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

func open(t testing.TB, data []byte, password string) *Document {
	t.Helper()
	d, err := renderer(t).Open(context.Background(), data, password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestPagesAndSizes(t *testing.T) {
	data := synth.PDF([]synth.PDFPage{
		{WidthPt: 612, HeightPt: 792},
		{WidthPt: 300, HeightPt: 200, Rotate: 90},
		{WidthPt: 595.28, HeightPt: 841.89},
	}, synth.PDFOptions{})
	d := open(t, data, "")
	if d.NumPages() != 3 {
		t.Fatalf("NumPages = %d, want 3", d.NumPages())
	}
	want := [][2]float64{{612, 792}, {200, 300}, {595.28, 841.89}}
	for i, wt := range want {
		w, h, err := d.PageSize(i)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(w-wt[0]) > 0.01 || math.Abs(h-wt[1]) > 0.01 {
			t.Errorf("page %d size %gx%g, want %gx%g", i, w, h, wt[0], wt[1])
		}
	}
	// Sizes as pdftoppm computes them: ceil(points * dpi / 72).
	for i, px := range [][2]int{{1700, 2200}, {556, 834}, {1654, 2339}} {
		p, err := d.Render(context.Background(), i, 200)
		if err != nil {
			t.Fatal(err)
		}
		if b := p.Image.Bounds(); b.Dx() != px[0] || b.Dy() != px[1] || p.DPI != 200 {
			t.Errorf("page %d rendered %dx%d at %g DPI, want %dx%d at 200", i, b.Dx(), b.Dy(), p.DPI, px[0], px[1])
		}
	}
	if _, _, err := d.PageSize(3); err == nil {
		t.Error("PageSize(3) of 3 pages: no error")
	}
	if _, err := d.Render(context.Background(), -1, 200); err == nil {
		t.Error("Render(-1): no error")
	}
}

// TestRenderMatchesImage: an image-only page whose size in points equals
// the image's in pixels, rendered at 72 DPI, gives the image back.
func TestRenderMatchesImage(t *testing.T) {
	src := testImage(320, 240)
	d := open(t, synth.PDF([]synth.PDFPage{{WidthPt: 320, HeightPt: 240, Image: src}}, synth.PDFOptions{}), "")
	p, err := d.Render(context.Background(), 0, 72)
	if err != nil {
		t.Fatal(err)
	}
	if p.Image.Bounds() != src.Bounds() {
		t.Fatalf("rendered %v, want %v", p.Image.Bounds(), src.Bounds())
	}
	maxDiff, sum := 0, 0
	for i := range src.Pix {
		if i%4 == 3 {
			if p.Image.Pix[i] != 255 {
				t.Fatalf("alpha %d at byte %d", p.Image.Pix[i], i)
			}
			continue
		}
		diff := int(src.Pix[i]) - int(p.Image.Pix[i])
		if diff < 0 {
			diff = -diff
		}
		maxDiff = max(maxDiff, diff)
		sum += diff
	}
	mean := float64(sum) / float64(len(src.Pix)*3/4)
	t.Logf("image-only page at 72 DPI vs source: max |diff| %d, mean %.4f (of 255)", maxDiff, mean)
	if maxDiff > 8 || mean > 0.5 {
		t.Errorf("max diff %d, mean %.3f: the render is not the image", maxDiff, mean)
	}
}

func TestText(t *testing.T) {
	lines := []string{"Hello PDFium world", "second line (with parens) 42"}
	d := open(t, synth.PDF([]synth.PDFPage{{WidthPt: 400, HeightPt: 300, Text: lines}, {WidthPt: 100, HeightPt: 100}}, synth.PDFOptions{}), "")
	p, err := d.Render(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(p.Text); strings.Join(got, " ") != strings.Join(strings.Fields(strings.Join(lines, " ")), " ") {
		t.Errorf("text %q, want the lines %q", p.Text, lines)
	}
	if !strings.Contains(p.Text, "\n") || strings.Contains(p.Text, "\r") {
		t.Errorf("text %q: lines should be separated by \\n", p.Text)
	}
	// The text is drawn: dark pixels near the top left, white elsewhere.
	dark := 0
	for i := 0; i < len(p.Image.Pix); i += 4 {
		if p.Image.Pix[i] < 128 {
			dark++
		}
	}
	if dark == 0 || p.Image.Pix[len(p.Image.Pix)-4] != 255 {
		t.Errorf("%d dark pixels, last pixel %v: text not drawn on white", dark, p.Image.Pix[len(p.Image.Pix)-4:])
	}
	blank, err := d.Render(context.Background(), 1, 72)
	if err != nil {
		t.Fatal(err)
	}
	if blank.Text != "" {
		t.Errorf("blank page text %q", blank.Text)
	}
	for i, v := range blank.Image.Pix {
		if v != 255 {
			t.Fatalf("blank page byte %d = %d, want white", i, v)
		}
	}
}

func TestEncrypted(t *testing.T) {
	data := synth.PDF([]synth.PDFPage{{WidthPt: 300, HeightPt: 200, Text: []string{"secret words"}}}, synth.PDFOptions{UserPassword: "s3cret", OwnerPassword: "owner"})
	r := renderer(t)
	if _, err := r.Open(context.Background(), data, ""); !errors.Is(err, ErrEncrypted) {
		t.Errorf("no password: %v, want ErrEncrypted", err)
	}
	if _, err := r.Open(context.Background(), data, "wrong"); !errors.Is(err, ErrPassword) {
		t.Errorf("wrong password: %v, want ErrPassword", err)
	}
	for _, pw := range []string{"s3cret", "owner"} {
		d := open(t, data, pw)
		p, err := d.Render(context.Background(), 0, 72)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(p.Text) != "secret words" {
			t.Errorf("password %q: text %q", pw, p.Text)
		}
	}
}

func TestMaxPixels(t *testing.T) {
	d := open(t, synth.PDFHugePage(), "")
	w, h, err := d.PageSize(0)
	if err != nil || w != 14400 || h != 14400 {
		t.Fatalf("size %gx%g, %v", w, h, err)
	}
	p, err := d.Render(context.Background(), 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Image.Bounds()
	if int64(b.Dx())*int64(b.Dy()) > testOptions.MaxPixels || p.DPI >= 200 {
		t.Fatalf("200x200 in page: %v at %g DPI, limit %d pixels", b, p.DPI, testOptions.MaxPixels)
	}
	if pw, ph := PixelSize(w, h, p.DPI); pw != b.Dx() || ph != b.Dy() {
		t.Errorf("reported DPI %g gives %dx%d, image is %v", p.DPI, pw, ph, b)
	}
	t.Logf("200x200-inch page asked at 200 DPI: %dx%d at %.2f DPI", b.Dx(), b.Dy(), p.DPI)
	if !strings.Contains(p.Text, "huge") {
		t.Errorf("text %q", p.Text)
	}
}

func TestPixelSize(t *testing.T) {
	for _, c := range []struct {
		w, h, dpi float64
		pw, ph    int
	}{
		{612, 792, 200, 1700, 2200},
		{595, 842, 200, 1653, 2339}, // 1652.8, 2338.9: ceil, not round
		{612, 792, 72, 612, 792},
		// 792 * (600/72) is 6600.000000000001 in float64; pdftoppm
		// multiplies first and writes 6600 rows.
		{612, 792, 600, 5100, 6600},
		{612, 792, 300, 2550, 3300},
		{0.1, 0.1, 72, 1, 1},
		{100.2, 100.7, 72, 101, 101},
	} {
		if pw, ph := PixelSize(c.w, c.h, c.dpi); pw != c.pw || ph != c.ph {
			t.Errorf("PixelSize(%g, %g, %g) = %d x %d, want %d x %d", c.w, c.h, c.dpi, pw, ph, c.pw, c.ph)
		}
	}
	for _, dpi := range []float64{1e300, 1e20, 1e12, math.MaxFloat64} {
		f := fitDPI(612, 792, dpi, 1<<20)
		pw, ph := PixelSize(612, 792, f)
		if int64(pw)*int64(ph) > 1<<20 || int64(pw)*int64(ph) < 1<<19 {
			t.Errorf("fitDPI(letter, %g DPI, 1 Mi pixels) = %g DPI, %dx%d", dpi, f, pw, ph)
		}
	}
	for _, max := range []int64{1000, 1 << 20, 3_000_001} {
		dpi := fitDPI(14400, 10000, 300, max)
		pw, ph := PixelSize(14400, 10000, dpi)
		if int64(pw)*int64(ph) > max || float64(int64(pw)*int64(ph)) < 0.9*float64(max) {
			t.Errorf("fitDPI to %d pixels: %g DPI, %dx%d", max, dpi, pw, ph)
		}
	}
}

// TestHostile: every hostile document gives its error or a bounded render,
// and the renderer keeps working after each.
func TestHostile(t *testing.T) {
	r := renderer(t)
	ctx := context.Background()
	check := func(name string, data []byte, wantErr error) {
		t.Helper()
		d, err := r.Open(ctx, data, "")
		if wantErr != nil {
			if !errors.Is(err, wantErr) {
				t.Errorf("%s: Open: %v, want %v", name, err, wantErr)
			} else {
				t.Logf("%s: %v", name, err)
			}
			if d != nil {
				d.Close()
			}
			return
		}
		if err != nil {
			t.Logf("%s: Open: %v", name, err)
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrEncrypted) && !errors.Is(err, ErrTooManyPages) {
				t.Errorf("%s: Open error %v is none of the package's errors", name, err)
			}
			return
		}
		defer d.Close()
		n := min(d.NumPages(), 3)
		for i := range n {
			p, err := d.Render(ctx, i, 200)
			if err != nil {
				t.Logf("%s: page %d: %v", name, i, err)
				continue
			}
			if b := p.Image.Bounds(); int64(b.Dx())*int64(b.Dy()) > testOptions.MaxPixels {
				t.Errorf("%s: page %d rendered %v", name, i, b)
			}
		}
		t.Logf("%s: opened, %d pages", name, d.NumPages())
	}
	check("junk", synth.PDFJunk(10000, 3, false), ErrFormat)
	check("empty", nil, ErrFormat)
	check("100000 pages", synth.PDFManyPages(100000), ErrTooManyPages)
	check("too large", make([]byte, testOptions.MaxBytes+1), ErrTooLarge)
	for _, h := range synth.HostilePDFs() {
		var want error
		switch h.Name {
		case "junk":
			want = ErrFormat
		case "encrypted":
			want = ErrEncrypted
		}
		check(h.Name, h.Data, want)
	}
	// Zero pages: opens with none to render.
	d := open(t, synth.PDFZeroPages(), "")
	if d.NumPages() != 0 {
		t.Errorf("zero-page document has %d pages", d.NumPages())
	}
	if _, err := d.Render(ctx, 0, 200); err == nil {
		t.Error("rendering page 0 of none: no error")
	}
	// 100000 pages under a raised limit: counted, and a page renders.
	r2, err := NewRenderer(Options{Workers: 1, MaxPages: 200000, CacheDir: sharedCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	many, err := r2.Open(ctx, synth.PDFManyPages(100000), "")
	if err != nil {
		t.Fatal(err)
	}
	defer many.Close()
	if many.NumPages() != 100000 {
		t.Errorf("NumPages = %d, want 100000", many.NumPages())
	}
	p, err := many.Render(ctx, 99999, 72)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(p.Text) != "shared page" || p.Image.Bounds().Dx() != 612 {
		t.Errorf("last of 100000 pages: %v, text %q", p.Image.Bounds(), p.Text)
	}
	// The renderer still renders after all of that.
	TestRenderMatchesImage(t)
}

// TestTimeout: a call stopped by its context discards the instance, the
// document reports it, and the pool gives a working instance to the next.
func TestTimeout(t *testing.T) {
	r := renderer(t)
	d, err := r.Open(context.Background(), synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Image: testImage(600, 800)}}, synth.PDFOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err = d.Render(ctx, 0, 300)
	if err == nil {
		t.Skip("render finished within 1 ms; nothing to interrupt") // never seen: a 2550x3300 render takes far longer
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Render past its deadline: %v", err)
	}
	if _, err := d.Render(context.Background(), 0, 72); err == nil {
		t.Error("a document whose instance was discarded still renders")
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
	TestRenderMatchesImage(t)
}

func TestConcurrent(t *testing.T) {
	r := renderer(t)
	src := testImage(200, 150)
	data := synth.PDF([]synth.PDFPage{{WidthPt: 200, HeightPt: 150, Image: src, Text: []string{"page one"}}, {WidthPt: 200, HeightPt: 150, Image: src, Text: []string{"page two"}}}, synth.PDFOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := r.Open(context.Background(), data, "")
			if err != nil {
				errs <- err
				return
			}
			defer d.Close()
			for i := range 2 {
				p, err := d.Render(context.Background(), (i+g)%2, 72)
				if err != nil {
					errs <- err
					return
				}
				want := []string{"page one", "page two"}[(i+g)%2]
				if strings.TrimSpace(p.Text) != want || p.Image.Bounds() != src.Bounds() {
					errs <- fmt.Errorf("goroutine %d: text %q, bounds %v", g, p.Text, p.Image.Bounds())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCompilationCache: a renderer writes its compiled module to an empty
// cache directory, and a second renderer starts from it.
func TestCompilationCache(t *testing.T) {
	dir := t.TempDir()
	r1, err := NewRenderer(Options{Workers: 1, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r1.Close()
	var files int
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files++
			size += fi.Size()
		}
		return nil
	})
	if files == 0 || size < 1<<20 {
		t.Fatalf("cache dir has %d files of %d bytes", files, size)
	}
	start := time.Now()
	r2, err := NewRenderer(Options{Workers: 1, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	d, err := r2.Open(context.Background(), synth.PDF([]synth.PDFPage{{WidthPt: 10, HeightPt: 10}}, synth.PDFOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	t.Logf("cache: %d files, %d bytes; a second renderer started and opened a document in %v", files, size, time.Since(start))
}

// BenchmarkRender: a letter page (8.5x11 in) at 200 DPI = 1700x2200
// pixels, text layer included: a page of text lines, and a page that is a
// full-page 1700x2200 image (Flate RGB, a scan's size) under a line of text.
func BenchmarkRender(b *testing.B) {
	lines := make([]string, 50)
	for i := range lines {
		lines[i] = fmt.Sprintf("Line %d of a benchmark page: the quick brown fox jumps over the lazy dog.", i+1)
	}
	r, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDirFor(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		name string
		page synth.PDFPage
	}{
		{"text", synth.PDFPage{WidthPt: 612, HeightPt: 792, Text: lines, FontSize: 10}},
		{"image", synth.PDFPage{WidthPt: 612, HeightPt: 792, Image: testImage(1700, 2200), Text: lines[:1]}},
	} {
		b.Run(c.name, func(b *testing.B) {
			d, err := r.Open(context.Background(), synth.PDF([]synth.PDFPage{c.page}, synth.PDFOptions{}), "")
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for b.Loop() {
				p, err := d.Render(context.Background(), 0, 200)
				if err != nil {
					b.Fatal(err)
				}
				if p.Image.Bounds().Dx() != 1700 || p.Image.Bounds().Dy() != 2200 {
					b.Fatal(p.Image.Bounds())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}

// BenchmarkStartup: NewRenderer plus the first Open, with the compilation
// cache warm and without one.
func BenchmarkStartup(b *testing.B) {
	data := synth.PDF([]synth.PDFPage{{WidthPt: 10, HeightPt: 10}}, synth.PDFOptions{})
	for _, c := range []struct{ name, dir string }{{"cached", sharedCacheDirFor(b)}, {"uncached", "-"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r, err := NewRenderer(Options{Workers: 1, CacheDir: c.dir})
				if err != nil {
					b.Fatal(err)
				}
				d, err := r.Open(context.Background(), data, "")
				if err != nil {
					b.Fatal(err)
				}
				d.Close()
				r.Close()
			}
		})
	}
}

// sharedCacheDirFor warms the shared renderer's cache and returns it.
func sharedCacheDirFor(b *testing.B) string {
	renderer(b)
	return sharedCacheDir
}

// BenchmarkOpen: taking a fresh instance from the pool and parsing a small
// document, the per-document cost.
func BenchmarkOpen(b *testing.B) {
	r := renderer(b)
	data := synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Text: []string{"x"}}}, synth.PDFOptions{})
	for b.Loop() {
		d, err := r.Open(context.Background(), data, "")
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}

// TestMemoryLimit: an instance whose memory limit a render would pass
// fails that render with an error (ErrTooLarge for the bitmap, or a
// discarded instance when PDFium itself runs out), and the renderer's next
// document works.
func TestMemoryLimit(t *testing.T) {
	renderer(t) // warm the cache
	testMemoryLimit = 96 << 20
	r, err := NewRenderer(Options{Workers: 1, MaxPixels: 64 << 20, CacheDir: sharedCacheDir})
	testMemoryLimit = 0
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	d, err := r.Open(ctx, synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Text: []string{"big"}}}, synth.PDFOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	// 600 DPI: 5100x6600 = 135 MB of bitmap, past the instance's 96 MiB.
	_, err = d.Render(ctx, 0, 600)
	if err == nil {
		t.Fatal("a bitmap past the instance's memory rendered")
	}
	t.Logf("600 DPI in 96 MiB: %v", err)
	d.Close()
	// A content stream inflating to 160 MB: PDFium runs out of memory
	// inside the instance (a trap), which is discarded.
	for i, data := range [][]byte{synth.PDFImageBomb(40000), synth.PDFFlateBomb(160 << 20), synth.PDF([]synth.PDFPage{{WidthPt: 320, HeightPt: 240, Image: testImage(320, 240)}}, synth.PDFOptions{})} {
		d, err := r.Open(ctx, data, "")
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Render(ctx, 0, 72)
		d.Close()
		switch {
		case i == 1 && err == nil:
			t.Error("a 160 MB content stream rendered in a 96 MiB instance")
		case i == 1 && strings.Contains(err.Error(), "\n"):
			t.Errorf("error spans lines: %q", err)
		case i != 1 && err != nil:
			t.Fatal(err) // the pages around the failure render
		case err != nil:
			t.Logf("flate bomb: %v", err)
		default:
			t.Logf("document %d rendered %v", i, p.Image.Bounds())
		}
	}
}
