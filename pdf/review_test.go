package pdf

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// TestRotatedPixels: a page with /Rotate 90 shows its content turned
// clockwise, pixel for pixel, at native size.
func TestRotatedPixels(t *testing.T) {
	src := testImage(48, 32)
	d := open(t, synth.PDF([]synth.PDFPage{
		{WidthPt: 48, HeightPt: 32, Image: src, Rotate: 90},
		{WidthPt: 48, HeightPt: 32, Image: src, Rotate: 180},
		{WidthPt: 48, HeightPt: 32, Image: src, Rotate: 270},
	}, synth.PDFOptions{}), "")
	w, h := 48, 32
	for i, rot := range []int{90, 180, 270} {
		p, err := d.Render(context.Background(), i, 72)
		if err != nil {
			t.Fatal(err)
		}
		// where gives the source pixel shown at (x, y) after a clockwise turn.
		var where func(x, y int) (int, int)
		want := image.Rect(0, 0, h, w)
		switch rot {
		case 90:
			where = func(x, y int) (int, int) { return y, h - 1 - x }
		case 180:
			want = image.Rect(0, 0, w, h)
			where = func(x, y int) (int, int) { return w - 1 - x, h - 1 - y }
		case 270:
			where = func(x, y int) (int, int) { return w - 1 - y, x }
		}
		if p.Image.Bounds() != want {
			t.Fatalf("rotate %d: %v, want %v", rot, p.Image.Bounds(), want)
		}
		maxDiff := 0
		for y := range want.Dy() {
			for x := range want.Dx() {
				sx, sy := where(x, y)
				a, b := p.Image.RGBAAt(x, y), src.RGBAAt(sx, sy)
				maxDiff = max(maxDiff, absDiff(a.R, b.R), absDiff(a.G, b.G), absDiff(a.B, b.B))
			}
		}
		if maxDiff > 8 {
			t.Errorf("rotate %d: max difference %d from the source turned clockwise", rot, maxDiff)
		}
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// TestAnnotationDrawn: a Square annotation's appearance is painted (the
// FPDF_ANNOT flag), over the page's white.
func TestAnnotationDrawn(t *testing.T) {
	ap := rawStream("/Type /XObject /Subtype /Form /BBox [0 0 40 40]", []byte("1 0 0 rg 0 0 40 40 re f\n"), false)
	data := rawPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Contents 4 0 R /Annots [5 0 R] >>",
		rawStream("", []byte("0 0 1 rg 0 0 10 10 re f\n"), false),
		"<< /Type /Annot /Subtype /Square /Rect [50 50 90 90] /C [1 0 0] /F 4 /AP << /N 6 0 R >> >>",
		ap,
	)
	d := open(t, data, "")
	p, err := d.Render(context.Background(), 0, 72)
	if err != nil {
		t.Fatal(err)
	}
	// Rows from the top: the annotation covers x 50..90, y 10..50.
	if c := p.Image.RGBAAt(70, 30); c != (color.RGBA{255, 0, 0, 255}) {
		t.Errorf("inside the annotation: %v, want red", c)
	}
	if c := p.Image.RGBAAt(5, 95); c != (color.RGBA{0, 0, 255, 255}) {
		t.Errorf("inside the page's square: %v, want blue", c)
	}
	if c := p.Image.RGBAAt(30, 30); c != (color.RGBA{255, 255, 255, 255}) {
		t.Errorf("elsewhere: %v, want white", c)
	}
}

// TestGrayText: black text is anti-aliased in gray, not LCD subpixels:
// every pixel of a page of black text has R = G = B.
func TestGrayText(t *testing.T) {
	d := open(t, synth.PDF([]synth.PDFPage{{WidthPt: 300, HeightPt: 80, Text: []string{"Illegible minimum WWW 0123", "gray anti-aliasing only"}}}, synth.PDFOptions{}), "")
	p, err := d.Render(context.Background(), 0, 150)
	if err != nil {
		t.Fatal(err)
	}
	gray := 0
	for i := 0; i < len(p.Image.Pix); i += 4 {
		r, g, b := p.Image.Pix[i], p.Image.Pix[i+1], p.Image.Pix[i+2]
		if r != g || g != b {
			t.Fatalf("pixel %d is %d,%d,%d: colored fringes (LCD text?)", i/4, r, g, b)
		}
		if r != 0 && r != 255 {
			gray++
		}
	}
	if gray == 0 {
		t.Error("no gray pixel: text not anti-aliased or not drawn")
	}
}

// TestWinAnsiText: text in a simple font's WinAnsiEncoding comes out of
// the text layer as UTF-8.
func TestWinAnsiText(t *testing.T) {
	// café, naïve, 20 € in WinAnsi bytes (0xE9, 0xEF, 0x80).
	content := "BT /F1 12 Tf 20 50 Td (caf\\351 na\\357ve 20 \\200) Tj ET\n"
	d := open(t, onePage("[0 0 300 100]", "<< /Font << /F1 5 0 R >> >>", rawStream("", []byte(content), false),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"), "")
	p, err := d.Render(context.Background(), 0, 72)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(p.Text); got != "café naïve 20 €" {
		t.Errorf("text %q, want %q", got, "café naïve 20 €")
	}
}

// TestOpenWaitsBounded: with every instance held by an open document,
// Open waits only as long as its context allows.
func TestOpenWaitsBounded(t *testing.T) {
	r := hostileRenderer(t, 1)
	data := synth.PDF([]synth.PDFPage{{WidthPt: 10, HeightPt: 10}}, synth.PDFOptions{})
	held, err := r.Open(context.Background(), data, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if d, err := r.Open(ctx, data, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open with the only instance held: %v, want context.DeadlineExceeded", err)
		if d != nil {
			d.Close()
		}
	}
	held.Close()
	d, err := r.Open(context.Background(), data, "")
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	d.Close()
}

// TestLimitsExact: MaxPages and MaxBytes admit a document at the limit and
// refuse one past it.
func TestLimitsExact(t *testing.T) {
	renderer(t)
	pages := make([]synth.PDFPage, 5)
	for i := range pages {
		pages[i] = synth.PDFPage{WidthPt: 20, HeightPt: 20}
	}
	five := synth.PDF(pages, synth.PDFOptions{})
	six := synth.PDF(append(pages, pages[0]), synth.PDFOptions{})
	r, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDir, MaxPages: 5, MaxBytes: int64(len(five))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := r.Open(context.Background(), five, "")
	if err != nil {
		t.Fatalf("5 pages of %d bytes at limits 5 and %d: %v", len(five), len(five), err)
	}
	d.Close()
	if _, err := r.Open(context.Background(), append(five, ' '), ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("one byte past MaxBytes: %v, want ErrTooLarge", err)
	}
	r2, err := NewRenderer(Options{Workers: 1, CacheDir: sharedCacheDir, MaxPages: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := r2.Open(context.Background(), six, ""); !errors.Is(err, ErrTooManyPages) {
		t.Errorf("6 pages at MaxPages 5: %v, want ErrTooManyPages", err)
	}
	// The instance of a refused document went back to the pool.
	d, err = r2.Open(context.Background(), five, "")
	if err != nil {
		t.Fatalf("after a refused document: %v", err)
	}
	d.Close()
}

// TestSecurityVariants: a password given for a plain document is ignored;
// an unknown security handler is ErrEncrypted, not a crash or ErrFormat.
func TestSecurityVariants(t *testing.T) {
	plain := synth.PDF([]synth.PDFPage{{WidthPt: 50, HeightPt: 50, Text: []string{"plain"}}}, synth.PDFOptions{})
	d := open(t, plain, "unneeded")
	if p, err := d.Render(context.Background(), 0, 72); err != nil || strings.TrimSpace(p.Text) != "plain" {
		t.Errorf("plain document opened with a password: %v", err)
	}
	var b strings.Builder
	b.WriteString("%PDF-1.7\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 50 50] >>",
		"<< /Filter /NoSuchHandler /V 9 /R 9 /Length 128 >>",
	}
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 5\n0000000000 65535 f\r\n")
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n\r\n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size 5 /Root 1 0 R /Encrypt 4 0 R /ID [<00> <00>] >>\nstartxref\n%d\n%%%%EOF\n", xref)
	_, err := renderer(t).Open(context.Background(), []byte(b.String()), "")
	if !errors.Is(err, ErrEncrypted) {
		t.Errorf("unknown security handler: %v, want ErrEncrypted", err)
	}
}
