package jpeg

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	gojpeg "image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	benchOnce sync.Once
	benchJPEG []byte
)

// photoJPEG encodes (with Go's encoder, 4:2:0, quality 90) a 2000x3000
// picture with photo-like statistics: smooth shading, textured regions,
// edges and sensor-like noise. Set VEMBED_JPEG_BENCH_OUT to a path to
// keep the file, e.g. to time another decoder on the same input.
func photoJPEG(b *testing.B) []byte {
	benchOnce.Do(func() {
		const w, h = 2000, 3000
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		rng := rand.New(rand.NewPCG(3, 4))
		for y := range h {
			for x := range w {
				fx, fy := float64(x)/w, float64(y)/h
				base := 120 + 80*math.Sin(6*fx+3*fy)*math.Cos(4*fy-2*fx)
				tex := 20 * math.Sin(float64(x)*0.35+math.Sin(float64(y)*0.05)*4)
				if (x/150+y/200)%3 == 0 {
					tex *= 2
				}
				n := rng.NormFloat64() * 4
				r := base + tex + n + 40*fx
				g := base*0.9 + tex*0.8 + n + 30*fy
				bl := 200 - base*0.7 + tex*0.5 + n
				img.Set(x, y, color.RGBA{clampF(r), clampF(g), clampF(bl), 255})
			}
		}
		var buf bytes.Buffer
		if err := gojpeg.Encode(&buf, img, &gojpeg.Options{Quality: 90}); err != nil {
			panic(err)
		}
		benchJPEG = buf.Bytes()
		if p := os.Getenv("VEMBED_JPEG_BENCH_OUT"); p != "" {
			if err := os.WriteFile(p, benchJPEG, 0o644); err != nil {
				panic(err)
			}
		}
	})
	return benchJPEG
}

func clampF(v float64) uint8 { return uint8(min(max(math.Round(v), 0), 255)) }

// cpuTime is the process's user+system CPU time. On a shared machine it is
// a steadier measure than wall time, so both benchmarks below report it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecode2000x3000 decodes a 6-megapixel 4:2:0 baseline JPEG and
// reports megapixels per second (wall) and CPU milliseconds per decode.
func BenchmarkDecode2000x3000(b *testing.B) {
	data := photoJPEG(b)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		if _, err := Decode(data, 1<<23); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(6*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
	b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkPillow2000x3000 times Pillow's Image.open(f).convert("RGB") on
// the same file, for the ratio to BenchmarkDecode2000x3000; it needs
// VEMBED_JPEG_PYTHON (a Python with Pillow). The decodes run in one Python
// process that times itself; its figures are the reported metrics.
func BenchmarkPillow2000x3000(b *testing.B) {
	py := os.Getenv("VEMBED_JPEG_PYTHON")
	if py == "" {
		b.Skip("set VEMBED_JPEG_PYTHON to compare with Pillow")
	}
	path := filepath.Join(b.TempDir(), "photo.jpg")
	if err := os.WriteFile(path, photoJPEG(b), 0o644); err != nil {
		b.Fatal(err)
	}
	script := `import sys, time, io
from PIL import Image
d = open(sys.argv[1], 'rb').read(); n = int(sys.argv[2])
Image.open(io.BytesIO(d)).convert('RGB')
w, c = time.perf_counter(), time.process_time()
for _ in range(n): Image.open(io.BytesIO(d)).convert('RGB')
print(time.perf_counter() - w, time.process_time() - c)`
	b.ResetTimer()
	out, err := exec.Command(py, "-c", script, path, fmt.Sprint(b.N)).Output()
	if err != nil {
		b.Fatal(err)
	}
	var wall, cpu float64
	if _, err := fmt.Sscan(string(out), &wall, &cpu); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(6*float64(b.N)/wall, "MP/s")
	b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
}
