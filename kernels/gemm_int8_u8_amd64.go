package kernels

import "unsafe"

//go:noescape
func kernelU8x3x16(nb int, a *uint8, ds *float32, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

// kernelU8AVX2 is the assembly u8Kernel; the checks keep every access of
// the assembly inside the slices.
func kernelU8AVX2(nb int, a []uint8, ds []float32, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
	if nb <= 0 {
		kernelU8Go(0, a, ds, b, aux, f, t, c, ldc, flags)
		return
	}
	_ = a[nb*i8Block*u8Rows-1]
	_ = ds[nb*u8Rows*2-1]
	_ = b[nb*u8Panel-1]
	_ = aux[nb*u8Aux-1]
	_ = f[nb*i8PanelF-1]
	_ = t[u8Rows*gemmNR-1]
	_ = c[(u8Rows-1)*ldc+gemmNR-1]
	kernelU8x3x16(nb, &a[0], &ds[0], &b[0], &aux[0], &f[0], &t[0], &c[0], ldc, flags)
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
