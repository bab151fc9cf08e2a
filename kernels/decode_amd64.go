package kernels

import (
	"github.com/vembed/vembed/gguf"
)

//go:noescape
func decodeQ8_0AVX2(src *byte, nb int, dst *float32)

//go:noescape
func decodeQ4KAVX2(qs *byte, f *float32, dst *float32)

//go:noescape
func decodeQ6KAVX2(blk *byte, f *float32, dst *float32)

// rowDecodersAVX2 decode n values of a row into contiguous float32, bit for
// bit like the portable decoders (the tests compare them with
// gguf.Dequantize). The per-block scale unpacking of the K types stays in
// Go; the assembly does the per-value work.
var rowDecodersAVX2 = map[gguf.Type]func(src []byte, n int, dst []float32){
	gguf.TypeQ8_0: func(src []byte, n int, dst []float32) {
		nb := n / 32
		if nb == 0 {
			return
		}
		_, _ = src[34*nb-1], dst[32*nb-1]
		decodeQ8_0AVX2(&src[0], nb, &dst[0])
	},
	gguf.TypeQ4_K: func(src []byte, n int, dst []float32) {
		var f [16]float32
		for b := 0; b < n/256; b++ {
			blk := src[144*b : 144*b+144]
			d, dmin := f16(blk), f16(blk[2:])
			for j := 0; j < 8; j++ {
				f[2*j], f[2*j+1] = scaleMinK4f(blk[4:16], j, d, dmin)
			}
			out := dst[256*b : 256*b+256]
			decodeQ4KAVX2(&blk[16], &f[0], &out[0])
		}
	},
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
