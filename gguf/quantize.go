package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The quantizers follow ggml's reference algorithms, the ones llama-quantize
// runs when no importance matrix is given (quantize_row_*_ref, and for
// IQ4_NL / IQ4_XS the non-linear search with 7 scale trials). Arithmetic is
// float32 in ggml's order; products added to something are converted to
// float32 explicitly so they are never fused into an FMA.

// blockEncoder encodes one block of values x into dst.
type blockEncoder func(x []float32, dst []byte)

var encoders = map[Type]blockEncoder{
	TypeF32:    func(x []float32, d []byte) { binary.LittleEndian.PutUint32(d, math.Float32bits(x[0])) },
	TypeF16:    func(x []float32, d []byte) { binary.LittleEndian.PutUint16(d, F32ToF16(x[0])) },
	TypeBF16:   func(x []float32, d []byte) { binary.LittleEndian.PutUint16(d, F32ToBF16(x[0])) },
	TypeQ4_0:   encodeQ4_0,
	TypeQ4_1:   encodeQ4_1,
	TypeQ5_0:   encodeQ5_0,
	TypeQ5_1:   encodeQ5_1,
	TypeQ8_0:   encodeQ8_0,
	TypeQ2_K:   encodeQ2_K,
	TypeQ3_K:   encodeQ3_K,
	TypeQ4_K:   encodeQ4_K,
	TypeQ5_K:   encodeQ5_K,
	TypeQ6_K:   encodeQ6_K,
	TypeQ8_K:   encodeQ8_K,
	TypeIQ4_NL: encodeIQ4_NL,
	TypeIQ4_XS: encodeIQ4_XS,
}

// CanQuantize reports whether Quantize encodes type t.
func CanQuantize(t Type) bool { _, ok := encoders[t]; return ok }

// Quantize encodes src as type t. len(src) must be a multiple of t's block
// size and every value finite.
func Quantize(t Type, src []float32) ([]byte, error) {
	enc, ok := encoders[t]
	if !ok {
		return nil, fmt.Errorf("gguf: quantize: type %s not supported", t)
	}
	nb, err := t.RowBytes(len(src))
	if err != nil {
		return nil, err
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("gguf: quantize %s: value %d is %g", t, i, v)
		}
	}
	out := make([]byte, nb)
	switch t {
	// Scalar types get tight loops; a call per value would dominate.
	case TypeF32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	case TypeF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToF16(v))
		}
		return out, nil
	case TypeBF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToBF16(v))
		}
		return out, nil
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	for b := 0; b < len(src)/bs; b++ {
		enc(src[b*bs:(b+1)*bs], out[b*ts:(b+1)*ts])
	}
	return out, nil
}

// F32ToF16 rounds a float32 to the nearest IEEE binary16 (ties to even),
// overflowing to infinity and keeping NaNs quiet, as the F16C instruction
// ggml uses does.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal (or zero) half: shift the full mantissa into place and
		// round on the bits shifted out.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: still correct
	}
	return sign | uint16(h)
}

// F32ToBF16 rounds a float32 to bfloat16 (ties to even, NaNs quiet), as
// ggml's converter does.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// nearestInt rounds to the nearest integer, ties to even, with ggml's
// magic-number trick (valid for |f| < 2^22).
func nearestInt(f float32) int {
	// The conversion keeps a product passed as f (inlined) from fusing
	// with the add, which would round it once less than ggml does.
	v := float32(f) + 12582912
	return int(math.Float32bits(v)&0x7fffff) - 0x400000
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// absMax returns the value of largest magnitude (the first one on ties)
// and its magnitude.
func absMax(x []float32) (max, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, max = a, v
		}
	}
	return max, amax
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

func encodeQ4_0(x []float32, y []byte) {
	max, _ := absMax(x)
	d := max / -8
	id := inverse(d)
	putF16(y, d)
	for j := range 16 {
		q0 := min(15, int(float32(x[j]*id)+8.5))
		q1 := min(15, int(float32(x[j+16]*id)+8.5))
		y[2+j] = byte(q0) | byte(q1)<<4
	}
}

