package kernels

import (
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

//go:noescape
func kernelI16x6x16(ng int, nb int, a *int16, as int, ds *float32, dss int, b *int16, f *float32, t *float32, c *float32, ldc int, flags int)

// kernelI16AVX2 is the assembly i8Kernel; the checks keep every access of
// the assembly inside the slices.
func kernelI16AVX2(ng, nb int, a []int16, as int, ds []float32, dss int, b []int16, f []float32, t []float32, c []float32, ldc int, flags int) {
	if ng <= 0 {
		return
	}
	if nb <= 0 {
		kernelI16Go(ng, 0, a, as, ds, dss, b, f, t, c, ldc, flags)
		return
	}
	_ = a[(ng-1)*as+nb*i8Block*i8Rows-1]
	_ = ds[(ng-1)*dss+nb*i8Rows*2-1]
	_ = b[nb*i8PanelK-1]
	_ = f[nb*i8PanelF-1]
	_ = t[i8Rows*gemmNR-1]
	_ = c[((ng-1)*i8Rows+i8Rows-1)*ldc+gemmNR-1]
	kernelI16x6x16(ng, nb, &a[0], as, &ds[0], dss, &b[0], &f[0], &t[0], &c[0], ldc, flags)
}

// pack8I16AVX2 is pack8I16Go by the float32 panel packer: an int16 pair
// is moved as one 32-bit value.
func pack8I16AVX2(src []int16, kc int, dst []int16) {
	n8 := kc / 16
	if n8 == 0 {
		return
	}
	_ = src[7*kc+kc-1]
	_ = dst[((kc/2-1)*gemmNR+7)*2+1]
	pack8F32((*byte)(unsafe.Pointer(&src[0])), 2*kc, n8, (*float32)(unsafe.Pointer(&dst[0])))
}

// int8Tier returns the avx2-int8 tier: the avx2 tier t with MatMul by the
// integer kernels for the weight types of int8Types, when the product has
// enough rows (SetInt8MinRows).
func int8Tier(t impl) *impl {
	t.tier = TierAVX2Int8
	t.bits = string(TierAVX2Int8)
	t.products.Quantized = TierAVX2Int8
	f32 := t.matMul
	g := &i8Tier{kern: kernelI16AVX2, pack8: pack8I16AVX2, quant: quantizeRowU8AVX2, rows: i8RowsAVX2}
	gu := &u8Tier{kern: kernelU8AVX2, nib: kernelS8AVX2, pack8: pack8U8AVX2, quant: quantizeRowU8AVX2, rows: u8RowsAVX2}
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		minRows := int8Threshold(w.Type, int(int8MinRows.Load()))
		switch {
		case !int8Types[w.Type] || w.Cols == 0 || m < minRows:
			f32(dst, x, m, w, bias)
		case u8Decoders[w.Type].row != nil:
			gemmU8(dst, x, m, w, bias, gu)
		default:
			gemmInt8(dst, x, m, w, bias, g)
		}
	}
	return &t
}

// archIntKernels lists the assembly integer kernels this CPU runs, for
// the tests.
func archIntKernels() (map[string]*i8Tier, map[string]*u8Tier) {
	if !hasAVX2 {
		return nil, nil
	}
	return map[string]*i8Tier{"avx2": {kern: kernelI16AVX2, pack8: pack8I16AVX2, quant: quantizeRowU8AVX2, rows: i8RowsAVX2}},
		map[string]*u8Tier{
			"avx2":    {kern: kernelU8AVX2, nib: kernelS8AVX2, pack8: pack8U8AVX2, quant: quantizeRowU8AVX2, rows: u8RowsAVX2},
			"avx2-u8": {kern: kernelU8AVX2, pack8: pack8U8AVX2, quant: quantizeRowU8AVX2, rows: u8RowsAVX2},
		}
}

//go:noescape
func decodeQ8_0I16AVX2(src *byte, nb int, q *int16)

//go:noescape
func decodeIQ4NLI16AVX2(src *byte, nb int, q *int16)

//go:noescape
func decodeIQ4XSI16AVX2(src *byte, nsb int, sc *int16, q *int16)

// scaledBlocks decodes the 32-value blocks (size bytes each, an f16 scale
// first) of Q8_0 or IQ4_NL: the scales here, the values by decode.
func scaledBlocks(src []byte, n int, q []int16, fd []float32, fs, size int, decode func(src *byte, nb int, q *int16)) {
	nb := n / 32
	if nb == 0 {
		return
	}
	_, _ = src[size*nb-1], q[32*nb-1]
	for b := 0; b < nb; b++ {
		fd[b*fs] = f16(src[size*b:])
	}
	decode(&src[0], nb, &q[0])
}

// iq4xsRowAVX2 is i8RowIQ4XS with the codebook lookup and scaling in
// assembly; the 6-bit scales are unpacked here, a few super-blocks at a
// time into a fixed buffer.
func iq4xsRowAVX2(src []byte, n int, q []int16, fd, fm []float32, fs int) {
	nsb := n / 256
	if nsb == 0 {
		return
	}
	_, _ = src[136*nsb-1], q[256*nsb-1]
	const chunk = 8 // super-blocks per call
	var sc [8 * chunk]int16
	for b0 := 0; b0 < nsb; b0 += chunk {
		nc := min(chunk, nsb-b0)
		for b := b0; b < b0+nc; b++ {
			blk := src[136*b : 136*b+8]
			d := f16(blk)
			sh := uint16(blk[2]) | uint16(blk[3])<<8
			for ib := 0; ib < 8; ib++ {
				fd[(8*b+ib)*fs] = d
				sc[8*(b-b0)+ib] = (int16(blk[4+ib/2]>>(4*(ib%2))&15) | int16(sh>>(2*ib)&3)<<4) - 32
			}
		}
		decodeIQ4XSI16AVX2(&src[136*b0], nc, &sc[0], &q[256*b0])
	}
}

// i8RowsAVX2 are int16 path decoders with the per-value work in assembly,
// equal to the i8Decoders rows of their types (tested).
var i8RowsAVX2 = map[gguf.Type]func(src []byte, n int, q []int16, fd, fm []float32, fs int){
	gguf.TypeQ8_0: func(src []byte, n int, q []int16, fd, fm []float32, fs int) {
		scaledBlocks(src, n, q, fd, fs, 34, decodeQ8_0I16AVX2)
	},
	gguf.TypeIQ4_NL: func(src []byte, n int, q []int16, fd, fm []float32, fs int) {
		scaledBlocks(src, n, q, fd, fs, 18, decodeIQ4NLI16AVX2)
	},
	gguf.TypeIQ4_XS: iq4xsRowAVX2,
}
