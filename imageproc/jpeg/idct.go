package jpeg

// unzig maps zigzag position k to the natural (row-major) index. Entries
// 64..79 are 63 because libjpeg lets a corrupt run push k past 63 and then
// stores into the last coefficient; keeping that behaviour (rather than
// failing) reproduces its pixels for such files and avoids a bounds check.
var unzig = [80]int{
	0, 1, 8, 16, 9, 2, 3, 10,
	17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34,
	27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36,
	29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46,
	53, 60, 61, 54, 47, 55, 62, 63,
	63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63,
}

// The "islow" IDCT constants: cosines scaled by 2^13 and rounded, as in
// the JPEG reference implementation (Loeffler, Ligtenberg and Moschytz).
const (
	constBits = 13
	pass1Bits = 2

	fix0298631336 = 2446
	fix0390180644 = 3196
	fix0541196100 = 4433
	fix0765366865 = 6270
	fix0899976223 = 7373
	fix1175875602 = 9633
	fix1501321110 = 12299
	fix1847759065 = 15137
	fix1961570560 = 16069
	fix2053119869 = 16819
	fix2562915447 = 20995
	fix3072711026 = 25172
)

// idctClamp maps a descaled IDCT output x (before the +128 level shift),
// taken modulo 1024, to a sample: clamp(x+128) for x in [-512, 511]. The
// modulo wrap for larger values matches libjpeg's range-limit table, which
// matters only for corrupt coefficients.
var idctClamp = func() (t [1024]uint8) {
	for i := range t {
		x := i
		if x >= 512 {
			x -= 1024
		}
		t[i] = uint8(min(max(x+128, 0), 255))
	}
	return t
}()

// idctDCOnly fills an 8x8 block whose only non-zero coefficient is DC.
// It equals idctIslow's result for such a block: the column pass yields
// dc*q<<2 in column 0 only, and each row then takes the all-AC-zero path.
func idctDCOnly(dc int16, q int32, dst []uint8, stride int) {
	w := int32(int32(dc)*q) << pass1Bits
	v := idctClamp[(int(w)+16)>>5&1023]
	for y := 0; y < 8; y++ {
		row := dst[y*stride : y*stride+8]
		for x := range row {
			row[x] = v
		}
	}
}