func encodeQ4_1(x []float32, y []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	id := inverse(d)
	putF16(y, d)
	putF16(y[2:], lo)
	for j := range 16 {
		q0 := min(15, int(float32((x[j]-lo)*id)+0.5))
		q1 := min(15, int(float32((x[j+16]-lo)*id)+0.5))
		y[4+j] = byte(q0) | byte(q1)<<4
	}
}

// packQ5 stores 32 five-bit quants as Q5_0/Q5_1 do: low nibbles in qs, the
// fifth bits in the little-endian word qh.
func packQ5(q *[32]int, qh, qs []byte) {
	var h uint32
	for j := range 16 {
		qs[j] = byte(q[j]&0xf) | byte(q[j+16]&0xf)<<4
		h |= uint32(q[j]>>4&1) << j
		h |= uint32(q[j+16]>>4&1) << (j + 16)
	}
	binary.LittleEndian.PutUint32(qh, h)
}

func encodeQ5_0(x []float32, y []byte) {
	max, _ := absMax(x)
	d := max / -16
	id := inverse(d)
	putF16(y, d)
	var q [32]int
	for j := range 32 {
		q[j] = min(31, int(float32(x[j]*id)+16.5))
	}
	packQ5(&q, y[2:6], y[6:22])
}

func encodeQ5_1(x []float32, y []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 31
	id := inverse(d)
	putF16(y, d)
	putF16(y[2:], lo)
	var q [32]int
	for j := range 32 {
		q[j] = int(uint8(float32((x[j]-lo)*id) + 0.5))
	}
	packQ5(&q, y[4:8], y[8:24])
}

