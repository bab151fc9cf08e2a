package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// The block decoders below follow ggml's reference scalar dequantizers
// operation by operation, in float32, so results match bit for bit. Products
// that ggml adds to something are wrapped in an explicit float32 conversion:
// that forbids the compiler from fusing them into an FMA, which would round
// differently.

// blockDecoder decodes one block of src into dst (one block's worth).
type blockDecoder func(src []byte, dst []float32)

var decoders = map[Type]blockDecoder{
	TypeF32:    func(s []byte, d []float32) { d[0] = math.Float32frombits(binary.LittleEndian.Uint32(s)) },
	TypeF16:    func(s []byte, d []float32) { d[0] = F16ToF32(binary.LittleEndian.Uint16(s)) },
	TypeBF16:   func(s []byte, d []float32) { d[0] = BF16ToF32(binary.LittleEndian.Uint16(s)) },
	TypeF64:    func(s []byte, d []float32) { d[0] = float32(math.Float64frombits(binary.LittleEndian.Uint64(s))) },
	TypeI8:     func(s []byte, d []float32) { d[0] = float32(int8(s[0])) },
	TypeI16:    func(s []byte, d []float32) { d[0] = float32(int16(binary.LittleEndian.Uint16(s))) },
	TypeI32:    func(s []byte, d []float32) { d[0] = float32(int32(binary.LittleEndian.Uint32(s))) },
	TypeQ4_0:   decodeQ4_0,
	TypeQ4_1:   decodeQ4_1,
	TypeQ5_0:   decodeQ5_0,
	TypeQ5_1:   decodeQ5_1,
	TypeQ8_0:   decodeQ8_0,
	TypeQ2_K:   decodeQ2_K,
	TypeQ3_K:   decodeQ3_K,
	TypeQ4_K:   decodeQ4_K,
	TypeQ5_K:   decodeQ5_K,
	TypeQ6_K:   decodeQ6_K,
	TypeQ8_K:   decodeQ8_K,
	TypeIQ4_NL: decodeIQ4_NL,
	TypeIQ4_XS: decodeIQ4_XS,
}

// CanDequantize reports whether Dequantize decodes type t.
func CanDequantize(t Type) bool { _, ok := decoders[t]; return ok }

// Dequantize decodes len(dst) values of type t from src into dst, exactly as
// ggml's to_float does. len(dst) must be a multiple of t's block size and src
// must hold at least the bytes of that many values.
func Dequantize(t Type, src []byte, dst []float32) error {
	nb, err := t.RowBytes(len(dst))
	if err != nil {
		return err
	}
	if len(src) < nb {
		return fmt.Errorf("gguf: dequantize %s: need %d bytes, have %d", t, nb, len(src))
	}
	switch t {
	// Scalar types get tight loops; a call per value would dominate.
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return nil
	case TypeF16:
		tab := f16Table()
		for i := range dst {
			dst[i] = tab[binary.LittleEndian.Uint16(src[2*i:])]
		}
		return nil
	case TypeBF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return nil
	}
	dec, ok := decoders[t]
	if !ok {
		return fmt.Errorf("gguf: dequantize: type %s not supported", t)
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	for b := 0; b < len(dst)/bs; b++ {
		dec(src[b*ts:(b+1)*ts], dst[b*bs:(b+1)*bs])
	}
	return nil
}

// F16ToF32 converts an IEEE binary16 value to float32 exactly, subnormals,
// infinities and NaNs included.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: normalize into a float32 normal.
	e := uint32(113)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// f16Table maps every binary16 bit pattern to its float32 value; a lookup
// is several times faster than converting.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for h := range t {
		t[h] = F16ToF32(uint16(h))
	}
	return t
})

// BF16ToF32 widens a bfloat16 (the upper half of a float32) exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func f16(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }

