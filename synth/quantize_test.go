package synth

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// TestHalfConversions checks F16 and BF16 encoding against the decoders:
// the result must be the representable value nearest to the input, ties to
// even, found by a float64 comparison with both neighbours.
func TestHalfConversions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float32{0, -0.0, 1, -1, 65504, 65519.99, 65520, 1e-8, 5.96e-8, 2.98e-8, 2.9802322e-08, 6.1e-5,
		float32(math.Inf(1)), float32(math.Inf(-1)), 3.3895314e38, 1.0009765625, 1.00048828125}
	for range 20000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	// Exact ties: halfway between neighbouring F16 / BF16 values.
	for range 2000 {
		h := uint16(r.Uint32N(0x7bff))
		vals = append(vals, float32((float64(gguf.F16ToF32(h))+float64(gguf.F16ToF32(h+1)))/2))
		vals = append(vals, math.Float32frombits(uint32(h)<<16|0x8000))
	}
	for _, v := range vals {
		if math.IsNaN(float64(v)) {
			if h := gguf.F16ToF32(f32ToF16(v)); !math.IsNaN(float64(h)) {
				t.Errorf("F16 of NaN is %v", h)
			}
			continue
		}
		checkNearest(t, "F16", v, f32ToF16(v), gguf.F16ToF32)
		checkNearest(t, "BF16", v, f32ToBF16(v), func(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) })
	}
}

func checkNearest(t *testing.T, name string, v float32, h uint16, dec func(uint16) float32) {
	t.Helper()
	got := float64(dec(h))
	x := float64(v)
	for _, n := range []uint16{h - 1, h + 1} {
		if n>>15 != h>>15 { // neighbours across the sign bit are not adjacent values
			continue
		}
		alt := float64(dec(n))
		if math.IsNaN(alt) {
			continue
		}
		dg, da := math.Abs(got-x), math.Abs(alt-x)
		if math.IsInf(got, 0) && !math.IsInf(x, 0) {
			dg = math.Inf(1)
			// Overflow is right only when x is at least halfway past the largest finite value.
			if max := float64(dec(h - 1)); math.Abs(x) >= max+(max-float64(dec(h-2)))/2 {
				continue
			}
		}
		if da < dg || (da == dg && h&1 == 1 && !math.IsInf(alt, 0)) {
			t.Errorf("%s(%g) = %#04x (%g), but %#04x (%g) is nearer or even", name, v, h, got, n, alt)
			return
		}
	}
}
