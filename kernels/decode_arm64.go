package kernels

import "github.com/vembed/vembed/gguf"

//go:noescape
func decodeQ8_0NEON(src *byte, nb int, dst *float32)

//go:noescape
func decodeNib4NEON(qs *byte, stride int, tab *byte, f *float32, nb int, dst *float32)

//go:noescape
func scaleBytesNEON(q *int8, f *float32, n16 int, dst *float32)

//go:noescape
func scaleAddBytesNEON(q *int8, f *float32, m *float32, n16 int, dst *float32)

// rowDecodersNEON decode n values of a row into contiguous float32, bit
// for bit like the portable decoders, for a gemmTier with transpose8NEON
// (the float32 path of the arm64 tiers): Q8_0 and the 4-bit table types
// by NEON, the per-block scales in Go; the K types and Q4_1, Q5_0, Q5_1
// (the types with an AVX2 decoder) through the integer tiers' NEON byte
// decoders, then factors and offsets by NEON (bytesToFloats). Q2_K and
// Q3_K keep the portable decoders, as on amd64.
var rowDecodersNEON = map[gguf.Type]func(src []byte, n int, dst []float32){
	gguf.TypeQ8_0:   func(src []byte, n int, dst []float32) { q8Blocks(decodeQ8_0NEON, src, n, dst) },
	gguf.TypeQ4_0:   func(src []byte, n int, dst []float32) { nib4Blocks(decodeNib4NEON, src, n, dst, &q4Codes) },
	gguf.TypeIQ4_NL: func(src []byte, n int, dst []float32) { nib4Blocks(decodeNib4NEON, src, n, dst, &iq4Codes) },
	gguf.TypeIQ4_XS: func(src []byte, n int, dst []float32) { iq4xsBlocks(decodeNib4NEON, src, n, dst) },
	gguf.TypeQ4_K:   bytesToFloats(gguf.TypeQ4_K),
	gguf.TypeQ5_K:   bytesToFloats(gguf.TypeQ5_K),
	gguf.TypeQ6_K:   bytesToFloats(gguf.TypeQ6_K),
	gguf.TypeQ4_1:   bytesToFloats(gguf.TypeQ4_1),
	gguf.TypeQ5_0:   bytesToFloats(gguf.TypeQ5_0),
	gguf.TypeQ5_1:   bytesToFloats(gguf.TypeQ5_1),
}

// bytesChunk is the values bytesToFloats decodes per step: eight
// super-blocks, 64 blocks.
const bytesChunk = 2048

// bytesToFloats returns the float32 row decoder of typ from its u8 path
// decoder (u8RowsNEON): the values as bytes q with, per 32 of them, a
// factor fd and offset fm (multiplier mul per 16), then dst = (fd·mul)·q
// (+ fm). The portable decoders compute d·q (+ m), the K types'
// float32(d·sc)·q − dmin·m and Q6_K's float32(d·sc)·(q−32), each product
// rounded before the sum: the same operations, so the same bits
// (fm = −(dmin·m) exactly, and x + (−y) is x − y).
func bytesToFloats(typ gguf.Type) func(src []byte, n int, dst []float32) {
	dec := u8Decoders[typ]
	row := u8RowsNEON[typ]
	return func(src []byte, n int, dst []float32) {
		var (
			q        [bytesChunk]int8
			fd, fm   [bytesChunk / 32]float32
			mul      [bytesChunk / 16]int16
			sum      [bytesChunk / 16]int32
			f16s, ms [bytesChunk / 16]float32
		)
		n -= n % dec.blockSize
		for lo := 0; lo < n; lo += bytesChunk {
			cnt := min(bytesChunk, n-lo)
			row(src[lo/dec.blockSize*dec.typeSize:], cnt, q[:], fd[:], fm[:], 1, mul[:], sum[:])
			n16 := cnt / 16
			for i := range n16 {
				f16s[i] = fd[i/2]
				if !dec.unit {
					f16s[i] = fd[i/2] * float32(mul[i])
				}
				ms[i] = fm[i/2]
			}
			out := dst[lo : lo+cnt]
			if dec.hasMin {
				scaleAddBytesNEON(&q[0], &f16s[0], &ms[0], n16, &out[0])
			} else {
				scaleBytesNEON(&q[0], &f16s[0], n16, &out[0])
			}
		}
	}
}
