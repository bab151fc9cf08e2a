package kernels

import (
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

//go:noescape
func kernelU8x3x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

// kernelU8AVX2 is the assembly u8Kernel; the checks keep every access of
// the assembly inside the slices.
func kernelU8AVX2(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
	if ng <= 0 {
		return
	}
	if nb <= 0 {
		kernelU8Go(ng, 0, a, as, ds, dss, b, aux, f, t, c, ldc, flags)
		return
	}
	_ = a[(ng-1)*as+nb*i8Block*u8Rows-1]
	_ = ds[(ng-1)*dss+nb*u8Rows*2-1]
	_ = b[nb*u8Panel-1]
	_ = aux[nb*u8Aux-1]
	_ = f[nb*i8PanelF-1]
	_ = t[u8Rows*gemmNR-1]
	_ = c[((ng-1)*u8Rows+u8Rows-1)*ldc+gemmNR-1]
	kernelU8x3x16(ng, nb, &a[0], as, &ds[0], dss, &b[0], &aux[0], &f[0], &t[0], &c[0], ldc, flags)
}

//go:noescape
func kernelS8x6x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, f *float32, t *float32, c *float32, ldc int, flags int)

// kernelS8AVX2 is the assembly nib kernel; the checks keep every access
// of the assembly inside the slices.
func kernelS8AVX2(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
	if ng <= 0 {
		return
	}
	if nb <= 0 {
		kernelS8Go(ng, 0, a, as, ds, dss, b, aux, f, t, c, ldc, flags)
		return
	}
	_ = a[(ng-1)*as+nb*i8Block*s8Rows-1]
	_ = ds[(ng-1)*dss+nb*s8Rows*2-1]
	_ = b[nb*u8Panel-1]
	_ = f[nb*i8PanelF-1]
	_ = t[s8Rows*gemmNR-1]
	_ = c[((ng-1)*s8Rows+s8Rows-1)*ldc+gemmNR-1]
	kernelS8x6x16(ng, nb, &a[0], as, &ds[0], dss, &b[0], &f[0], &t[0], &c[0], ldc, flags)
}

// pack8U8AVX2 is pack8U8Go by the float32 panel packer: a group of four
// bytes is moved as one 32-bit value.
func pack8U8AVX2(src []int8, kc int, dst []int8) {
	n8 := kc / 32
	if n8 == 0 {
		return
	}
	_ = src[8*kc-1]
	_ = dst[((kc/4-1)*gemmNR+7)*4+3]
	pack8F32((*byte)(unsafe.Pointer(&src[0])), kc, n8, (*float32)(unsafe.Pointer(&dst[0])))
}

//go:noescape
func quantizeU8AVX2(x *float32, nb int, q *uint8, ds *float32)

// quantizeRowU8AVX2 is quantizeRowU8 in assembly.
func quantizeRowU8AVX2(x []float32, q []uint8, ds []float32) {
	nb := len(x) / i8Block
	if nb == 0 {
		return
	}
	_, _ = q[nb*i8Block-1], ds[2*nb-1]
	quantizeU8AVX2(&x[0], nb, &q[0], &ds[0])
}

//go:noescape
func decodeQ4KU8AVX2(qs *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeQ6KU8AVX2(blk *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeQ5KU8AVX2(blk *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeQ3KU8AVX2(blk *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeNib4U8AVX2(qs *byte, nb int, stride int, bias int, q *int8, sum *int32)

//go:noescape
func decodeNib5U8AVX2(qs *byte, qh *byte, nb int, stride int, bias int, q *int8, sum *int32)

// nib5Rows decodes the 32-value blocks of Q5_0 (bias 16, no minimum) or
// Q5_1 (bias 0, minimum): size bytes each, f16 d, f16 m (Q5_1), the 32
// fifth bits, then 16 bytes of nibbles.
func nib5Rows(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32, size, bias int) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _, _ = src[size*nb-1], q[32*nb-1], sum[2*nb-1]
	legacyScales(src, nb, size, bias, fd, fm, fs)
	decodeNib5U8AVX2(&src[size-16], &src[size-20], nb, size, bias, &q[0], &sum[0])
	for i := range sum[:2*nb] {
		sum[i] -= int32(16 * bias)
	}
}

// nib4Rows decodes the 32-value blocks of Q4_0 (bias 8, no minimum) or
// Q4_1 (bias 0, minimum): size bytes each, f16 d, f16 m, then 16 bytes of
// nibbles.
func nib4Rows(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32, size, bias int) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _, _ = src[size*nb-1], q[32*nb-1], sum[2*nb-1]
	legacyScales(src, nb, size, bias, fd, fm, fs)
	decodeNib4U8AVX2(&src[size-16], nb, size, bias, &q[0], &sum[0])
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

// u8RowsAVX2 are u8 path decoders with the per-value work in assembly,
// equal to the u8Decoders rows of their types (tested).
var u8RowsAVX2 = map[gguf.Type]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32){
	gguf.TypeQ4_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		kMinRows(src, n, q, fd, fm, fs, mul, sum, 144, 16, decodeQ4KU8AVX2)
	},
	gguf.TypeQ4_0: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		nib4Rows(src, n, q, fd, fm, fs, mul, sum, 18, 8)
	},
	gguf.TypeQ4_1: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		nib4Rows(src, n, q, fd, fm, fs, mul, sum, 20, 0)
	},
	gguf.TypeQ5_0: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		nib5Rows(src, n, q, fd, fm, fs, mul, sum, 22, 16)
	},
	gguf.TypeQ5_1: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		nib5Rows(src, n, q, fd, fm, fs, mul, sum, 24, 0)
	},
	gguf.TypeQ5_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		kMinRows(src, n, q, fd, fm, fs, mul, sum, 176, 0, decodeQ5KU8AVX2)
	},
	gguf.TypeQ3_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		scaledSubRows(src, n, q, fd, fs, mul, sum, 110, 108, 4, func(blk []byte, mul []int16) {
			for i, c := range q3kScales(blk[96:108]) {
				mul[i] = int16(c)
			}
		}, decodeQ3KU8AVX2)
	},
	gguf.TypeQ6_K: func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
		scaledSubRows(src, n, q, fd, fs, mul, sum, 210, 208, 32, func(blk []byte, mul []int16) {
			for i, c := range blk[192:208] {
				mul[i] = int16(int8(c))
			}
		}, decodeQ6KU8AVX2)
	},
	gguf.TypeQ2_K: q2kRowAVX2,
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
