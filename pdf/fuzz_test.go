package pdf

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// FuzzOpenRender: arbitrary bytes through Open and Render give a document
// or one of the package's errors, never a crash, a hang or an image past
// MaxPixels.
func FuzzOpenRender(f *testing.F) {
	for _, h := range synth.HostilePDFs() {
		f.Add(h.Data)
	}
	f.Add(synth.PDF([]synth.PDFPage{
		{WidthPt: 64, HeightPt: 48, Image: testImage(16, 12), Text: []string{"fuzz (seed)"}},
		{WidthPt: 30, HeightPt: 90, Rotate: 270, Text: []string{"rotated"}},
	}, synth.PDFOptions{}))
	f.Add(synth.PDF([]synth.PDFPage{{WidthPt: 50, HeightPt: 50, Text: []string{"x"}}}, synth.PDFOptions{UserPassword: "a"}))
	r := renderer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzing takes an input running past 10 s for a hang: slow
		// inputs end here by the context, an outcome the target accepts.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		d, err := r.Open(ctx, data, "")
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrEncrypted) && !errors.Is(err, ErrTooManyPages) &&
				!errors.Is(err, ErrTooLarge) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Open: unexpected error %v", err)
			}
			return
		}
		defer d.Close()
		for i := range min(d.NumPages(), 2) {
			p, err := d.Render(ctx, i, 36)
			if err != nil {
				continue
			}
			b := p.Image.Bounds()
			if b.Dx() < 1 || b.Dy() < 1 || int64(b.Dx())*int64(b.Dy()) > testOptions.MaxPixels {
				t.Fatalf("page %d rendered %v", i, b)
			}
			if w, h, err := d.PageSize(i); err == nil {
				if pw, ph := PixelSize(w, h, p.DPI); pw != b.Dx() || ph != b.Dy() {
					t.Fatalf("page %d of %gx%g pt at %g DPI is %v", i, w, h, p.DPI, b)
				}
			}
		}
	})
}
