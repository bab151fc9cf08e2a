package synth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vembed/vembed/gguf"
)

// errNoQuantizer reports a storage type this build cannot encode.
var errNoQuantizer = errors.New("no encoder for this type")

// quantize encodes vals (whole rows) in type t. F16 and BF16 round to
// nearest even, as ggml's converters do.
func quantize(t gguf.Type, vals []float32) ([]byte, error) {
	switch t {
	case gguf.TypeF16:
		out := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], f32ToF16(v))
		}
		return out, nil
	case gguf.TypeBF16:
		out := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], f32ToBF16(v))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: %w", t, errNoQuantizer)
}

func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it a (quiet) NaN
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0: // half subnormal (or zero): count units of 2^-24
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem, mid := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > mid || (rem == mid && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	// A carry out of the mantissa correctly bumps the exponent (up to inf).
	h := uint32(e)<<10 | man>>13
	if rem := man & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}
