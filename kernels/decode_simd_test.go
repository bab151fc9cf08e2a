//go:build amd64 || arm64

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// checkRowDecoders checks row decoders bit for bit against
// gguf.Dequantize on random rows of every type they decode, long (past
// the 2048-value chunks of some NEON decoders) and short (one block, or
// one super-block).
func checkRowDecoders(t *testing.T, decs map[gguf.Type]func(src []byte, n int, dst []float32)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(15, 16))
	for typ, dec := range decs {
		for _, cols := range []int{1024, 256, 4352} {
			w := randMatrix(t, typ, 4, cols, rng)
			want, got := make([]float32, cols), make([]float32, cols)
			for r := 0; r < 4; r++ {
				src := w.Data[r*w.RowBytes() : (r+1)*w.RowBytes()]
				if err := gguf.Dequantize(typ, src, want); err != nil {
					t.Fatal(err)
				}
				dec(src, cols, got)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s row %d value %d: decoded %v, Dequantize %v", typ, r, i, got[i], want[i])
					}
				}
			}
		}
	}
}
