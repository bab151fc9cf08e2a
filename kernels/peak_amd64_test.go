package kernels

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
)

// TestPeakProbes runs each probe this CPU has on operands chosen so that
// a wrong encoding (the BYTE-encoded VDPBF16PS and VEX VPDPBUSD), swapped
// operands, a lost chain or a wrong lane count gives another sum, and
// checks the sum of its accumulators exactly.
func TestPeakProbes(t *testing.T) {
	const n = 100
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	rep := func(b []byte, size int) []byte {
		var out []byte
		for len(out) < size {
			out = append(out, b...)
		}
		return out
	}
	cases := []struct {
		loop    func(n int, src, dst *byte)
		unit    PeakUnit
		a, b    []byte // one lane's pattern of each operand
		lanes   int
		float   bool
		perLane float64 // the sum of every chain's lane after n iterations
	}{
		{peakFMA512, PeakFMA512, f32(1.5), f32(-2), 16, true, 16 * n * 1.5 * -2},
		// Unsigned 200 (-56 if taken as signed) by signed -3 (253 if
		// unsigned), four products a lane.
		{peakVNNI512, PeakVNNI512, []byte{200, 200, 200, 200}, []byte{253, 253, 253, 253}, 16, false, 16 * n * 4 * 200 * -3},
		{peakVNNI256, PeakVNNI256, []byte{200, 200, 200, 200}, []byte{253, 253, 253, 253}, 8, false, 12 * n * 4 * 200 * -3},
		// bf16 pairs (1, 3) and (2, 0.5): 1·2 + 3·0.5 a lane.
		{peakBF16, PeakBF16, []byte{0x80, 0x3F, 0x40, 0x40}, []byte{0x00, 0x40, 0x00, 0x3F}, 16, true, 16 * n * 3.5},
	}
	have := PeakUnits()
	for _, c := range cases {
		if !slices.Contains(have, c.unit) {
			t.Logf("%s: this CPU lacks the instruction; not run", c.unit)
			continue
		}
		src := append(rep(c.a, 64), rep(c.b, 64)...)
		dst := make([]byte, 64)
		c.loop(n, &src[0], &dst[0])
		for l := 0; l < c.lanes; l++ {
			raw := binary.LittleEndian.Uint32(dst[4*l:])
			got := float64(int32(raw))
			if c.float {
				got = float64(math.Float32frombits(raw))
			}
			if got != c.perLane {
				t.Errorf("%s lane %d: %v, want %v", c.unit, l, got, c.perLane)
			}
		}
		if g, ok := Peak(c.unit, 1, 5*time.Millisecond); !ok || !(g > 0) {
			t.Errorf("Peak(%s): %v, %v", c.unit, g, ok)
		}
	}
	if len(have) == 0 || have[0] != PeakFMA256 {
		t.Errorf("PeakUnits() = %v: want the AVX2 FMA first on every AVX2 machine", have)
	}
}

// TestTierPeak checks that every available tier names a unit this CPU
// probes for every weight type (the AMX tiers too: where they run, the
// tile probes do), and the units of the integer and AMX products.
func TestTierPeak(t *testing.T) {
	for _, tier := range Available() {
		for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ8_K} {
			u, ok := TierPeak(tier, typ)
			if !ok {
				t.Errorf("%s %s: unit %q not probed here", tier, typ, u)
			}
		}
	}
	// Attention multiplies float32 on every tier: a float FMA unit,
	// the zmm one wherever the tier's float32 products are avx512's.
	for _, tier := range Available() {
		u, ok := AttentionPeak(tier)
		want := PeakFMA256
		if hasTier(TierAVX512) && tier != TierAVX2 && tier != TierAVX2Int8 && tier != TierGeneric && tier != TierReference {
			want = PeakFMA512
		}
		if !ok || u != want {
			t.Errorf("%s attention: %q (probed %v), want %s", tier, u, ok, want)
		}
	}
	for tier, want := range map[Tier]PeakUnit{TierAVX512VNNI: PeakVNNI512, TierAVXVNNI: PeakVNNI256, TierAVX2Int8: PeakFMA256, TierAMX: PeakAMXInt8} {
		if u, _ := TierPeak(tier, gguf.TypeQ4_K); u != want {
			t.Errorf("%s Q4_K: %s, want %s", tier, u, want)
		}
	}
	if u, _ := TierPeak(TierAMXBF16, gguf.TypeF16); u != PeakAMXBF16 {
		t.Errorf("%s F16: %s, want %s", TierAMXBF16, u, PeakAMXBF16)
	}
}
