package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

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
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case TypeF16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case TypeBF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case TypeQ8_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[34*b:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < 32; j++ {
				dst[32*b+j] = d * float32(int8(blk[2+j]))
			}
		}
	default:
		return fmt.Errorf("gguf: dequantize: type %s not supported", t)
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
