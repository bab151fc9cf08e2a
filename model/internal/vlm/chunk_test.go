package vlm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/kernels"
)

// TestChunkRows checks that rows are split into the fewest pieces of at
// most MaxChunk rows and that no piece is much shorter than the others.
func TestChunkRows(t *testing.T) {
	for n := 1; n <= 5*MaxChunk+7; n++ {
		c := ChunkRows(n)
		pieces := (n + c - 1) / c
		last := n - (pieces-1)*c
		switch {
		case c < 1 || c > MaxChunk:
			t.Fatalf("n=%d: chunk %d outside 1..%d", n, c, MaxChunk)
		case pieces != (n+MaxChunk-1)/MaxChunk:
			t.Fatalf("n=%d: %d pieces of %d, want the fewest, %d", n, pieces, c, (n+MaxChunk-1)/MaxChunk)
		case last < 1 || c-last >= pieces:
			t.Fatalf("n=%d: pieces of %d leave a last one of %d", n, c, last)
		}
	}
}

// TestMatMulChunks checks that the chunked product equals one product over
// all rows, bit for bit: every output row depends on its own input row only.
func TestMatMulChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 24, 40
	wv := make([]float32, rows*cols)
	for i := range wv {
		wv[i] = float32(rng.NormFloat64())
	}
	w, err := F32Matrix(wv, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	bias := make([]float32, rows)
	for i := range bias {
		bias[i] = float32(rng.NormFloat64())
	}
	for _, n := range []int{1, MaxChunk, MaxChunk + 1, 2*MaxChunk + 5} {
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		want, got := make([]float32, n*rows), make([]float32, n*rows)
		kernels.MatMul(want, x, n, w, bias)
		MatMul(got, x, n, w, bias)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: out[%d] = %v, want %v", n, i, got[i], want[i])
			}
		}
	}
}
