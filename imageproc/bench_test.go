package imageproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchJPEG is a 2000x3000 (WxH) photo-like JPEG, made once.
var benchJPEG = sync.OnceValue(func() []byte {
	return encodeJPEG(&testing.B{}, photoLike(2000, 3000), 90)
})

// reportMP reports throughput in source megapixels per second.
func reportMP(b *testing.B, w, h int) {
	b.ReportMetric(float64(w*h)*float64(b.N)/1e6/b.Elapsed().Seconds(), "MP/s")
}

// cpuTime is the process's user+system CPU time; on a shared machine it is
// steadier than wall time, and it shows what the parallel stages cost.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
		c0 := cpuTime()
		for b.Loop() {
			if _, err := Preprocess(data, cfg, DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		reportMP(b, img.Width, img.Height)
		b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
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

// BenchmarkPillowPreprocess times Pillow decoding the same file and
// resizing it with BICUBIC to the same size, for the ratio to
// BenchmarkPreprocess/all; it needs VEMBED_JPEG_PYTHON (a Python with
// Pillow). The work runs in one Python process that times itself (after
// one warm-up round); its wall and CPU figures are the reported metrics.
func BenchmarkPillowPreprocess(b *testing.B) {
	py := os.Getenv("VEMBED_JPEG_PYTHON")
	if py == "" {
		b.Skip("set VEMBED_JPEG_PYTHON to compare with Pillow")
	}
	data := benchJPEG()
	w, h, err := JinaV4Config().TargetSize(2000, 3000)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "photo.jpg")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	script := `import sys, time, io
from PIL import Image
d = open(sys.argv[1], 'rb').read(); n, w, h = map(int, sys.argv[2:5])
def run(): Image.open(io.BytesIO(d)).convert('RGB').resize((w, h), Image.BICUBIC)
run()
t, c = time.perf_counter(), time.process_time()
for _ in range(n): run()
print(time.perf_counter() - t, time.process_time() - c)`
	b.ResetTimer()
	out, err := exec.Command(py, "-c", script, path, fmt.Sprint(b.N), fmt.Sprint(w), fmt.Sprint(h)).Output()
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
