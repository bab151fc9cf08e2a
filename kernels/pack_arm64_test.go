package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// TestPack8NEONMatchesDecoders checks the NEON panel packers against the
// portable decoders, value for value: every binary16 class (subnormals,
// infinities, NaNs) and random bit patterns, rows farther apart than
// their length, several steps of eight values, and the panel's other
// columns left alone. A signaling NaN comes out quiet (FCVTL, like x86's
// VCVTPH2PS, sets the quiet bit), so NaNs are compared as NaNs.
func TestPack8NEONMatchesDecoders(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16} {
		size := map[gguf.Type]int{gguf.TypeF32: 4, gguf.TypeF16: 2, gguf.TypeBF16: 2}[typ]
		for _, n8 := range []int{1, 2, 5} {
			n := 8 * n8
			stride := n*size + 4*size // bytes between rows
			src := make([]byte, 8*stride)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			if typ == gguf.TypeF16 {
				// The classes random bytes rarely hit, in row 0.
				for i, h := range []uint16{0x0001, 0x03ff, 0x8001, 0x7c00, 0xfc00, 0x7c01, 0x7e00, 0x0000, 0x8000, 0x3c00} {
					if i < n {
						src[2*i], src[2*i+1] = byte(h), byte(h>>8)
					}
				}
			}
			want := make([]float32, n*gemmNR)
			got := make([]float32, n*gemmNR)
			for i := range want {
				want[i] = float32(i) // the columns past 7 must stay as they are
				got[i] = want[i]
			}
			for r := 0; r < 8; r++ {
				decoders[typ].decode(src[r*stride:], n, want[r:], gemmNR)
			}
			pack8NEON[typ](src, stride, n8, got)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
					t.Fatalf("%s n8=%d: panel value %d (k %d, column %d) is %v, want %v",
						typ, n8, i, i/gemmNR, i%gemmNR, got[i], want[i])
				}
			}
		}
	}
	// transpose8NEON is the float32 packer on float rows.
	x := randVec(8*21, rng)
	got, want := make([]float32, 16*gemmNR), make([]float32, 16*gemmNR)
	transpose8NEON(x, 21, 2, got)
	for r := 0; r < 8; r++ {
		for k := 0; k < 16; k++ {
			want[k*gemmNR+r] = x[r*21+k]
		}
	}
	sameBits(t, "transpose8", got, want)
}

// TestRowDecodersNEON checks the NEON row decoders bit for bit against
// gguf.Dequantize.
func TestRowDecodersNEON(t *testing.T) { checkRowDecoders(t, rowDecodersNEON) }
