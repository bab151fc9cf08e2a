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

// u8RowsAVX2 are u8 path decoders with the per-value work in assembly,
// equal to the u8Decoders rows of their types (tested).
var u8RowsAVX2 = func() map[gguf.Type]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	m := u8RowsWith(u8ValueKernels{
		q4k: decodeQ4KU8AVX2, q5k: decodeQ5KU8AVX2, q6k: decodeQ6KU8AVX2, q3k: decodeQ3KU8AVX2,
		nib4: decodeNib4U8AVX2, nib5: decodeNib5U8AVX2,
	})
	m[gguf.TypeQ2_K] = q2kRowAVX2
	return m
}()
