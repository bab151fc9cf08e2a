package kernels

import "github.com/vembed/vembed/gguf"

//go:noescape
func decodeQ8_0AVX2(src *byte, nb int, dst *float32)

//go:noescape
func decodeQ4KAVX2(qs *byte, f *float32, dst *float32)

//go:noescape
func decodeQ5KAVX2(blk *byte, f *float32, dst *float32)

//go:noescape
func decodeQ6KAVX2(blk *byte, f *float32, dst *float32)

//go:noescape
func decodeNib4AVX2(qs *byte, stride int, tab *byte, f *float32, nb int, dst *float32)

//go:noescape
func decodeLegacyAVX2(qs *byte, qh *byte, stride int, f *float32, off int32, nb int, dst *float32)

// legacyBlocks decodes the 32-value blocks of Q4_1, Q5_0 and Q5_1 (size
// bytes each): f16 d at 0, f16 m at mOff (or none when mOff < 0), the fifth
// bits at qhOff (none when < 0), the nibbles at qsOff.
func legacyBlocks(src []byte, n int, dst []float32, size, mOff, qhOff, qsOff int, off int32) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _ = src[size*nb-1], dst[32*nb-1]
	var f [2 * gemmKC / 32]float32
	for lo := 0; lo < nb; lo += len(f) / 2 {
		cnt := min(len(f)/2, nb-lo)
		for i := range cnt {
			blk := src[size*(lo+i):]
			f[2*i], f[2*i+1] = f16(blk), 0
			if mOff >= 0 {
				f[2*i+1] = -f16(blk[mOff:])
			}
		}
		var qh *byte
		if qhOff >= 0 {
			qh = &src[size*lo+qhOff]
		}
		decodeLegacyAVX2(&src[size*lo+qsOff], qh, size, &f[0], off, cnt, &dst[32*lo])
	}
}

// kBlocks decodes the super-blocks of a Q4_K or Q5_K row: the scale and
// min unpacking in Go, the values by asm called with the block at byte off.
func kBlocks(src []byte, n int, dst []float32, size, off int, asm func(blk *byte, f *float32, dst *float32)) {
	var f [16]float32
	for b := 0; b < n/256; b++ {
		blk := src[size*b : size*b+size]
		d, dmin := f16(blk), f16(blk[2:])
		for j := 0; j < 8; j++ {
			f[2*j], f[2*j+1] = scaleMinK4f(blk[4:16], j, d, dmin)
		}
		out := dst[256*b : 256*b+256]
		asm(&blk[off], &f[0], &out[0])
	}
}

// rowDecodersAVX2 decode n values of a row into contiguous float32, bit for
// bit like the portable decoders (the tests compare them with
// gguf.Dequantize). The per-block scale unpacking of the K types stays in
// Go; the assembly does the per-value work.
var rowDecodersAVX2 = map[gguf.Type]func(src []byte, n int, dst []float32){
	gguf.TypeQ8_0:   func(src []byte, n int, dst []float32) { q8Blocks(decodeQ8_0AVX2, src, n, dst) },
	gguf.TypeQ4_K:   func(src []byte, n int, dst []float32) { kBlocks(src, n, dst, 144, 16, decodeQ4KAVX2) },
	gguf.TypeQ5_K:   func(src []byte, n int, dst []float32) { kBlocks(src, n, dst, 176, 0, decodeQ5KAVX2) },
	gguf.TypeQ4_1:   func(src []byte, n int, dst []float32) { legacyBlocks(src, n, dst, 20, 2, -1, 4, 0) },
	gguf.TypeQ5_0:   func(src []byte, n int, dst []float32) { legacyBlocks(src, n, dst, 22, -1, 2, 6, 16) },
	gguf.TypeQ5_1:   func(src []byte, n int, dst []float32) { legacyBlocks(src, n, dst, 24, 2, 4, 8, 0) },
	gguf.TypeQ4_0:   func(src []byte, n int, dst []float32) { nib4Blocks(decodeNib4AVX2, src, n, dst, &q4Codes) },
	gguf.TypeIQ4_NL: func(src []byte, n int, dst []float32) { nib4Blocks(decodeNib4AVX2, src, n, dst, &iq4Codes) },
	gguf.TypeIQ4_XS: func(src []byte, n int, dst []float32) { iq4xsBlocks(decodeNib4AVX2, src, n, dst) },
	gguf.TypeQ6_K: func(src []byte, n int, dst []float32) {
		var f [16]float32
		for b := 0; b < n/256; b++ {
			blk := src[210*b : 210*b+210]
			d := f16(blk[208:])
			for i, s := range blk[192:208] {
				f[i] = d * float32(int8(s))
			}
			out := dst[256*b : 256*b+256]
			decodeQ6KAVX2(&blk[0], &f[0], &out[0])
		}
	},
}
