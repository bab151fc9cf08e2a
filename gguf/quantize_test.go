package gguf

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

var quantTypes = []Type{TypeF32, TypeF16, TypeBF16, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ8_0,
	TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeQ8_K, TypeIQ4_NL, TypeIQ4_XS}

// f16Reference rounds x to binary16 by brute force over the two nearest
// representable neighbours, in float64.
func f16Reference(x float32) uint16 {
	best := uint16(0)
	bestErr := math.Inf(1)
	for h := range 1 << 16 {
		v := float64(F16ToF32(uint16(h)))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		e := math.Abs(v - float64(x))
		if e < bestErr || (e == bestErr && h&1 == 0 && math.Signbit(v) == math.Signbit(float64(x))) {
			best, bestErr = uint16(h), e
		}
	}
	return best
}

func TestF32ToF16(t *testing.T) {
	// Every half value converts back to itself.
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x became %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, g)
		}
	}
	// Random values, ties and the subnormal/overflow edges against brute force.
	r := rand.New(rand.NewPCG(1, 2))
	xs := []float32{65504, 65519.99, 65520, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 8.940697e-08, 1.0009766, 1.0004883, 1.0014648}
	for range 300 {
		xs = append(xs, float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(40)-25))))
	}
	for _, x := range xs {
		if got, want := F32ToF16(x), f16Reference(x); got != want && !(math.Abs(float64(x)) >= 65520 && got == 0x7c00|uint16(math.Float32bits(x)>>16)&0x8000) {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", x, got, want)
		}
	}
	if F32ToF16(float32(math.Inf(-1))) != 0xfc00 || F32ToF16(1e6) != 0x7c00 {
		t.Error("overflow does not give infinity")
	}
}

func TestF32ToBF16(t *testing.T) {
	cases := map[float32]uint16{1: 0x3f80, -2: 0xc000, 1.00390625: 0x3f80, 1.01171875: 0x3f82, 1.0078125: 0x3f81}
	for x, want := range cases {
		if got := F32ToBF16(x); got != want {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", x, got, want)
		}
	}
	if h := F32ToBF16(float32(math.NaN())); BF16ToF32(h) == BF16ToF32(h) {
		t.Error("NaN lost")
	}
}

