package index

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/synth"
)

// BenchmarkInFlight indexes 32 distinct images with the demo model, with
// one item in the engine at a time (as a client sending one request after
// another) and with several (the default), and reports pages/s and CPU-s
// per page: the engine batches what is in flight.
func BenchmarkInFlight(b *testing.B) {
	dir := b.TempDir()
	files, err := synth.WriteDemo(filepath.Join(dir, "model"))
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Model: files.LM, MMProj: files.MMProj, LocalIdentity: true, StepTarget: time.Hour, EmbeddingCacheBytes: -1, EncoderCacheBytes: -1, ImageCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	corpus := filepath.Join(dir, "corpus")
	os.MkdirAll(corpus, 0o755)
	for i := range 32 {
		img := image.NewRGBA(image.Rect(0, 0, 224, 224))
		for p := range img.Pix {
			img.Pix[p] = byte(p*7 + i*13)
		}
		img.Set(0, 0, color.RGBA{255, 255, 255, 255})
		var buf bytes.Buffer
		png.Encode(&buf, img)
		os.WriteFile(filepath.Join(corpus, fmt.Sprintf("%02d.png", i)), buf.Bytes(), 0o644)
	}
	for _, inflight := range []int{1, 8} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			var pages int
			var cpu time.Duration
			start := time.Now()
			for i := range b.N {
				o := Options{Out: filepath.Join(dir, fmt.Sprintf("out-%d-%d", inflight, i)), Paths: []string{corpus}, ModelID: "demo",
					ChunkTokens: 100, Count: func(s string) int { return len(s) }, InFlight: inflight}
				c0 := cpuTime()
				sum, err := Run(context.Background(), eng, o)
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
				pages += sum.Pages
			}
			b.ReportMetric(float64(pages)/time.Since(start).Seconds(), "pages/s")
			b.ReportMetric(cpu.Seconds()/float64(pages), "CPU-s/page")
		})
	}
}
