package kernels

import "unsafe"

//go:noescape
func decodeQ8_0S8NEON(src *byte, nb int, q *int8, sum *int32, fd *float32, fs int)

//go:noescape
func decodeIQ4S8NEON(qs *byte, nb int, stride int, q *int8, sum *int32)

//go:noescape
func packChunks8NEON(src *byte, kc int, n16 int, dst *byte)

// vnniRowsNEON are the integer tiers' decoders with the per-value work on
// NEON, equal to vnniDecoders' rows (tested).
var vnniRowsNEON = s8RowsWith(decodeQ8_0S8NEON, decodeIQ4S8NEON, u8RowsNEON)

// pack8S8x8NEON is pack8S8x8 on NEON; the checks keep the
// assembly's loads and stores inside the slices.
func pack8S8x8NEON(src []int8, kc int, dst []int8) {
	n16 := kc / 16
	if n16 == 0 {
		return
	}
	_ = src[8*kc-1]
	_ = dst[((kc/8-1)*vnniNR+7)*8+7]
	packChunks8NEON((*byte)(unsafe.Pointer(&src[0])), kc, n16, (*byte)(unsafe.Pointer(&dst[0])))
}