func decodeQ4_0(s []byte, y []float32) {
	d := f16(s)
	qs := s[2:18]
	for j := range 16 {
		y[j] = float32(int(qs[j]&0xf)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

func decodeQ4_1(s []byte, y []float32) {
	d, m := f16(s), f16(s[2:])
	qs := s[4:20]
	for j := range 16 {
		y[j] = float32(float32(qs[j]&0xf)*d) + m
		y[j+16] = float32(float32(qs[j]>>4)*d) + m
	}
}

// q5 returns the two 5-bit quants of byte j of a Q5_0/Q5_1 block.
func q5(qs []byte, h uint32, j int) (lo, hi int) {
	lo = int(qs[j]&0xf) | int((h>>j)&1)<<4
	hi = int(qs[j]>>4) | int((h>>(j+16))&1)<<4
	return lo, hi
}

func decodeQ5_0(s []byte, y []float32) {
	d := f16(s)
	h := binary.LittleEndian.Uint32(s[2:])
	qs := s[6:22]
	for j := range 16 {
		lo, hi := q5(qs, h, j)
		y[j] = float32(lo-16) * d
		y[j+16] = float32(hi-16) * d
	}
}

func decodeQ5_1(s []byte, y []float32) {
	d, m := f16(s), f16(s[2:])
	h := binary.LittleEndian.Uint32(s[4:])
	qs := s[8:24]
	for j := range 16 {
		lo, hi := q5(qs, h, j)
		y[j] = float32(float32(lo)*d) + m
		y[j+16] = float32(float32(hi)*d) + m
	}
}

func decodeQ8_0(s []byte, y []float32) {
	d := f16(s)
	for j, q := range s[2:34] {
		y[j] = float32(int8(q)) * d
	}
}

func decodeQ2_K(s []byte, y []float32) {
	scales, qs := s[:16], s[16:80]
	d, dmin := f16(s[80:]), f16(s[82:])
	out, is := 0, 0
	for half := range 2 {
		q := qs[32*half : 32*half+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for g := range 2 {
				sc := scales[is]
				is++
				// A product is converted before it is added to (float32(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
				dl, ml := d*float32(sc&0xf), float32(dmin*float32(sc>>4))
				for l := range 16 {
					y[out] = float32(dl*float32((q[16*g+l]>>shift)&3)) - ml
					out++
				}
			}
		}
	}
}

// q3Scale is the signed 6-bit scale s (0..15) of a Q3_K block.
func q3Scale(b []byte, s int) int {
	var low int
	if s < 8 {
		low = int(b[s] & 0xf)
	} else {
		low = int(b[s-8] >> 4)
	}
	high := int(b[8+s%4]>>(2*(s/4))) & 3
	return low | high<<4 - 32
}

func decodeQ3_K(s []byte, y []float32) {
	hmask, sc := (*[32]byte)(s[:32]), s[96:108]
	d := f16(s[108:])
	out, is := 0, 0
	bit := uint(0)
	for half := range 2 {
		q := (*[32]byte)(s[32+32*half : 64+32*half])
		for shift := uint(0); shift < 8; shift += 2 {
			for g := range 2 {
				dl := d * float32(q3Scale(sc, is))
				is++
				qq, hm := (*[16]byte)(q[16*g:]), (*[16]byte)(hmask[16*g:])
				o := (*[16]float32)(y[out:])
				out += 16
				for l := range 16 {
					// A clear high bit means the quant is 4 lower.
					v := int(qq[l]>>shift&3) - int(^hm[l]>>bit&1)<<2
					o[l] = dl * float32(v)
				}
			}
			bit++
		}
	}
}

// scaleMinK4 unpacks the 6-bit scale and min j (0..7) of a Q4_K/Q5_K block.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// chunkScalesK4 returns the scales and mins of the two 32-value halves of
// 64-value chunk c of a Q4_K/Q5_K block.
func chunkScalesK4(d, dmin float32, scales []byte, c int) (d1, min1, d2, min2 float32) {
	sc1, m1 := scaleMinK4(2*c, scales)
	sc2, m2 := scaleMinK4(2*c+1, scales)
	return d * float32(sc1), dmin * float32(m1), d * float32(sc2), dmin * float32(m2)
}

func decodeQ4_K(s []byte, y []float32) {
	d, dmin := f16(s), f16(s[2:])
	scales, qs := s[4:16], s[16:144]
	for c := range 4 {
		d1, min1, d2, min2 := chunkScalesK4(d, dmin, scales, c)
		q := qs[32*c : 32*c+32]
		o := y[64*c : 64*c+64]
		for l := range 32 {
			o[l] = float32(d1*float32(q[l]&0xf)) - min1
			o[32+l] = float32(d2*float32(q[l]>>4)) - min2
		}
	}
}

func decodeQ5_K(s []byte, y []float32) {
	d, dmin := f16(s), f16(s[2:])
	scales, qh, qs := s[4:16], s[16:48], s[48:176]
	for c := range 4 {
		d1, min1, d2, min2 := chunkScalesK4(d, dmin, scales, c)
		q := qs[32*c : 32*c+32]
		o := y[64*c : 64*c+64]
		for l := range 32 {
			lo := q[l]&0xf | (qh[l]>>(2*c)&1)<<4
			hi := q[l]>>4 | (qh[l]>>(2*c+1)&1)<<4
			o[l] = float32(d1*float32(lo)) - min1
			o[32+l] = float32(d2*float32(hi)) - min2
		}
	}
}

func decodeQ6_K(s []byte, y []float32) {
	d := f16(s[208:])
	for half := range 2 {
		ql := (*[64]byte)(s[64*half:])
		qh := (*[32]byte)(s[128+32*half:])
		sc := (*[8]byte)(s[192+8*half:])
		o := (*[128]float32)(y[128*half:])
		for g := range 2 {
			// ggml computes d·scale first, then multiplies the quant.
			d1, d2 := d*float32(int8(sc[g])), d*float32(int8(sc[g+2]))
			d3, d4 := d*float32(int8(sc[g+4])), d*float32(int8(sc[g+6]))
			for l := 16 * g; l < 16*g+16; l++ {
				h := qh[l]
				o[l] = d1 * float32(int(ql[l]&0xf|(h&3)<<4)-32)
				o[l+32] = d2 * float32(int(ql[l+32]&0xf|(h>>2&3)<<4)-32)
				o[l+64] = d3 * float32(int(ql[l]>>4|(h>>4&3)<<4)-32)
				o[l+96] = d4 * float32(int(ql[l+32]>>4|(h>>6&3)<<4)-32)
			}
		}
	}
}

func decodeQ8_K(s []byte, y []float32) {
	d := math.Float32frombits(binary.LittleEndian.Uint32(s))
	for i, q := range s[4:260] {
		y[i] = d * float32(int8(q))
	}
}

// kvaluesIQ4NL is the non-linear codebook of IQ4_NL and IQ4_XS.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func decodeIQ4_NL(s []byte, y []float32) {
	d := f16(s)
	for j, q := range s[2:18] {
		y[j] = d * float32(kvaluesIQ4NL[q&0xf])
		y[j+16] = d * float32(kvaluesIQ4NL[q>>4])
	}
}

func decodeIQ4_XS(s []byte, y []float32) {
	d := f16(s)
	sh := binary.LittleEndian.Uint16(s[2:])
	sl := s[4:8]
	for ib := range 8 {
		ls := int(sl[ib/2]>>(4*(ib%2)))&0xf | int(sh>>(2*ib)&3)<<4
		dl := d * float32(ls-32)
		q := s[8+16*ib : 8+16*ib+16]
		o := y[32*ib : 32*ib+32]
		for j := range 16 {
			o[j] = dl * float32(kvaluesIQ4NL[q[j]&0xf])
			o[j+16] = dl * float32(kvaluesIQ4NL[q[j]>>4])
		}
	}
}
