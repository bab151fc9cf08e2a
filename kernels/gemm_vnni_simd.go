//go:build amd64 || arm64

package kernels

import "github.com/vembed/vembed/gguf"

// The drivers of the VNNI-layout decoders of the int16 path's types that
// both architectures have in assembly (gemm_vnni_amd64.s,
// gemm_vnni_arm64.s): per-block scales in Go, values and half sums by the
// kernel.

// q8S8Kernel writes the values of nb Q8_0 blocks as bytes, the sums of
// each block's halves plus 16·128, and the scales as float32 fs apart.
type q8S8Kernel = func(src *byte, nb int, q *int8, sum *int32, fd *float32, fs int)

// iq4S8Kernel writes the codebook values of nb blocks of 16 IQ4 nibble
// bytes (stride bytes apart), low nibbles' first, with the sums of both
// halves plus 16·128.
type iq4S8Kernel = func(qs *byte, nb int, stride int, q *int8, sum *int32)

// s8RowsWith returns the VNNI tiers' decoders with the per-value work by
// the kernels q8 and iq4 for Q8_0, IQ4_NL and IQ4_XS, and by u8 for the
// u8 path's types (equal to vnniDecoders' rows, tested).
func s8RowsWith(q8 q8S8Kernel, iq4 iq4S8Kernel, u8 map[gguf.Type]u8Row) map[gguf.Type]u8Row {
	m := map[gguf.Type]u8Row{
		gguf.TypeQ8_0: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			q8RowS8(q8, src, n, q, fd, fs, sum)
		},
		gguf.TypeIQ4_NL: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			iq4nlRowS8(iq4, src, n, q, fd, fs, sum)
		},
		gguf.TypeIQ4_XS: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			iq4xsRowS8(iq4, src, n, q, fd, fs, mul, sum)
		},
	}
	for t, f := range u8 {
		m[t] = f
	}
	return m
}

// q8RowS8 is vnniRowQ8_0 with the bytes and sums by kern.
func q8RowS8(kern q8S8Kernel, src []byte, n int, q []int8, fd []float32, fs int, sum []int32) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _, _, _ = src[34*nb-1], q[32*nb-1], sum[2*nb-1], fd[(nb-1)*fs]
	kern(&src[0], nb, &q[0], &sum[0], &fd[0], fs)
	for i := range sum[:2*nb] {
		sum[i] -= 16 * 128
	}
}

// iq4nlRowS8 is vnniRowIQ4NL with the codebook lookup and sums by kern.
func iq4nlRowS8(kern iq4S8Kernel, src []byte, n int, q []int8, fd []float32, fs int, sum []int32) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _, _ = src[18*nb-1], q[32*nb-1], sum[2*nb-1]
	for b := 0; b < nb; b++ {
		fd[b*fs] = f16(src[18*b:])
	}
	kern(&src[2], nb, 18, &q[0], &sum[0])
	for i := range sum[:2*nb] {
		sum[i] -= 16 * 128
	}
}

// iq4xsRowS8 is vnniRowIQ4XS with the codebook lookup and sums by kern,
// a super-block (eight blocks of 16 nibble bytes) per call.
func iq4xsRowS8(kern iq4S8Kernel, src []byte, n int, q []int8, fd []float32, fs int, mul []int16, sum []int32) {
	nsb := n / 256
	if nsb == 0 {
		return
	}
	_, _, _, _ = src[136*nsb-1], q[256*nsb-1], sum[16*nsb-1], mul[16*nsb-1]
	for b := 0; b < nsb; b++ {
		blk := src[136*b : 136*b+136]
		iq4xsFactors(blk, b, fd, fs, mul)
		kern(&blk[8], 8, 16, &q[256*b], &sum[16*b])
	}
	for i := range sum[:16*nsb] {
		sum[i] -= 16 * 128
	}
}
