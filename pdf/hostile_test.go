package pdf

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// rawPDF writes a PDF from numbered object bodies (1-based, object 1 the
// catalog) with a correct cross-reference table, for hostile documents the
// synth writer has no option for.
func rawPDF(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f\r\n", len(objs)+1)
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n\r\n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// rawStream is a stream object body holding data, Flate-compressed when
// flate is set.
func rawStream(dict string, data []byte, flate bool) string {
	if flate {
		var buf bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
		zw.Write(data)
		zw.Close()
		data = buf.Bytes()
		dict += " /Filter /FlateDecode"
	}
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// onePage is a catalog, a page tree and one page of the given MediaBox
// whose content and resources are objects 4 and on.
func onePage(mediaBox, resources string, rest ...string) []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox %s /Resources %s /Contents 4 0 R >>", mediaBox, resources),
	}
	return rawPDF(append(objs, rest...)...)
}

// formBomb: form XObject k draws form k+1 twice, depth levels deep, so the
// page asks for 2^depth draws of a rectangle (a "billion laughs" for PDF).
func formBomb(depth int) []byte {
	rest := []string{rawStream("", []byte("/X0 Do\n"), false)}
	for k := range depth {
		body := fmt.Sprintf("/X%d Do /X%d Do\n", k+1, k+1)
		res := fmt.Sprintf("<< /XObject << /X%d %d 0 R >> >>", k+1, 6+k)
		if k == depth-1 {
			body, res = "0 0 1 rg 0 0 10 10 re f\n", "<< >>"
		}
		rest = append(rest, rawStream(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources %s", res), []byte(body), false))
	}
	// Object 4 is the content; the first form is object 5.
	return onePage("[0 0 612 792]", "<< /XObject << /X0 5 0 R >> >>", rest...)
}

// contentBomb: a content stream that inflates to n bytes of one repeated
// operator (a zip bomb in the page content).
func contentBomb(n int) []byte {
	// Compressed a chunk at a time: the test never holds the n bytes.
	chunk := bytes.Repeat([]byte("0 0 1 1 re f\n"), 1<<16)
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	for written := 0; written < n; written += len(chunk) {
		zw.Write(chunk[:min(len(chunk), n-written)])
	}
	zw.Close()
	return onePage("[0 0 612 792]", "<< >>", fmt.Sprintf("<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", buf.Len(), buf.Bytes()))
}

// textBomb: one page with n characters of text.
func textBomb(n int) []byte {
	line := "(" + strings.Repeat("A", 100) + ") Tj\n"
	content := "BT /F1 1 Tf 0 0 Td\n" + strings.Repeat(line, n/100) + "ET\n"
	return onePage("[0 0 612 792]", "<< /Font << /F1 5 0 R >> >>", rawStream("", []byte(content), true),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
}

// imageBomb: a page drawing an image whose dictionary claims w x h RGB
// pixels from a Flate stream of zeros.
func imageBomb(w, h int) []byte {
	return onePage("[0 0 612 792]", "<< /XObject << /Im 5 0 R >> >>", rawStream("", []byte("q 612 0 0 792 0 0 cm /Im Do Q\n"), false),
		rawStream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8", w, h), make([]byte, min(3*w*h, 64<<20)), true))
}

// tilingBomb: a page filled with a tiling pattern whose cell is step
// points wide.
func tilingBomb(step float64) []byte {
	return onePage("[0 0 612 792]", "<< /Pattern << /P 5 0 R >> >>", rawStream("", []byte("/Pattern cs /P scn 0 0 612 792 re f\n"), false),
		rawStream(fmt.Sprintf("/Type /Pattern /PatternType 1 /PaintType 1 /TilingType 1 /BBox [0 0 %g %g] /XStep %g /YStep %g /Resources << >>", step, step, step, step),
			[]byte(fmt.Sprintf("0 0 1 rg 0 0 %g %g re f\n", step/2, step/2)), false))
}

// pageTreeCycle: the page tree's root lists itself as a kid and claims a
// billion pages.
func pageTreeCycle() []byte {
	return rawPDF("<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 1000000000 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >>")
}

// hostileRenderer is a renderer with a short Timeout, so documents built
// to run forever are stopped quickly. Its instances are separate from the
// shared renderer's, so a kill here cannot disturb other tests.
func hostileRenderer(t *testing.T, workers int) *Renderer {
	t.Helper()
	renderer(t) // fills the compilation cache
	r, err := NewRenderer(Options{Workers: workers, CacheDir: sharedCacheDir, Timeout: 1500 * time.Millisecond,
		MaxBytes: 64 << 20, MaxPixels: 4 << 20, MaxPages: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// checkWorks renders a known page with r and compares it to its source,
// proving the pool replaced whatever instance a hostile document broke.
func checkWorks(t *testing.T, r *Renderer, after string) {
	t.Helper()
	src := testImage(64, 48)
	d, err := r.Open(context.Background(), synth.PDF([]synth.PDFPage{{WidthPt: 64, HeightPt: 48, Image: src, Text: []string{"alive"}}}, synth.PDFOptions{}), "")
	if err != nil {
		t.Fatalf("after %s: Open: %v", after, err)
	}
	defer d.Close()
	p, err := d.Render(context.Background(), 0, 72)
	if err != nil {
		t.Fatalf("after %s: Render: %v", after, err)
	}
	if p.Image.Bounds() != src.Bounds() || strings.TrimSpace(p.Text) != "alive" {
		t.Fatalf("after %s: rendered %v with text %q", after, p.Image.Bounds(), p.Text)
	}
}

// TestHostileContent: documents that are valid PDF but built to exhaust
// time or memory while rendering. Each ends in an error (the instance is
// discarded) or a render within the bounds, and the renderer keeps working.
func TestHostileContent(t *testing.T) {
	r := hostileRenderer(t, 1)
	mediaRect := rawStream("", []byte("0 0 1 rg 0 0 10 10 re f\n"), false)
	for _, c := range []struct {
		name string
		data []byte
		// fails: the render cannot finish within the bounds; it must be
		// stopped by Timeout or end in the instance's memory limit.
		fails bool
	}{
		{"2^30 nested form draws", formBomb(30), true},
		{"content stream inflating to 1 GiB", contentBomb(1 << 30), false},
		{"10 M characters of text", textBomb(10 << 20), false},
		{"30000x30000 image of zeros", imageBomb(30000, 30000), false},
		{"tiling pattern of 0.01 pt cells", tilingBomb(0.01), false},
		{"page tree listing itself", pageTreeCycle(), false},
		{"MediaBox of 1e30 pt", onePage("[0 0 1e30 1e30]", "<< >>", mediaRect), false},
		{"negative MediaBox", onePage("[0 0 -612 -792]", "<< >>", mediaRect), false},
		{"empty MediaBox", onePage("[0 0 0 0]", "<< >>", mediaRect), false},
		{"MediaBox of strings", onePage("[(a) (b) (c) (d)]", "<< >>", mediaRect), false},
	} {
		start := time.Now()
		d, err := r.Open(context.Background(), c.data, "")
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTooManyPages) {
				t.Errorf("%s: Open: %v is none of the package's errors", c.name, err)
			}
			t.Logf("%s: Open: %.200v", c.name, err)
			checkWorks(t, r, c.name)
			continue
		}
		if n := d.NumPages(); n < 1 || n > 1000 {
			t.Errorf("%s: %d pages", c.name, n)
		}
		p, err := d.Render(context.Background(), 0, 200)
		elapsed := time.Since(start)
		switch {
		case err != nil:
			t.Logf("%s: %.200v (after %v)", c.name, err, elapsed.Round(time.Millisecond))
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s: %v is none of the package's errors", c.name, err)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("%s: a %d-line error message: %q", c.name, strings.Count(err.Error(), "\n")+1, err.Error()[:min(len(err.Error()), 300)])
			}
			// A timeout or a trap discards the instance: the document
			// must say so rather than render from a broken instance.
			if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "discarded") {
				if _, err := d.Render(context.Background(), 0, 72); err == nil {
					t.Errorf("%s: the discarded instance still renders", c.name)
				}
			}
		case c.fails:
			t.Errorf("%s: rendered in %v; the document is meant to outlast Timeout or memory", c.name, elapsed)
		default:
			b := p.Image.Bounds()
			if b.Dx() < 1 || b.Dy() < 1 || int64(b.Dx())*int64(b.Dy()) > 4<<20 || len(p.Text) > 4*maxTextChars {
				t.Errorf("%s: rendered %v with %d bytes of text", c.name, b, len(p.Text))
			}
			t.Logf("%s: rendered %v at %.1f DPI, %d bytes of text (after %v)", c.name, b, p.DPI, len(p.Text), elapsed.Round(time.Millisecond))
		}
		if err := d.Close(); err != nil {
			t.Logf("%s: Close: %v", c.name, err)
		}
		checkWorks(t, r, c.name)
	}
}

// TestKillIsolation: while one document's instance is killed by its
// Timeout, another document renders on its own instance, undisturbed.
func TestKillIsolation(t *testing.T) {
	r := hostileRenderer(t, 2)
	bomb, err := r.Open(context.Background(), formBomb(30), "")
	if err != nil {
		t.Fatal(err)
	}
	defer bomb.Close()
	src := testImage(120, 90)
	good, err := r.Open(context.Background(), synth.PDF([]synth.PDFPage{{WidthPt: 120, HeightPt: 90, Image: src}}, synth.PDFOptions{}), "")
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	bombErr := make(chan error, 1)
	go func() {
		_, err := bomb.Render(context.Background(), 0, 72)
		bombErr <- err
	}()
	// The bomb ends by Timeout or by the instance's memory limit,
	// whichever comes first on this machine; both discard the instance.
	renders := 0
	for {
		select {
		case err := <-bombErr:
			if err == nil {
				t.Error("bomb: rendered")
			}
			t.Logf("bomb: %.200v", err)
			if renders == 0 {
				t.Error("no render completed beside the bomb")
			}
			t.Logf("%d renders beside the bomb until its instance was killed", renders)
			// The good document's instance is untouched by the kill.
			if p, err := good.Render(context.Background(), 0, 72); err != nil || p.Image.Bounds() != src.Bounds() {
				t.Errorf("after the kill: %v", err)
			}
			return
		default:
		}
		p, err := good.Render(context.Background(), 0, 72)
		if err != nil {
			t.Fatalf("render beside the bomb: %v", err)
		}
		if !bytes.Equal(p.Image.Pix, pixelsOf(src)) {
			t.Fatal("render beside the bomb differs from the image")
		}
		renders++
	}
}

// pixelsOf is img's pixels as the renderer gives them for an image-only
// page at native size: this is exact for PDFium's identity transform
// (TestRenderMatchesImage reports a max difference of 0).
func pixelsOf(img *image.RGBA) []byte { return img.Pix }

// TestSharedDocument: goroutines sharing one Document take turns (calls are
// serialized) and each gets its own page's pixels and text.
func TestSharedDocument(t *testing.T) {
	var pages []synth.PDFPage
	for i := range 4 {
		pages = append(pages, synth.PDFPage{WidthPt: 40 + float64(10*i), HeightPt: 30, Text: []string{fmt.Sprintf("page %d", i)}})
	}
	d := open(t, synth.PDF(pages, synth.PDFOptions{}), "")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Go(func() {
			for k := range 4 {
				i := (g + k) % 4
				p, err := d.Render(context.Background(), i, 72)
				if err != nil {
					errs <- err
					return
				}
				if w := p.Image.Bounds().Dx(); w != 40+10*i || strings.TrimSpace(p.Text) != fmt.Sprintf("page %d", i) {
					errs <- fmt.Errorf("page %d: width %d, text %q", i, w, p.Text)
				}
				if w, _, err := d.PageSize(i); err != nil || w != float64(40+10*i) {
					errs <- fmt.Errorf("PageSize(%d) = %g, %v", i, w, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCloseInFlight: closing the Renderer while a document renders ends
// that render (an error, no crash) and later calls fail cleanly.
func TestCloseInFlight(t *testing.T) {
	renderer(t)
	r, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDir, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Open(context.Background(), formBomb(30), "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Render(context.Background(), 0, 72)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Errorf("Close with a render in flight: %v", err)
	}
	if err := <-done; err == nil {
		t.Error("the render in flight succeeded after Close")
	}
	if _, err := d.Render(context.Background(), 0, 72); err == nil {
		t.Error("Render after the Renderer's Close: no error")
	}
	d.Close()
	if _, err := r.Open(context.Background(), formBomb(1), ""); err == nil {
		t.Error("Open after Close: no error")
	}
}

// TestExtremeDPI: absurd resolutions give an image within MaxPixels whose
// size PixelSize of the reported DPI reproduces, or an error; never an
// overflowed size.
func TestExtremeDPI(t *testing.T) {
	d := open(t, synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Text: []string{"dpi"}}}, synth.PDFOptions{}), "")
	for _, dpi := range []float64{math.MaxFloat64, 1e300, 1e20, 1e12, 1e6, 1e-3, 1e-300, math.SmallestNonzeroFloat64} {
		p, err := d.Render(context.Background(), 0, dpi)
		if err != nil {
			t.Logf("DPI %g: %v", dpi, err)
			continue
		}
		b := p.Image.Bounds()
		if n := int64(b.Dx()) * int64(b.Dy()); n < 1 || n > testOptions.MaxPixels || p.DPI > dpi {
			t.Errorf("DPI %g: %v at %g DPI", dpi, b, p.DPI)
		}
		if w, h := PixelSize(612, 792, p.DPI); w != b.Dx() || h != b.Dy() {
			t.Errorf("DPI %g: image %v, but PixelSize at the reported %g DPI is %dx%d", dpi, b, p.DPI, w, h)
		}
		if dpi >= 1e6 && int64(b.Dx())*int64(b.Dy()) < testOptions.MaxPixels/2 {
			t.Errorf("DPI %g: %v is far below MaxPixels %d", dpi, b, testOptions.MaxPixels)
		}
	}
	for _, dpi := range []float64{-72, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := d.Render(context.Background(), 0, dpi); err == nil {
			t.Errorf("DPI %g: no error", dpi)
		}
	}
}

// TestKillRaces: renders cut by contexts ending at every moment (already
// done, mid-call, just after) from several goroutines, each document closed
// right after: no crash, every failure one of the expected errors, and
// the pool still hands out working instances (none lost, none doubled).
func TestKillRaces(t *testing.T) {
	r := hostileRenderer(t, 2)
	data := synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Image: testImage(300, 400), Text: []string{"race"}}}, synth.PDFOptions{})
	delays := []time.Duration{-1, 0, time.Microsecond, 50 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond, time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for g := range 4 {
		wg.Go(func() {
			for k := range 12 {
				delay := delays[(g+k)%len(delays)]
				ctx, cancel := context.WithTimeout(context.Background(), delay)
				outcome := "rendered"
				d, err := r.Open(ctx, data, "")
				if err == nil {
					_, err = d.Render(ctx, 0, 100)
					d.Close()
				}
				cancel()
				switch {
				case err == nil:
				case errors.Is(err, context.DeadlineExceeded):
					outcome = "deadline"
				default:
					outcome = "other"
					t.Errorf("delay %v: %v", delay, err)
				}
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	// Both instances are usable at once afterwards.
	var docs []*Document
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d, err := r.Open(ctx, data, "")
		cancel()
		if err != nil {
			t.Fatalf("after the races: %v", err)
		}
		docs = append(docs, d)
	}
	for _, d := range docs {
		if p, err := d.Render(context.Background(), 0, 72); err != nil || strings.TrimSpace(p.Text) != "race" {
			t.Errorf("after the races: %v", err)
		}
		d.Close()
	}
}

// TestTextBounded: a page with more characters in its text layer than the
// package keeps (invisible text, as OCR layers are, so the page renders
// quickly) gives exactly the first maxTextChars of them.
func TestTextBounded(t *testing.T) {
	renderer(t)
	r, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const n = maxTextChars + maxTextChars/8
	line := "(" + strings.Repeat("A", 99) + "B) Tj\n"
	content := "BT 3 Tr /F1 1 Tf 0 0 Td\n" + strings.Repeat(line, n/100) + "ET\n"
	data := onePage("[0 0 612 792]", "<< /Font << /F1 5 0 R >> >>", rawStream("", []byte(content), true),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	d, err := r.Open(context.Background(), data, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.Render(context.Background(), 0, 72)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Text) != maxTextChars || !strings.HasPrefix(p.Text, strings.Repeat("A", 99)+"B") {
		t.Errorf("%d characters in the layer: kept %d bytes starting %q, want the first %d", n, len(p.Text), p.Text[:min(len(p.Text), 20)], maxTextChars)
	}
	for i := 0; i < len(p.Image.Pix); i += 4 {
		if p.Image.Pix[i] != 255 {
			t.Fatal("invisible text was drawn")
		}
	}
}