// idctIslow is libjpeg's jpeg_idct_islow: a separable 8x8 integer IDCT
// with dequantization, columns first with 2 extra bits of precision, then
// rows, each output descaled with rounding and range-limited. The
// arithmetic (including which intermediate values are 32-bit) follows
// jidctint.c so that results are identical. The odd part is written out
// in both passes because the compiler will not inline it.
func idctIslow(in *[64]int16, q *[64]int32, dst []uint8, stride int) {
	var ws [64]int32
	for c := 0; c < 8; c++ {
		if in[8+c] == 0 && in[16+c] == 0 && in[24+c] == 0 && in[32+c] == 0 &&
			in[40+c] == 0 && in[48+c] == 0 && in[56+c] == 0 {
			dc := int32(in[c]) * q[c] << pass1Bits
			ws[c], ws[8+c], ws[16+c], ws[24+c] = dc, dc, dc, dc
			ws[32+c], ws[40+c], ws[48+c], ws[56+c] = dc, dc, dc, dc
			continue
		}
		// Even part.
		z2 := int(int32(in[16+c]) * q[16+c])
		z3 := int(int32(in[48+c]) * q[48+c])
		z1 := (z2 + z3) * fix0541196100
		tmp2 := z1 - z3*fix1847759065
		tmp3 := z1 + z2*fix0765366865
		z2 = int(int32(in[c]) * q[c])
		z3 = int(int32(in[32+c]) * q[32+c])
		tmp0 := (z2 + z3) << constBits
		tmp1 := (z2 - z3) << constBits
		tmp10, tmp13 := tmp0+tmp3, tmp0-tmp3
		tmp11, tmp12 := tmp1+tmp2, tmp1-tmp2
		// Odd part: coefficients 7, 5, 3, 1.
		t0 := int(int32(in[56+c]) * q[56+c])
		t1 := int(int32(in[40+c]) * q[40+c])
		t2 := int(int32(in[24+c]) * q[24+c])
		t3 := int(int32(in[8+c]) * q[8+c])
		z1 = t0 + t3
		z2 = t1 + t2
		z3 = t0 + t2
		z4 := t1 + t3
		z5 := (z3 + z4) * fix1175875602
		z1 *= -fix0899976223
		z2 *= -fix2562915447
		z3 = z3*-fix1961570560 + z5
		z4 = z4*-fix0390180644 + z5
		t0 = t0*fix0298631336 + z1 + z3
		t1 = t1*fix2053119869 + z2 + z4
		t2 = t2*fix3072711026 + z2 + z3
		t3 = t3*fix1501321110 + z1 + z4
		const sh = constBits - pass1Bits
		const rnd = 1 << (sh - 1)
		ws[0*8+c] = int32((tmp10 + t3 + rnd) >> sh)
		ws[7*8+c] = int32((tmp10 - t3 + rnd) >> sh)
		ws[1*8+c] = int32((tmp11 + t2 + rnd) >> sh)
		ws[6*8+c] = int32((tmp11 - t2 + rnd) >> sh)
		ws[2*8+c] = int32((tmp12 + t1 + rnd) >> sh)
		ws[5*8+c] = int32((tmp12 - t1 + rnd) >> sh)
		ws[3*8+c] = int32((tmp13 + t0 + rnd) >> sh)
		ws[4*8+c] = int32((tmp13 - t0 + rnd) >> sh)
	}
	for r := 0; r < 8; r++ {
		w := ws[r*8 : r*8+8 : r*8+8]
		out := dst[r*stride : r*stride+8 : r*stride+8]
		if w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0 {
			v := idctClamp[int((int(w[0])+(1<<(pass1Bits+2)))>>(pass1Bits+3))&1023]
			out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7] = v, v, v, v, v, v, v, v
			continue
		}
		z2, z3 := int(w[2]), int(w[6])
		z1 := (z2 + z3) * fix0541196100
		tmp2 := z1 - z3*fix1847759065
		tmp3 := z1 + z2*fix0765366865
		tmp0 := (int(w[0]) + int(w[4])) << constBits
		tmp1 := (int(w[0]) - int(w[4])) << constBits
		tmp10, tmp13 := tmp0+tmp3, tmp0-tmp3
		tmp11, tmp12 := tmp1+tmp2, tmp1-tmp2
		t0, t1, t2, t3 := int(w[7]), int(w[5]), int(w[3]), int(w[1])
		z1 = t0 + t3
		z2 = t1 + t2
		z3 = t0 + t2
		z4 := t1 + t3
		z5 := (z3 + z4) * fix1175875602
		z1 *= -fix0899976223
		z2 *= -fix2562915447
		z3 = z3*-fix1961570560 + z5
		z4 = z4*-fix0390180644 + z5
		t0 = t0*fix0298631336 + z1 + z3
		t1 = t1*fix2053119869 + z2 + z4
		t2 = t2*fix3072711026 + z2 + z3
		t3 = t3*fix1501321110 + z1 + z4
		const sh = constBits + pass1Bits + 3
		const rnd = 1 << (sh - 1)
		out[0] = idctClamp[int((tmp10+t3+rnd)>>sh)&1023]
		out[7] = idctClamp[int((tmp10-t3+rnd)>>sh)&1023]
		out[1] = idctClamp[int((tmp11+t2+rnd)>>sh)&1023]
		out[6] = idctClamp[int((tmp11-t2+rnd)>>sh)&1023]
		out[2] = idctClamp[int((tmp12+t1+rnd)>>sh)&1023]
		out[5] = idctClamp[int((tmp12-t1+rnd)>>sh)&1023]
		out[3] = idctClamp[int((tmp13+t0+rnd)>>sh)&1023]
		out[4] = idctClamp[int((tmp13-t0+rnd)>>sh)&1023]
	}
}

// low4x4 marks the natural positions outside the top-left 4x4 corner.
const low4x4 uint64 = ^uint64(0x0F0F0F0F)

