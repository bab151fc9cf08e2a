package kernels

import "github.com/vembed/vembed/gguf"

//go:noescape
func decodeQ8_0NEON(src *byte, nb int, dst *float32)

//go:noescape
func decodeNib4NEON(qs *byte, stride int, tab *byte, f *float32, nb int, dst *float32)

// rowDecodersNEON decode n values of a row into contiguous float32, bit
// for bit like the portable decoders, for a gemmTier with transpose8NEON
// (the float32 path of the arm64 tiers): Q8_0 and the 4-bit table types
// by NEON, the per-block scales in Go. The other block types keep the
// portable decoders.
var rowDecodersNEON = map[gguf.Type]func(src []byte, n int, dst []float32){
	gguf.TypeQ8_0:   func(src []byte, n int, dst []float32) { q8Blocks(decodeQ8_0NEON, src, n, dst) },
	gguf.TypeQ4_0:   func(src []byte, n int, dst []float32) { nib4Blocks(decodeNib4NEON, src, n, dst, &q4Codes) },
	gguf.TypeIQ4_NL: func(src []byte, n int, dst []float32) { nib4Blocks(decodeNib4NEON, src, n, dst, &iq4Codes) },
	gguf.TypeIQ4_XS: func(src []byte, n int, dst []float32) { iq4xsBlocks(decodeNib4NEON, src, n, dst) },
}
