//go:build amd64 || arm64

package kernels

import "github.com/vembed/vembed/gguf"

// The drivers of the u8 path's decoders that both architectures have in
// assembly (gemm_int8_u8_amd64.s, gemm_int8_u8_arm64.s): the per-block
// scales in Go, the values and their half sums by the kernel.

// u8Row is the signature of a u8 path decoder (u8Decoder.row).
type u8Row = func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32)

// u8ValueKernels are an architecture's value loops of the u8 decoders.
// The super-block ones take (p, nsb, q, sum), p at the first super-block
// (Q4_K: at its nibbles); every one writes the values as bytes and the
// sums of each 16 of them before any bias, which the drivers subtract.
type u8ValueKernels struct {
	q4k, q5k, q6k, q3k func(p *byte, nsb int, q *int8, sum *int32)
	// nib4 and nib5 decode 32-value blocks of four and five bits (stride
	// bytes apart), minus bias.
	nib4 func(qs *byte, nb int, stride int, bias int, q *int8, sum *int32)
	nib5 func(qs *byte, qh *byte, nb int, stride int, bias int, q *int8, sum *int32)
}

// u8RowsWith returns the u8 path decoders of the types k decodes, equal to
// the u8Decoders rows of their types (tested).
func u8RowsWith(k u8ValueKernels) map[gguf.Type]u8Row {
	return map[gguf.Type]u8Row{
		gguf.TypeQ4_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			kMinRows(src, n, q, fd, fm, fs, mul, sum, 144, 16, k.q4k)
		},
		gguf.TypeQ4_0: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			nib4Rows(src, n, q, fd, fm, fs, sum, 18, 8, k.nib4)
		},
		gguf.TypeQ4_1: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			nib4Rows(src, n, q, fd, fm, fs, sum, 20, 0, k.nib4)
		},
		gguf.TypeQ5_0: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			nib5Rows(src, n, q, fd, fm, fs, sum, 22, 16, k.nib5)
		},
		gguf.TypeQ5_1: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			nib5Rows(src, n, q, fd, fm, fs, sum, 24, 0, k.nib5)
		},
		gguf.TypeQ5_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			kMinRows(src, n, q, fd, fm, fs, mul, sum, 176, 0, k.q5k)
		},
		gguf.TypeQ3_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			scaledSubRows(src, n, q, fd, fs, mul, sum, 110, 108, 4, func(blk []byte, mul []int16) {
				for i, c := range q3kScales(blk[96:108]) {
					mul[i] = int16(c)
				}
			}, k.q3k)
		},
		gguf.TypeQ6_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
			scaledSubRows(src, n, q, fd, fs, mul, sum, 210, 208, 32, func(blk []byte, mul []int16) {
				for i, c := range blk[192:208] {
					mul[i] = int16(int8(c))
				}
			}, k.q6k)
		},
	}
}

// nib5Rows decodes the 32-value blocks of Q5_0 (bias 16, no minimum) or
// Q5_1 (bias 0, minimum) with kern: size bytes each, f16 d, f16 m (Q5_1),
// the 32 fifth bits, then 16 bytes of nibbles.
func nib5Rows(src []byte, n int, q []int8, fd, fm []float32, fs int, sum []int32, size, bias int,
	kern func(qs *byte, qh *byte, nb int, stride int, bias int, q *int8, sum *int32)) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _, _ = src[size*nb-1], q[32*nb-1], sum[2*nb-1]
	legacyScales(src, nb, size, bias, fd, fm, fs)
	kern(&src[size-16], &src[size-20], nb, size, bias, &q[0], &sum[0])
	for i := range sum[:2*nb] {
		sum[i] -= int32(16 * bias)
	}
}

// nib4Rows decodes the 32-value blocks of Q4_0 (bias 8, no minimum) or
// Q4_1 (bias 0, minimum) with kern: size bytes each, f16 d, f16 m, then 16
// bytes of nibbles.
func nib4Rows(src []byte, n int, q []int8, fd, fm []float32, fs int, sum []int32, size, bias int,
	kern func(qs *byte, nb int, stride int, bias int, q *int8, sum *int32)) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _, _ = src[size*nb-1], q[32*nb-1], sum[2*nb-1]
	legacyScales(src, nb, size, bias, fd, fm, fs)
	kern(&src[size-16], nb, size, bias, &q[0], &sum[0])
	for i := range sum[:2*nb] {
		sum[i] -= int32(16 * bias)
	}
}