// idctIslowLow4 is idctIslow for blocks whose non-zero coefficients all lie
// in the top-left 4x4 corner (mask&low4x4 == 0), common after
// quantization. It is the same integer arithmetic with the terms that are
// zero left out, so its results are identical.
func idctIslowLow4(in *[64]int16, q *[64]int32, dst []uint8, stride int) {
	var ws [32]int32 // columns 0..3 of the workspace; columns 4..7 are zero
	for c := 0; c < 4; c++ {
		if in[8+c] == 0 && in[16+c] == 0 && in[24+c] == 0 {
			dc := int32(in[c]) * q[c] << pass1Bits
			for r := 0; r < 8; r++ {
				ws[r*4+c] = dc
			}
			continue
		}
		z2 := int(int32(in[16+c]) * q[16+c])
		z1 := z2 * fix0541196100
		tmp2 := z1
		tmp3 := z1 + z2*fix0765366865
		tmp0 := int(int32(in[c])*q[c]) << constBits
		tmp10, tmp13 := tmp0+tmp3, tmp0-tmp3
		tmp11, tmp12 := tmp0+tmp2, tmp0-tmp2
		t2 := int(int32(in[24+c]) * q[24+c])
		t3 := int(int32(in[8+c]) * q[8+c])
		z5 := (t2 + t3) * fix1175875602
		z3 := t2*-fix1961570560 + z5
		z4 := t3*-fix0390180644 + z5
		z1 = t3 * -fix0899976223
		z2 = t2 * -fix2562915447
		o0 := z1 + z3
		o1 := z2 + z4
		o2 := t2*fix3072711026 + z2 + z3
		o3 := t3*fix1501321110 + z1 + z4
		const sh = constBits - pass1Bits
		const rnd = 1 << (sh - 1)
		ws[0*4+c] = int32((tmp10 + o3 + rnd) >> sh)
		ws[7*4+c] = int32((tmp10 - o3 + rnd) >> sh)
		ws[1*4+c] = int32((tmp11 + o2 + rnd) >> sh)
		ws[6*4+c] = int32((tmp11 - o2 + rnd) >> sh)
		ws[2*4+c] = int32((tmp12 + o1 + rnd) >> sh)
		ws[5*4+c] = int32((tmp12 - o1 + rnd) >> sh)
		ws[3*4+c] = int32((tmp13 + o0 + rnd) >> sh)
		ws[4*4+c] = int32((tmp13 - o0 + rnd) >> sh)
	}
	for r := 0; r < 8; r++ {
		w := ws[r*4 : r*4+4 : r*4+4]
		out := dst[r*stride : r*stride+8 : r*stride+8]
		if w[1] == 0 && w[2] == 0 && w[3] == 0 {
			v := idctClamp[int((int(w[0])+(1<<(pass1Bits+2)))>>(pass1Bits+3))&1023]
			out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7] = v, v, v, v, v, v, v, v
			continue
		}
		z2 := int(w[2])
		z1 := z2 * fix0541196100
		tmp2 := z1
		tmp3 := z1 + z2*fix0765366865
		tmp0 := int(w[0]) << constBits
		tmp10, tmp13 := tmp0+tmp3, tmp0-tmp3
		tmp11, tmp12 := tmp0+tmp2, tmp0-tmp2
		t2, t3 := int(w[3]), int(w[1])
		z5 := (t2 + t3) * fix1175875602
		z3 := t2*-fix1961570560 + z5
		z4 := t3*-fix0390180644 + z5
		z1 = t3 * -fix0899976223
		z2 = t2 * -fix2562915447
		o0 := z1 + z3
		o1 := z2 + z4
		o2 := t2*fix3072711026 + z2 + z3
		o3 := t3*fix1501321110 + z1 + z4
		const sh = constBits + pass1Bits + 3
		const rnd = 1 << (sh - 1)
		out[0] = idctClamp[int((tmp10+o3+rnd)>>sh)&1023]
		out[7] = idctClamp[int((tmp10-o3+rnd)>>sh)&1023]
		out[1] = idctClamp[int((tmp11+o2+rnd)>>sh)&1023]
		out[6] = idctClamp[int((tmp11-o2+rnd)>>sh)&1023]
		out[2] = idctClamp[int((tmp12+o1+rnd)>>sh)&1023]
		out[5] = idctClamp[int((tmp12-o1+rnd)>>sh)&1023]
		out[3] = idctClamp[int((tmp13+o0+rnd)>>sh)&1023]
		out[4] = idctClamp[int((tmp13-o0+rnd)>>sh)&1023]
	}
}

// idctMasked transforms a block whose coded natural positions are the set
// bits of nz (bit 0, DC, always set), with the cheapest exact kernel.
func idctMasked(in *[64]int16, nz uint64, q *[64]int32, dst []uint8, stride int) {
	switch {
	case nz == 1:
		idctDCOnly(in[0], q[0], dst, stride)
	case idctVec(in, q, dst, stride):
	case nz&low4x4 == 0:
		idctIslowLow4(in, q, dst, stride)
	default:
		idctIslow(in, q, dst, stride)
	}
}

// idctAny transforms a block whose non-zero positions are not known,
// picking the cheapest of the exact kernels from its contents.
func idctAny(in *[64]int16, q *[64]int32, dst []uint8, stride int) {
	var outer, corner int16
	for r := 0; r < 4; r++ {
		row := in[r*8 : r*8+8 : r*8+8]
		corner |= row[1] | row[2] | row[3]
		outer |= row[4] | row[5] | row[6] | row[7]
		if r > 0 {
			corner |= row[0]
		}
	}
	for _, v := range in[32:] {
		outer |= v
	}
	switch {
	case (outer|corner) != 0 && idctVec(in, q, dst, stride):
	case outer != 0:
		idctIslow(in, q, dst, stride)
	case corner != 0:
		idctIslowLow4(in, q, dst, stride)
	default:
		idctDCOnly(in[0], q[0], dst, stride)
	}
}