func rmse(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

// TestQuantizeRandom quantizes seeded Gaussian data and checks the error
// against the resolution of each format. For a b-bit uniform grid whose
// step is set by a block's extreme value, the error is at most half a step;
// with 32 Gaussian values the extreme is about 2.5σ, giving a step of about
// 5σ/2^b and an RMS error near step/√12. The bounds are that estimate with
// a factor 1.5 of margin (the K-quants store 6-bit scales, the IQ4 formats
// a non-uniform grid), so a broken bit layout fails by orders of magnitude.
func TestQuantizeRandom(t *testing.T) {
	bits := map[Type]float64{TypeF32: 24, TypeF16: 11, TypeBF16: 8, TypeQ4_0: 4, TypeQ4_1: 4, TypeQ5_0: 5, TypeQ5_1: 5,
		TypeQ8_0: 8, TypeQ2_K: 2, TypeQ3_K: 3, TypeQ4_K: 4, TypeQ5_K: 5, TypeQ6_K: 6, TypeQ8_K: 8, TypeIQ4_NL: 4, TypeIQ4_XS: 4}
	r := rand.New(rand.NewPCG(7, 7))
	x := make([]float32, 256*64)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	// A block of zeros and a block with one outlier exercise the edge paths.
	clear(x[:256])
	x[300] = 40
	for _, typ := range quantTypes {
		q, err := Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(x))
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		for i := range 256 {
			if y[i] != 0 {
				t.Fatalf("%s: zero block decodes to %g at %d", typ, y[i], i)
			}
		}
		var e float64
		switch typ {
		case TypeF32, TypeF16, TypeBF16:
			// Round to nearest: relative error ≤ 2^-bits per value.
			for i := range x {
				if d := math.Abs(float64(y[i] - x[i])); d > math.Abs(float64(x[i]))*math.Pow(2, -bits[typ]) {
					t.Fatalf("%s: %g -> %g", typ, x[i], y[i])
				}
			}
		default:
			e = rmse(x[512:], y[512:])
			bound := 1.5 * 5 / math.Pow(2, bits[typ]) / math.Sqrt(12)
			t.Logf("%-6s rmse %.5f (bound %.5f)", typ, e, bound)
			if e > bound {
				t.Errorf("%s: rmse %.5f above %.5f", typ, e, bound)
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	if _, err := Quantize(TypeQ4_0, make([]float32, 31)); err == nil {
		t.Error("partial block accepted")
	}
	if _, err := Quantize(TypeQ4_0, []float32{float32(math.NaN())}); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := Quantize(TypeIQ2_XXS, make([]float32, 256)); err == nil {
		t.Error("IQ2_XXS accepted")
	}
}

// TestQuantizeFixtures quantizes the fixture model's F32 weights and compares
// with llama.cpp's quantization of the same weights (llama-quantize --pure,
// no importance matrix). The algorithms are the same float32 computations,
// so the encoded bytes must be identical; the error against the F32 original
// is reported for both and ours must not be larger.
func TestQuantizeFixtures(t *testing.T) {
	dir := fixtures.Dir(t, "quant")
	ref, err := Open(filepath.Join(dir, "q256-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, typ := range quantTypes {
		if typ == TypeF32 || typ == TypeQ8_K {
			continue // no llama.cpp file for these
		}
		f, err := Open(filepath.Join(dir, "q256-"+typ.String()+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		var sumOurs, sumTheirs float64
		var n, sameBytes, allBytes int
		for _, tt := range f.Tensors {
			if tt.Type != typ || (testing.Short() && tt.Name != "blk.0.attn_k.weight") {
				continue
			}
			orig, err := ref.Tensor(tt.Name).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := tt.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			q, err := Quantize(typ, orig)
			if err != nil {
				t.Fatal(err)
			}
			ours := make([]float32, len(orig))
			if err := Dequantize(typ, q, ours); err != nil {
				t.Fatal(err)
			}
			for i := range q {
				if q[i] == tt.Data[i] {
					sameBytes++
				}
			}
			allBytes += len(q)
			for i := range orig {
				d1, d2 := float64(ours[i]-orig[i]), float64(theirs[i]-orig[i])
				sumOurs += d1 * d1
				sumTheirs += d2 * d2
			}
			n += len(orig)
		}
		f.Close()
		ours, theirs := math.Sqrt(sumOurs/float64(n)), math.Sqrt(sumTheirs/float64(n))
		t.Logf("%-6s rmse ours %.6e llama.cpp %.6e ratio %.6f, identical bytes %.4f%%", typ, ours, theirs, ours/theirs, 100*float64(sameBytes)/float64(allBytes))
		if ours > theirs {
			t.Errorf("%s: rmse %.6e worse than llama.cpp's %.6e", typ, ours, theirs)
		}
		if sameBytes != allBytes {
			t.Errorf("%s: %d of %d bytes differ from llama.cpp's", typ, allBytes-sameBytes, allBytes)
		}
	}
}

func TestDequantizeErrors(t *testing.T) {
	dst := make([]float32, 256)
	if err := Dequantize(TypeQ4_K, make([]byte, 143), dst); err == nil {
		t.Error("short source accepted")
	}
	if err := Dequantize(TypeQ4_0, make([]byte, 18), dst[:31]); err == nil {
		t.Error("partial block accepted")
	}
	if err := Dequantize(TypeIQ2_XXS, make([]byte, 66), dst); err == nil {
		t.Error("IQ2_XXS decoded")
	}
	if err := Dequantize(Type(99), nil, nil); err == nil {
		t.Error("unknown type accepted")
	}
	tt := &Tensor{Name: "x", Type: TypeIQ1_S, Dims: []int64{256}, Data: make([]byte, 50)}
	if _, err := tt.Float32s(); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("Float32s of IQ1_S: %v", err)
	}
}
