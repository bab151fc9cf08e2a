package kernels

import (
	"encoding/binary"
	"math"

	"github.com/vembed/vembed/gguf"
)

// Panel decoders turn stored weights into float32 while packing them for the
// GEMM microkernels. Each decodes n values (a whole number of blocks) of one
// weight row from src and writes value i to dst[i*stride], so a row lands
// directly in its column of a k-major panel. They compute every value with
// the same float32 operations, in the same order, as gguf.Dequantize (the
// ggml reference dequantizers); tests check them bit for bit against it.
// Explicit float32 conversions keep the compiler from fusing a multiply and
// an add, which would round differently.

type decodeFunc func(src []byte, n int, dst []float32, stride int)

type decoder struct {
	blockSize, typeSize int
	decode              decodeFunc
}

// decoders lists the weight types the fast GEMM paths take.
var decoders = map[gguf.Type]decoder{
	gguf.TypeF32:    {1, 4, decodeF32},
	gguf.TypeF16:    {1, 2, decodeF16},
	gguf.TypeBF16:   {1, 2, decodeBF16},
	gguf.TypeQ4_0:   {32, 18, decodeQ4_0},
	gguf.TypeQ4_1:   {32, 20, decodeQ4_1},
	gguf.TypeQ5_0:   {32, 22, decodeQ5_0},
	gguf.TypeQ5_1:   {32, 24, decodeQ5_1},
	gguf.TypeQ8_0:   {32, 34, decodeQ8_0},
	gguf.TypeQ2_K:   {256, 84, decodeQ2K},
	gguf.TypeQ3_K:   {256, 110, decodeQ3K},
	gguf.TypeQ4_K:   {256, 144, decodeQ4K},
	gguf.TypeQ5_K:   {256, 176, decodeQ5K},
	gguf.TypeQ6_K:   {256, 210, decodeQ6K},
	gguf.TypeQ8_K:   {256, 292, decodeQ8K},
	gguf.TypeIQ4_NL: {32, 18, decodeIQ4NL},
	gguf.TypeIQ4_XS: {256, 136, decodeIQ4XS},
}

// halfToFloat converts a binary16 bit pattern to float32 exactly (equal
// to gguf.F16ToF32, tested on every pattern). It is arithmetic rather than
// a 256 KiB table: the decoders convert a few scales per block while
// streaming weights through the cache, where a table's lines keep missing.
func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp, mant := uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch {
	case exp == 0x1f: // infinities and NaNs keep their payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
	// Zero and subnormals: mant·2⁻²⁴, exact in float32.
	return math.Float32frombits(sign | math.Float32bits(float32(mant)*0x1p-24))
}

func f16(b []byte) float32 { return halfToFloat(binary.LittleEndian.Uint16(b)) }

