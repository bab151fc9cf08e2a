package kernels

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestARMPeakProbes runs each probe of this CPU for three iterations and
// checks the sum of its 16 chains: 48 times one instruction's result on
// the operands, computed here from the instruction's definition.
func TestARMPeakProbes(t *testing.T) {
	var src [128]byte
	for i := range src {
		src[i] = byte(i*37 + 11)
	}
	a, b := src[0:16], src[64:80]
	f32 := func(p []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:])) }
	bf := func(p []byte, i int) float32 {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(p[2*i:])) << 16)
	}
	// Operands whose products are exact: small floats.
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(i+1)))
		binary.LittleEndian.PutUint32(src[64+4*i:], math.Float32bits(float32(2*i-3)))
	}
	fl := [4]float32{}
	for i := range fl {
		fl[i] = 48 * f32(a, i) * f32(b, i)
	}
	var sd, sm [4]int32
	var rnd [128]byte
	for i := range rnd {
		rnd[i] = byte(i*37 + 11)
	}
	ra, rb := rnd[0:16], rnd[64:80]
	for lane := 0; lane < 4; lane++ {
		for j := 0; j < 4; j++ {
			sd[lane] += 48 * int32(int8(ra[4*lane+j])) * int32(int8(rb[4*lane+j]))
		}
	}
	for r := 0; r < 2; r++ {
		for c := 0; c < 2; c++ {
			for j := 0; j < 8; j++ {
				sm[2*r+c] += 48 * int32(int8(ra[8*r+j])) * int32(int8(rb[8*c+j]))
			}
		}
	}
	// bfloat16 operands: small integers, exact in every rounding.
	var bsrc [128]byte
	for i := 0; i < 8; i++ {
		binary.LittleEndian.PutUint16(bsrc[2*i:], uint16(math.Float32bits(float32(i-2))>>16))
		binary.LittleEndian.PutUint16(bsrc[64+2*i:], uint16(math.Float32bits(float32(3-i))>>16))
	}
	ba, bb := bsrc[0:16], bsrc[64:80]
	var bd, bm [4]float32
	for lane := 0; lane < 4; lane++ {
		bd[lane] = 48 * (bf(ba, 2*lane)*bf(bb, 2*lane) + bf(ba, 2*lane+1)*bf(bb, 2*lane+1))
	}
	for r := 0; r < 2; r++ {
		for c := 0; c < 2; c++ {
			var s float32
			for j := 0; j < 4; j++ {
				s += bf(ba, 4*r+j) * bf(bb, 4*c+j)
			}
			bm[2*r+c] = 48 * s
		}
	}
	ints := func(v [4]int32) (o [16]byte) {
		for i, x := range v {
			binary.LittleEndian.PutUint32(o[4*i:], uint32(x))
		}
		return o
	}
	floats := func(v [4]float32) (o [16]byte) {
		for i, x := range v {
			binary.LittleEndian.PutUint32(o[4*i:], math.Float32bits(x))
		}
		return o
	}
	probes := peakProbes()
	for _, c := range []struct {
		u    PeakUnit
		src  *[128]byte
		want [16]byte
	}{
		{PeakFMLA, &src, floats(fl)},
		{PeakSDOT, &rnd, ints(sd)},
		{PeakSMMLA, &rnd, ints(sm)},
		{PeakBFDOT, &bsrc, floats(bd)},
		{PeakBFMMLA, &bsrc, floats(bm)},
	} {
		p, ok := probes[c.u]
		if !ok {
			t.Logf("%s: not on this CPU", c.u)
			continue
		}
		var dst [64]byte
		p.loop(3, &c.src[0], &dst[0])
		if [16]byte(dst[:16]) != c.want {
			t.Errorf("%s: the chains sum to % x, want % x", c.u, dst[:16], c.want)
		}
	}
}

// TestTierPeakARM checks that every arm64 tier of this CPU names, for each
// weight type, a unit this CPU probes, and the instruction its products
// use: FMLA for float products, SDOT or SMMLA for the integer ones, BFDOT
// for neon-bf16's float weights.
func TestTierPeakARM(t *testing.T) {
	for _, tier := range Available() {
		for _, typ := range allTypes {
			u, ok := TierPeak(tier, typ)
			if !ok {
				t.Errorf("%s %s: unit %s is not probed here", tier, typ, u)
				continue
			}
			want := PeakFMLA
			switch {
			case tier == TierNEONDotProd && int8Types[typ]:
				want = PeakSDOT
			case tier == TierI8MM && int8Types[typ], tier == TierNEONBF16 && int8Types[typ] && hasI8MM:
				want = PeakSMMLA
			case tier == TierNEONBF16 && int8Types[typ]:
				want = PeakSDOT
			case tier == TierNEONBF16 && bf16Types[typ]:
				want = PeakBFDOT
			}
			if u != want {
				t.Errorf("%s %s: unit %s, want %s", tier, typ, u, want)
			}
		}
		if u, _ := AttentionPeak(tier); u != PeakFMLA {
			t.Errorf("%s: attention's unit %s, want %s", tier, u, PeakFMLA)
		}
	}
}
