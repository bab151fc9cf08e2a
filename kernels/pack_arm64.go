package kernels

import "github.com/vembed/vembed/gguf"

//go:noescape
func pack8F32NEON(src *byte, stride int, n8 int, dst *float32)

//go:noescape
func pack8F16NEON(src *byte, stride int, n8 int, dst *float32)

//go:noescape
func pack8BF16NEON(src *byte, stride int, n8 int, dst *float32)

// pack8NEON are the NEON panel packers of the float weight types, for a
// gemmTier on a 16-wide tile (neon's 6×16): the bits of the portable
// decoders, since each is an exact conversion.
var pack8NEON = map[gguf.Type]pack8Func{
	gguf.TypeF32:  packer(pack8F32NEON, 4),
	gguf.TypeF16:  packer(pack8F16NEON, 2),
	gguf.TypeBF16: packer(pack8BF16NEON, 2),
}

// transpose8NEON packs eight float32 rows, stride floats apart, into
// columns 0..7 of n8·8 rows of a gemmNR-wide panel: the attention's key
// packing and the GEMM's for decoded rows.
func transpose8NEON(src []float32, stride, n8 int, dst []float32) {
	transpose8With(pack8F32NEON, src, stride, n8, dst)
}
