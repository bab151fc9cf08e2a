package kernels

import (
	"math"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// TestHalfToFloat checks the decoders' binary16 conversion on every bit
// pattern against the gguf package's.
func TestHalfToFloat(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		got, want := math.Float32bits(halfToFloat(uint16(i))), math.Float32bits(gguf.F16ToF32(uint16(i)))
		if got != want {
			t.Fatalf("%#04x: got %#08x, want %#08x", i, got, want)
		}
	}
}
