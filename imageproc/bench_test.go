package imageproc

import (
	"sync"
	"testing"
)

// benchJPEG is a 2000x3000 (WxH) photo-like JPEG, made once.
var benchJPEG = sync.OnceValue(func() []byte {
	return encodeJPEG(&testing.B{}, photoLike(2000, 3000), 90)
})

// reportMP reports throughput in source megapixels per second.
func reportMP(b *testing.B, w, h int) {
	b.ReportMetric(float64(w*h)*float64(b.N)/1e6/b.Elapsed().Seconds(), "MP/s")
}

// BenchmarkPreprocess measures a 6-megapixel JPEG photo to jina-v4 patches
// (decode, smart resize to 616x924, bicubic, normalize, patchify), with
// its stages separately.
func BenchmarkPreprocess(b *testing.B) {
	data := benchJPEG()
	cfg := JinaV4Config()
	img, err := Decode(data, DecodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, h, err := cfg.TargetSize(img.Width, img.Height)
	if err != nil {
		b.Fatal(err)
	}
	resized := ResizeBicubic(img, w, h)
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if _, err := Preprocess(data, cfg, DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		reportMP(b, img.Width, img.Height)
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			Decode(data, DecodeOptions{})
		}
		reportMP(b, img.Width, img.Height)
	})
	b.Run("resize", func(b *testing.B) {
		for b.Loop() {
			ResizeBicubic(img, w, h)
		}
		reportMP(b, img.Width, img.Height)
	})
	b.Run("patchify", func(b *testing.B) {
		for b.Loop() {
			Patchify(resized, cfg)
		}
		reportMP(b, img.Width, img.Height)
	})
}
