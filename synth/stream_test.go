package synth

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
)

// TestWriteFailure checks that a tensor that cannot be generated stops the
// write with an error naming it, leaves no file, and stops every generator
// goroutine, though chunks of the next tensor are already in flight.
func TestWriteFailure(t *testing.T) {
	f := &fileSpec{Layout: &qwenlayout.Layout{
		KVs: []qwenlayout.KV{{Key: "general.architecture", Value: "test"}},
		Tensors: []qwenlayout.TensorLayout{
			{Name: "a", NE: []int64{1024, 600}, Type: gguf.TypeF32}, // several chunks
			{Name: "bad", NE: []int64{256, 4}, Type: gguf.TypeIQ2_XXS},
			{Name: "c", NE: []int64{1024, 256 * 16}, Type: gguf.TypeF32}, // more chunks than the stream buffers
		},
	}, seed: 1, std: 0.02}
	dir := t.TempDir()
	before := runtime.NumGoroutine()
	err := f.write(filepath.Join(dir, "x.gguf"), 3, nil)
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("write error %v, want one naming the tensor \"bad\"", err)
	}
	// A goroutine that has called wg.Done may still be counted for a moment.
	after := runtime.NumGoroutine()
	for i := 0; i < 100 && after > before; i++ {
		time.Sleep(10 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before {
		t.Errorf("%d goroutines before the write, %d after", before, after)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left after a failed write", len(left))
	}
}