// kMinScales writes the factors d·sc and offsets −dmin·m of the eight
// sub-blocks of each of nsb Q4_K or Q5_K super-blocks (size bytes apart);
// their multipliers are 1 (a unit decoder).
func kMinScales(src []byte, nsb, size int, fd, fm []float32, fs int) {
	_, _ = fd[(8*nsb-1)*fs], fm[(8*nsb-1)*fs]
	for b := 0; b < nsb; b++ {
		blk := src[size*b : size*b+16]
		d, dmin := f16(blk), f16(blk[2:])
		q := (*[12]byte)(blk[4:16])
		// scaleMinK4 unrolled: the first four sub-blocks keep six bits in
		// place, the last four take their top two bits from the first.
		o := 8 * b * fs
		for j := 0; j < 4; j++ {
			fd[o+j*fs], fm[o+j*fs] = d*float32(q[j]&63), -(dmin * float32(q[j+4]&63))
			sc, m := q[j+8]&15|(q[j]>>6)<<4, q[j+8]>>4|(q[j+4]>>6)<<4
			fd[o+(j+4)*fs], fm[o+(j+4)*fs] = d*float32(sc), -(dmin * float32(m))
		}
	}
}

// scaledSubRows decodes the super-blocks of Q3_K or Q6_K (size bytes
// each, the f16 d at dOff): one factor d per 32 values, the sixteen signed
// sub-block scales as multipliers (sub-block s takes scales 2s and 2s+1,
// which is how both types order them), written by scales; the values by
// decode, which sums them plus bias (subtracted here).
func scaledSubRows(src []byte, n int, q []int8, fd []float32, fs int, mul []int16, sum []int32, size, dOff, bias int,
	scales func(blk []byte, mul []int16), decode func(blk *byte, nsb int, q *int8, sum *int32)) {
	nsb := n / 256
	if nsb == 0 {
		return
	}
	_, _, _ = src[size*nsb-1], q[256*nsb-1], sum[16*nsb-1]
	for b := 0; b < nsb; b++ {
		blk := src[size*b : size*b+size]
		d := f16(blk[dOff:])
		for s := 0; s < 8; s++ {
			fd[(8*b+s)*fs] = d
		}
		scales(blk, mul[16*b:16*b+16])
	}
	decode(&src[0], nsb, &q[0], &sum[0])
	for i := range sum[:16*nsb] {
		sum[i] -= int32(16 * bias)
	}
}

// legacyScales reads the f16 factor d of each of nb blocks of size bytes
// and, for the types with a minimum (bias 0: Q4_1, Q5_1), the f16 offset m
// that follows it.
func legacyScales(src []byte, nb, size, bias int, fd, fm []float32, fs int) {
	for b := 0; b < nb; b++ {
		blk := src[size*b:]
		fd[b*fs] = f16(blk)
		if bias == 0 {
			fm[b*fs] = f16(blk[2:])
		}
	}
}

// kMinRows decodes the 256-value super-blocks of Q4_K or Q5_K (size bytes
// each): the scales and minimums in Go, the values with decode, which reads
// the super-blocks from byte off of the first one on.
func kMinRows(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32, size, off int, decode func(src *byte, nsb int, q *int8, sum *int32)) {
	nsb := n / 256
	if nsb == 0 {
		return
	}
	_, _, _ = src[size*nsb-1], q[256*nsb-1], sum[16*nsb-1]
	kMinScales(src, nsb, size, fd, fm, fs)
	decode(&src[off], nsb, &q[0], &sum[0])
}

// q2kRowWith is u8RowQ2K with kern doing the whole decoding (values,
// sums, multipliers and factors).
func q2kRowWith(kern func(blk *byte, nsb int, q *int8, sum *int32, mul *int16, fd *float32, fs int),
	src []byte, n int, q []int8, fd []float32, fs int, mul []int16, sum []int32) {
	nsb := n / 256
	if nsb == 0 {
		return
	}
	_, _, _, _, _ = src[84*nsb-1], q[256*nsb-1], sum[16*nsb-1], mul[16*nsb-1], fd[(8*nsb-1)*fs]
	kern(&src[0], nsb, &q[0], &sum[0], &mul[0], &fd[0], fs)
}

// q2kMinsWith is q2kHalfMinsAt, stride 1, with kern: n offsets.
func q2kMinsWith(kern func(blk *byte, nsb int, dst *float32), src []byte, n int, dst []float32) {
	nsb := n / 16
	if nsb == 0 {
		return
	}
	_, _ = src[84*nsb-1], dst[16*nsb-1]
	kern(&src[0], nsb, &dst[0])
}