func encodeQ8_0(x []float32, y []byte) {
	_, amax := absMax(x)
	d := amax / 127
	id := inverse(d)
	putF16(y, d)
	for j, v := range x {
		y[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

func encodeQ8_K(x []float32, y []byte) {
	clear(y)
	max, amax := absMax(x)
	if amax == 0 {
		return
	}
	iscale := -127 / max
	binary.LittleEndian.PutUint32(y, math.Float32bits(1/iscale))
	qs := y[4:260]
	for j, v := range x {
		qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
	}
	for j := range 16 {
		sum := 0
		for _, q := range qs[16*j : 16*j+16] {
			sum += int(int8(q))
		}
		binary.LittleEndian.PutUint16(y[260+2*j:], uint16(int16(sum)))
	}
}

// groupMaxEps is ggml's threshold below which a group counts as all zero.
const groupMaxEps = 1e-15

// x2Weighted returns the terms w·x·l and w·l·l with weight w = x², rounded
// as ggml rounds them.
func x2Weighted(x float32, l int) (lx, l2 float32) {
	w, fl := x*x, float32(l)
	return float32(float32(w*x) * fl), float32(float32(w*fl) * fl)
}

// makeQxQuants finds a scale for n signed quants in [-nmax, nmax) by trying
// 19 scales around nmax/max and keeping the one with the smallest error
// weighted by x² (ggml's make_qx_quants with rmse_type 1). L receives the
// quants offset by nmax.
func makeQxQuants(nmax int, x []float32, L []int8) float32 {
	xmax, amax := absMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	fmax := float32(nmax)
	quant := func(iscale float32, i int) int { return max(-nmax, min(nmax-1, nearestInt(iscale*x[i]))) }
	iscale := -fmax / xmax
	var sumlx, suml2 float32
	for i := range x {
		l := quant(iscale, i)
		L[i] = int8(l + nmax)
		lx, l2 := x2Weighted(x[i], l)
		sumlx += lx
		suml2 += l2
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -float32(fmax+float32(0.1*float32(is))) / xmax
		sumlx, suml2 = 0, 0
		for i := range x {
			l := quant(iscale, i)
			lx, l2 := x2Weighted(x[i], l)
			sumlx += lx
			suml2 += l2
		}
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			for i := range x {
				L[i] = int8(nmax + quant(iscale, i))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQkx2Quants finds a scale and a (non-positive) minimum for n unsigned
// quants in [0, nmax], searching nstep+1 scales and solving the weighted
// least-squares fit for each (ggml's make_qkx2_quants). It returns the scale
// and -min.
func makeQkx2Quants(nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, negMin float32) {
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < len(x); i++ {
		mn, mx = min(mn, x[i]), max(mx, x[i])
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := range x {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	quant := func(iscale, m float32, i int) uint8 {
		return uint8(max(0, min(nmax, nearestInt(iscale*(x[i]-m)))))
	}
	errOf := func(scale, m float32, q []uint8) float32 {
		var e float32
		for i := range x {
			diff := float32(scale*float32(q[i])) + m - x[i]
			if useMad {
				diff = abs32(diff)
			} else {
				diff = diff * diff
			}
			e += float32(weights[i] * diff)
		}
		return e
	}
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	for i := range x {
		L[i] = quant(iscale, mn, i)
	}
	bestErr := errOf(scale, mn, L)
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range x {
			l := quant(iscale, mn, i)
			Laux[i] = l
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			if cur := errOf(thisScale, thisMin, Laux); cur < bestErr {
				copy(L, Laux[:len(x)])
				bestErr, scale, mn = cur, thisScale, thisMin
			}
		}
	}
	return scale, -mn
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: start from nmax/max,
// then move single quants while that lowers the x²-weighted error. L receives
// the quants offset by nmax.
func makeQ3Quants(nmax int, x []float32, L []int8) float32 {
	xmax, amax := absMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := -float32(nmax) / xmax
	var sumlx, suml2 float32
	for i := range x {
		l := max(-nmax, min(nmax-1, nearestInt(iscale*x[i])))
		L[i] = int8(l)
		lx, l2 := x2Weighted(x[i], l)
		sumlx += lx
		suml2 += l2
	}
	for range 5 {
		changed := 0
		for i := range x {
			lx, l2 := x2Weighted(x[i], int(L[i]))
			slx := sumlx - lx
			if slx <= 0 {
				continue
			}
			sl2 := suml2 - l2
			nl := max(-nmax, min(nmax-1, nearestInt(x[i]*sl2/slx)))
			if nl == int(L[i]) {
				continue
			}
			lx, l2 = x2Weighted(x[i], nl)
			slx += lx
			sl2 += l2
			if sl2 > 0 && float32(slx*slx)*suml2 > float32(sumlx*sumlx)*sl2 {
				L[i] = int8(nl)
				sumlx, suml2 = slx, sl2
				changed++
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range x {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// packQ2 stores 256 two-bit quants as Q2_K and Q3_K do: byte l of each
// 32-byte group holds quants l, l+32, l+64, l+96 of a 128-value half.
func packQ2(L []uint8, qs []byte) {
	for j := 0; j < 256; j += 128 {
		for l := range 32 {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

func encodeQ2_K(x []float32, y []byte) {
	var L [256]uint8
	var Laux [16]uint8
	var weights [16]float32
	var mins, scales [16]float32
	var maxScale, maxMin float32
	for j := range 16 {
		xb := x[16*j : 16*j+16]
		for l, v := range xb {
			weights[l] = abs32(v)
		}
		scales[j], mins[j] = makeQkx2Quants(3, xb, weights[:], L[16*j:16*j+16], Laux[:], -0.5, 0.1, 15, true)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	sc := y[:16]
	clear(sc)
	putF16(y[80:], 0)
	putF16(y[82:], 0)
	if maxScale > 0 {
		iscale := 15 / maxScale
		for j := range 16 {
			sc[j] = uint8(nearestInt(iscale * scales[j]))
		}
		putF16(y[80:], maxScale/15)
	}
	if maxMin > 0 {
		iscale := 15 / maxMin
		for j := range 16 {
			sc[j] |= uint8(nearestInt(iscale*mins[j])) << 4
		}
		putF16(y[82:], maxMin/15)
	}
	dAll, mAll := f16(y[80:]), f16(y[82:])
	for j := range 16 {
		d := dAll * float32(sc[j]&0xf)
		if d == 0 {
			continue
		}
		dm := float32(mAll * float32(sc[j]>>4))
		for ii := range 16 {
			L[16*j+ii] = uint8(max(0, min(3, nearestInt((x[16*j+ii]+dm)/d))))
		}
	}
	packQ2(L[:], y[16:80])
}

func encodeQ3_K(x []float32, y []byte) {
	var L [256]int8
	var scales [16]float32
	for j := range 16 {
		scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
	}
	maxScale, _ := absMax(scales[:])
	hmask, qs, sc := y[:32], y[32:96], y[96:108]
	clear(sc)
	putF16(y[108:], 0)
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := range 16 {
			l := max(-32, min(31, int(int8(nearestInt(iscale*scales[j]))))) + 32
			if j < 8 {
				sc[j] = uint8(l & 0xf)
			} else {
				sc[j-8] |= uint8(l&0xf) << 4
			}
			sc[j%4+8] |= uint8(l>>4) << (2 * (j / 4))
		}
		putF16(y[108:], 1/iscale)
	}
	dAll := f16(y[108:])
	for j := range 16 {
		d := dAll * float32(q3Scale(sc, j))
		if d == 0 {
			continue
		}
		for ii := range 16 {
			L[16*j+ii] = int8(max(-4, min(3, nearestInt(x[16*j+ii]/d))) + 4)
		}
	}
	clear(hmask)
	var U [256]uint8
	for j := range 256 {
		l := uint8(L[j])
		if l > 3 {
			hmask[j%32] |= 1 << (j / 32)
			l -= 4
		}
		U[j] = l
	}
	packQ2(U[:], qs)
}

// quantizeK4 is the common part of Q4_K and Q5_K: per 32-value sub-block a
// scale and min from makeQkx2Quants, both quantized to 6 bits against the
// block's largest, then every value requantized with the stored scales.
// It writes d, dmin and the scales and returns the quants.
func quantizeK4(x []float32, y []byte, nmax int, rmin float32, nstep int) (L [256]uint8) {
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xb := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xb {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xb {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQkx2Quants(nmax, xb, weights[:], L[32*j:32*j+32], Laux[:], rmin, 0.1, nstep, false)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j], sc[j+4] = ls, lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(y, maxScale/63)
	putF16(y[2:], maxMin/63)
	dAll, mAll := f16(y), f16(y[2:])
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		d := dAll * float32(s)
		if d == 0 {
			continue
		}
		dm := float32(mAll * float32(m))
		for ii := range 32 {
			L[32*j+ii] = uint8(max(0, min(nmax, nearestInt((x[32*j+ii]+dm)/d))))
		}
	}
	return L
}

func encodeQ4_K(x []float32, y []byte) {
	L := quantizeK4(x, y, 15, -1, 20)
	qs := y[16:144]
	for j := 0; j < 256; j += 64 {
		for l := range 32 {
			qs[j/2+l] = L[j+l] | L[j+l+32]<<4
		}
	}
}

func encodeQ5_K(x []float32, y []byte) {
	L := quantizeK4(x, y, 31, -0.5, 15)
	qh, ql := y[16:48], y[48:176]
	clear(qh)
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < 256; n += 64 {
		for j := range 32 {
			l1, l2 := L[n+j], L[n+j+32]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[n/2+j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
	}
}

func encodeQ6_K(x []float32, y []byte) {
	var L [256]int8
	var scales [16]float32
	for ib := range 16 {
		scales[ib] = makeQxQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
	}
	maxScale, maxAbs := absMax(scales[:])
	clear(y)
	if maxAbs < groupMaxEps {
		return
	}
	iscale := -128 / maxScale
	putF16(y[208:], 1/iscale)
	sc := y[192:208]
	for ib := range 16 {
		sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	dAll := f16(y[208:])
	for j := range 16 {
		d := dAll * float32(int8(sc[j]))
		if d == 0 {
			continue
		}
		for ii := range 16 {
			L[16*j+ii] = int8(max(-32, min(31, nearestInt(x[16*j+ii]/d))) + 32)
		}
	}
	for j := 0; j < 256; j += 128 {
		ql := y[j/2 : j/2+64]
		qh := y[128+j/4 : 128+j/4+32]
		for l := range 32 {
			q1, q2, q3, q4 := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[l] = q1&0xf | (q3&0xf)<<4
			ql[l+32] = q2&0xf | (q4&0xf)<<4
			qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}

// bestIndexIQ4 returns the index of the codebook entry nearest to x (the
// upper one on ties, as ggml), by bisection over the sorted table.
func bestIndexIQ4(x float32) uint8 {
	v := &kvaluesIQ4NL
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// iq4Scale searches the scale of one 32-value group for the non-linear
// codebook: the start d = max/values[0] and 2·ntry+1 nearby trials, keeping
// the one with the smallest x²-weighted error. L receives the codebook
// indices of the starting scale.
func iq4Scale(xb []float32, L []uint8, ntry int) float32 {
	max, amax := absMax(xb)
	if amax < groupMaxEps {
		return 0
	}
	v0 := float32(kvaluesIQ4NL[0])
	d := -max / v0
	id := 1 / d
	fit := func(id float32, store bool) (sumqx, sumq2 float32) {
		for j, x := range xb {
			l := bestIndexIQ4(id * x)
			if store {
				L[j] = l
			}
			q := float32(kvaluesIQ4NL[l])
			w := x * x
			sumqx += float32(float32(w*q) * x)
			sumq2 += float32(float32(w*q) * q)
		}
		return sumqx, sumq2
	}
	sumqx, sumq2 := fit(id, true)
	d = 0
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	best := d * sumqx
	for itry := -ntry; itry <= ntry; itry++ {
		id = (float32(itry) + v0) / max
		sumqx, sumq2 = fit(id, false)
		if sumq2 > 0 && sumqx*sumqx > best*sumq2 {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// packIQ4 stores 32-value groups of 4-bit indices: byte j holds j and j+16.
func packIQ4(L []uint8, qs []byte) {
	for i := 0; i < len(L)/32; i++ {
		for j := range 16 {
			qs[16*i+j] = L[32*i+j] | L[32*i+16+j]<<4
		}
	}
}

func encodeIQ4_NL(x []float32, y []byte) {
	var L [32]uint8
	d := iq4Scale(x, L[:], 7)
	putF16(y, d)
	id := inverse(d)
	for j, v := range x {
		L[j] = bestIndexIQ4(id * v)
	}
	packIQ4(L[:], y[2:18])
}

func encodeIQ4_XS(x []float32, y []byte) {
	var L [256]uint8
	var scales [8]float32
	for ib := range 8 {
		scales[ib] = iq4Scale(x[32*ib:32*ib+32], L[32*ib:32*ib+32], 7)
	}
	maxScale, _ := absMax(scales[:])
	d := -maxScale / 32
	putF16(y, d)
	id := inverse(d)
	var sh uint16
	sl := y[4:8]
	for ib := range 8 {
		l := max(-32, min(31, nearestInt(id*scales[ib])))
		dl := d * float32(l)
		idl := inverse(dl)
		for j, v := range x[32*ib : 32*ib+32] {
			L[32*ib+j] = bestIndexIQ4(idl * v)
		}
		l += 32
		if ib%2 == 0 {
			sl[ib/2] = uint8(l & 0xf)
		} else {
			sl[ib/2] |= uint8(l&0xf) << 4
		}
		sh |= uint16(l>>4) << (2 * ib)
	}
	binary.LittleEndian.PutUint16(y[2:], sh)
	packIQ4(L[:], y[8:136])
}