func decodeF32(src []byte, n int, dst []float32, stride int) {
	src = src[:4*n]
	for i := 0; i < n; i++ {
		dst[i*stride] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func decodeF16(src []byte, n int, dst []float32, stride int) {
	src = src[:2*n]
	for i := 0; i < n; i++ {
		dst[i*stride] = halfToFloat(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func decodeBF16(src []byte, n int, dst []float32, stride int) {
	src = src[:2*n]
	for i := 0; i < n; i++ {
		dst[i*stride] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

func decodeQ4_0(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/32; b++ {
		blk := src[18*b : 18*b+18]
		d := f16(blk)
		o := dst[32*b*stride:]
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			o[j*stride] = d * float32(int(q&15)-8)
			o[(j+16)*stride] = d * float32(int(q>>4)-8)
		}
	}
}

func decodeQ4_1(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/32; b++ {
		blk := src[20*b : 20*b+20]
		d, m := f16(blk), f16(blk[2:])
		o := dst[32*b*stride:]
		for j := 0; j < 16; j++ {
			q := blk[4+j]
			o[j*stride] = float32(d*float32(q&15)) + m
			o[(j+16)*stride] = float32(d*float32(q>>4)) + m
		}
	}
}

func decodeQ5_0(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/32; b++ {
		blk := src[22*b : 22*b+22]
		d := f16(blk)
		h := binary.LittleEndian.Uint32(blk[2:])
		o := dst[32*b*stride:]
		for j := 0; j < 16; j++ {
			q := blk[6+j]
			lo := int(q&15) | int(h>>j&1)<<4
			hi := int(q>>4) | int(h>>(j+16)&1)<<4
			o[j*stride] = d * float32(lo-16)
			o[(j+16)*stride] = d * float32(hi-16)
		}
	}
}

func decodeQ5_1(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/32; b++ {
		blk := src[24*b : 24*b+24]
		d, m := f16(blk), f16(blk[2:])
		h := binary.LittleEndian.Uint32(blk[4:])
		o := dst[32*b*stride:]
		for j := 0; j < 16; j++ {
			q := blk[8+j]
			lo := int(q&15) | int(h>>j&1)<<4
			hi := int(q>>4) | int(h>>(j+16)&1)<<4
			o[j*stride] = float32(d*float32(lo)) + m
			o[(j+16)*stride] = float32(d*float32(hi)) + m
		}
	}
}

func decodeQ8_0(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/32; b++ {
		blk := src[34*b : 34*b+34]
		d := f16(blk)
		o := dst[32*b*stride:]
		for j := 0; j < 32; j++ {
			o[j*stride] = d * float32(int8(blk[2+j]))
		}
	}
}

func decodeQ2K(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[84*b : 84*b+84]
		scales, qs := blk[:16], blk[16:80]
		d, dmin := f16(blk[80:]), f16(blk[82:])
		o := dst[256*b*stride:]
		out, s := 0, 0
		for half := 0; half < 2; half++ {
			q := qs[32*half : 32*half+32]
			for j := 0; j < 4; j++ {
				shift := 2 * j
				for g := 0; g < 2; g++ {
					sc := scales[s]
					s++
					// A product is converted before it is added to (float32(a*b) + c): that
					// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
					// every build computes the same bits (TestNoFusedMultiplyAdd).
					dl, ml := d*float32(sc&15), float32(dmin*float32(sc>>4))
					for l := 0; l < 16; l++ {
						o[out*stride] = float32(dl*float32(q[16*g+l]>>shift&3)) - ml
						out++
					}
				}
			}
		}
	}
}

// q3kScales unpacks the 16 signed 6-bit scales of a Q3_K block.
func q3kScales(b []byte) [16]int {
	var sc [16]int
	for s := 0; s < 16; s++ {
		var low4 int
		if s < 8 {
			low4 = int(b[s] & 15)
		} else {
			low4 = int(b[s-8] >> 4)
		}
		high2 := int(b[8+s%4]>>(2*(s/4))) & 3
		sc[s] = (low4 | high2<<4) - 32
	}
	return sc
}

func decodeQ3K(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[110*b : 110*b+110]
		hmask, qs := blk[:32], blk[32:96]
		sc := q3kScales(blk[96:108])
		d := f16(blk[108:])
		o := dst[256*b*stride:]
		out, s, bit := 0, 0, 0
		for half := 0; half < 2; half++ {
			q := qs[32*half : 32*half+32]
			for j := 0; j < 4; j++ {
				shift := 2 * j
				for g := 0; g < 2; g++ {
					dl := d * float32(sc[s])
					s++
					for l := 0; l < 16; l++ {
						i := 16*g + l
						v := int(q[i]>>shift) & 3
						if hmask[i]>>bit&1 == 0 {
							v -= 4
						}
						o[out*stride] = dl * float32(v)
						out++
					}
				}
				bit++
			}
		}
	}
}

// scaleMinK4 unpacks scale and min k (0..7) of a Q4_K or Q5_K block.
func scaleMinK4(q []byte, k int) (sc, m uint8) {
	if k < 4 {
		return q[k] & 63, q[k+4] & 63
	}
	return q[k+4]&15 | (q[k-4]>>6)<<4, q[k+4]>>4 | (q[k]>>6)<<4
}

// scaleMinK4f returns the float32 scale d·sc and offset dmin·m of sub-block k.
func scaleMinK4f(q []byte, k int, d, dmin float32) (float32, float32) {
	sc, m := scaleMinK4(q, k)
	return d * float32(sc), float32(dmin * float32(m))
}

func decodeQ4K(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[144*b : 144*b+144]
		d, dmin := f16(blk), f16(blk[2:])
		scales, qs := blk[4:16], blk[16:144]
		o := dst[256*b*stride:]
		for c := 0; c < 4; c++ {
			d1, dm1 := scaleMinK4f(scales, 2*c, d, dmin)
			d2, dm2 := scaleMinK4f(scales, 2*c+1, d, dmin)
			q := qs[32*c : 32*c+32]
			oc := o[64*c*stride:]
			for l := 0; l < 32; l++ {
				oc[l*stride] = float32(d1*float32(q[l]&15)) - dm1
				oc[(32+l)*stride] = float32(d2*float32(q[l]>>4)) - dm2
			}
		}
	}
}

func decodeQ5K(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[176*b : 176*b+176]
		d, dmin := f16(blk), f16(blk[2:])
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		o := dst[256*b*stride:]
		for c := 0; c < 4; c++ {
			d1, dm1 := scaleMinK4f(scales, 2*c, d, dmin)
			d2, dm2 := scaleMinK4f(scales, 2*c+1, d, dmin)
			q := qs[32*c : 32*c+32]
			oc := o[64*c*stride:]
			for l := 0; l < 32; l++ {
				lo := q[l]&15 | (qh[l]>>(2*c)&1)<<4
				hi := q[l]>>4 | (qh[l]>>(2*c+1)&1)<<4
				oc[l*stride] = float32(d1*float32(lo)) - dm1
				oc[(32+l)*stride] = float32(d2*float32(hi)) - dm2
			}
		}
	}
}

func decodeQ6K(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[210*b : 210*b+210]
		d := f16(blk[208:])
		o := dst[256*b*stride:]
		for half := 0; half < 2; half++ {
			ql, qh := blk[64*half:64*half+64], blk[128+32*half:128+32*half+32]
			sc := blk[192+8*half : 192+8*half+8]
			y := o[128*half*stride:]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int(ql[l]&15|(qh[l]&3)<<4) - 32
				q2 := int(ql[l+32]&15|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				y[l*stride] = float32(d*float32(int8(sc[is]))) * float32(q1)
				y[(l+32)*stride] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				y[(l+64)*stride] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				y[(l+96)*stride] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

func decodeQ8K(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[292*b : 292*b+292]
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		o := dst[256*b*stride:]
		for j := 0; j < 256; j++ {
			o[j*stride] = d * float32(int8(blk[4+j]))
		}
	}
}

// iq4nlValues is the non-linear codebook of IQ4_NL and IQ4_XS.
var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func decodeIQ4NL(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/32; b++ {
		blk := src[18*b : 18*b+18]
		d := f16(blk)
		o := dst[32*b*stride:]
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			o[j*stride] = d * float32(iq4nlValues[q&15])
			o[(j+16)*stride] = d * float32(iq4nlValues[q>>4])
		}
	}
}

// iq4xsScale returns the factor d·(ls−32) of sub-block ib of an IQ4_XS block.
func iq4xsScale(blk []byte, ib int, d float32) float32 {
	sh := binary.LittleEndian.Uint16(blk[2:])
	ls := int(blk[4+ib/2]>>(4*(ib%2))&15) | int(sh>>(2*ib)&3)<<4
	return d * float32(ls-32)
}

func decodeIQ4XS(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/256; b++ {
		blk := src[136*b : 136*b+136]
		d, qs := f16(blk), blk[8:136]
		o := dst[256*b*stride:]
		for ib := 0; ib < 8; ib++ {
			dl := iq4xsScale(blk, ib, d)
			q := qs[16*ib : 16*ib+16]
			oc := o[32*ib*stride:]
			for j := 0; j < 16; j++ {
				oc[j*stride] = dl * float32(iq4nlValues[q[j]&15])
				oc[(16+j)*stride] = dl * float32(iq4nlValues[q[j]>>4])
			}
		}
	}
}
