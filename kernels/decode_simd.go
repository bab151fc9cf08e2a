//go:build amd64 || arm64

package kernels

import "unsafe"

// The drivers of the row decoders both architectures have in assembly
// (decode_amd64.s, decode_arm64.s): the per-block scale unpacking in Go,
// the per-value work by the kernel.

// nib4Kernel decodes nb 32-value blocks of 4-bit codes (16 bytes each,
// stride bytes apart; byte j holds value j in its low nibble, j+16 in its
// high one) through the int8 table tab, times f[block], into dst.
type nib4Kernel func(qs *byte, stride int, tab *byte, f *float32, nb int, dst *float32)

// q8Blocks decodes the 34-byte Q8_0 blocks of n values with kern.
func q8Blocks(kern func(src *byte, nb int, dst *float32), src []byte, n int, dst []float32) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _ = src[34*nb-1], dst[32*nb-1]
	kern(&src[0], nb, &dst[0])
}

// q4Codes maps a Q4_0 nibble to its signed value, so that Q4_0 shares the
// table-driven decoder of the IQ4 types.
var q4Codes = func() (t [16]int8) {
	for i := range t {
		t[i] = int8(i - 8)
	}
	return
}()

// iq4Codes is iq4nlValues as the bytes the table lookup reads.
var iq4Codes = iq4nlValues

// nib4Blocks decodes nb 32-value blocks of 18 bytes (f16 scale, 16 code
// bytes), the layout of Q4_0 and IQ4_NL.
func nib4Blocks(kern nib4Kernel, src []byte, n int, dst []float32, tab *[16]int8) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _ = src[18*nb-1], dst[32*nb-1]
	var f [gemmKC / 32]float32
	for lo := 0; lo < nb; lo += len(f) {
		cnt := min(len(f), nb-lo)
		for i := range cnt {
			f[i] = f16(src[18*(lo+i):])
		}
		kern(&src[18*lo+2], 18, (*byte)(unsafe.Pointer(&tab[0])), &f[0], cnt, &dst[32*lo])
	}
}

// iq4xsBlocks decodes the 136-byte IQ4_XS super-blocks of n values: the
// eight sub-block factors in Go, the codes by kern.
func iq4xsBlocks(kern nib4Kernel, src []byte, n int, dst []float32) {
	var f [8]float32
	for b := 0; b < n/256; b++ {
		blk := src[136*b : 136*b+136]
		d := f16(blk)
		for ib := range f {
			f[ib] = iq4xsScale(blk, ib, d)
		}
		out := dst[256*b : 256*b+256]
		kern(&blk[8], 16, (*byte)(unsafe.Pointer(&iq4Codes[0])), &f[0], 8, &out[0])
	}
}
