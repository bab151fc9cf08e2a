package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// allTypes lists every weight type the fast GEMM paths decode.
var allTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ8_K,
	gguf.TypeIQ4_NL, gguf.TypeIQ4_XS,
}

// scaleOffsets gives the byte offsets, inside a block, of the float16 scale
// fields of each quantized type. Random bytes are valid quants everywhere
// else; only the scales must be finite and of sane size.
var scaleOffsets = map[gguf.Type][]int{
	gguf.TypeQ4_0: {0}, gguf.TypeQ4_1: {0, 2}, gguf.TypeQ5_0: {0}, gguf.TypeQ5_1: {0, 2},
	gguf.TypeQ8_0: {0}, gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108}, gguf.TypeQ4_K: {0, 2},
	gguf.TypeQ5_K: {0, 2}, gguf.TypeQ6_K: {208}, gguf.TypeIQ4_NL: {0}, gguf.TypeIQ4_XS: {0},
}

// f32ToF16 rounds toward zero to binary16 (normal range only), which is all
// the tests need to make scales.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	if exp <= 0 {
		return sign
	}
	return sign | uint16(exp)<<10 | uint16(b>>13&0x3ff)
}

// randMatrix returns a rows×cols matrix of type t with random contents,
// marked bfloat16-eligible (Matrix.BF16) so that the bfloat16 tiers
// multiply it as they do a vision tower's weights.
func randMatrix(t testing.TB, typ gguf.Type, rows, cols int, rng *rand.Rand) *Matrix {
	t.Helper()
	rb, err := typ.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*rb)
	switch typ {
	case gguf.TypeF32:
		for i := 0; i < len(data); i += 4 {
			binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(rng.NormFloat64())))
		}
	case gguf.TypeF16:
		for i := 0; i < len(data); i += 2 {
			binary.LittleEndian.PutUint16(data[i:], f32ToF16(float32(rng.NormFloat64())))
		}
	case gguf.TypeBF16:
		for i := 0; i < len(data); i += 2 {
			binary.LittleEndian.PutUint16(data[i:], uint16(math.Float32bits(float32(rng.NormFloat64()))>>16))
		}
	default:
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		ts := typ.TypeSize()
		for b := 0; b < len(data); b += ts {
			if typ == gguf.TypeQ8_K {
				binary.LittleEndian.PutUint32(data[b:], math.Float32bits(float32(rng.Float64()*0.02)))
				continue
			}
			for _, off := range scaleOffsets[typ] {
				binary.LittleEndian.PutUint16(data[b+off:], f32ToF16(float32(rng.Float64()*0.05+0.001)))
			}
		}
	}
	w, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	w.BF16 = true
	return w
}

func randVec(n int, rng *rand.Rand) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// eachTier runs f once per available tier with that tier active.
func eachTier(t *testing.T, f func(t *testing.T)) {
	saved := Active()
	defer Use(saved)
	for _, tier := range Available() {
		if err := Use(tier); err != nil {
			t.Fatal(err)
		}
		t.Run(string(tier), f)
	}
}

// u is the unit roundoff of float32.
const u = 1.0 / (1 << 24)

// gamma is Higham's γ_n = n·u/(1−n·u): the relative bound on the error of a
// float32 sum of n terms accumulated in any order.
func gamma(n int) float64 { return float64(n) * u / (1 - float64(n)*u) }

// sameBits fails unless a and b are equal bit for bit.
func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: value %d is %v on one tier, %v on the other", what, i, a[i], b[i])
		}
	}
}
