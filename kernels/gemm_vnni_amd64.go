package kernels

import (
	"github.com/vembed/vembed/gguf"
	"golang.org/x/sys/cpu"
)

// hasAVX512VNNI reports whether the CPU and OS run the avx512-vnni
// kernels: AVX-512 F, BW and VL with VNNI (x/sys/cpu reports AVX-512 only
// when the OS saves the zmm and mask state).
var hasAVX512VNNI = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// hasAVXVNNI reports whether the CPU runs VEX-encoded VPDPBUSD on ymm.
var hasAVXVNNI = hasAVX2 && cpu.X86.HasAVXVNNI

//go:noescape
func kernelVNNI6x32(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func kernelVNNIUnit6x32(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func kernelAVXVNNI6x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func kernelAVXVNNI3x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func decodeQ8_0S8AVX2(src *byte, nb int, q *int8, sum *int32, fd *float32, fs int)

//go:noescape
func decodePanelQ8_0AVX512(src *byte, rowBytes int, nrows int, nb int, pan *int8, fs *float32, aux *int32)

// panelQ8_0AVX512 is the avx512-vnni tier's Q8_0 panel decoder; the checks
// keep the gathers and stores inside the slices.
func panelQ8_0AVX512(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32) {
	if nb <= 0 || nrows <= 0 {
		return
	}
	_ = src[(nrows-1)*rowBytes+34*nb-1]
	_ = pan[nb*vnniPanel-1]
	_ = fs[(nb-1)*vnniPanelF+vnniNR-1]
	_ = aux[(nb-1)*vnniAux+vnniNR-1]
	decodePanelQ8_0AVX512(&src[0], rowBytes, min(nrows, vnniNR), nb, &pan[0], &fs[0], &aux[0])
}

//go:noescape
func decodePanelQ4KAVX512(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32)

//go:noescape
func decodePanelQ6KAVX512(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32)

//go:noescape
func decodePanelQ2KAVX512(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32)

// superBlockPanels wraps an avx512-vnni panel decoder of a 256-value
// type, size bytes a super-block, that decodes a super-block (eight
// blocks) of the panel's rows per call and writes auxUsed starts and
// multipliers per block; the checks keep its gathers and stores inside
// the slices.
func superBlockPanels(dec func(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32), size, auxUsed int) func(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32) {
	return func(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32) {
		if nb <= 0 || nrows <= 0 {
			return
		}
		nsb := nb / 8
		_ = src[(nrows-1)*rowBytes+size*nsb-1]
		_ = pan[nb*vnniPanel-1]
		_ = fs[nb*vnniPanelF-1]
		_ = aux[(nb-1)*vnniAux+auxUsed-1]
		for i := 0; i < nsb; i++ {
			dec(&src[size*i], rowBytes, min(nrows, vnniNR), &pan[8*i*vnniPanel], &fs[8*i*vnniPanelF], &aux[8*i*vnniAux])
		}
	}
}

//go:noescape
func quantizeU8StridedAVX2(x *float32, nb int, q *uint8, stride int, ds *float32)

// quantizeRowU8StridedAVX2 is quantizeRowU8AVX2 with the four-byte groups
// of q stride bytes apart.
func quantizeRowU8StridedAVX2(x []float32, q []uint8, stride int, ds []float32) {
	nb := len(x) / i8Block
	if nb == 0 {
		return
	}
	_, _ = q[(8*nb-1)*stride+3], ds[2*nb-1]
	quantizeU8StridedAVX2(&x[0], nb, &q[0], stride, &ds[0])
}

//go:noescape
func decodeIQ4S8AVX2(qs *byte, nb int, stride int, q *int8, sum *int32)

// vnniRowsAVX2 are the VNNI tiers' decoders with the per-value work in
// assembly (equal to vnniDecoders' rows, tested).
var vnniRowsAVX2 = func() map[gguf.Type]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	return s8RowsWith(decodeQ8_0S8AVX2, decodeIQ4S8AVX2, u8RowsAVX2)
}()

// vnniAVX512 and vnniAVX are the GEMMs of the avx512-vnni and avx-vnni
// tiers.
var (
	vnniAVX512 = &vnniTier{
		kern: vnniAsm(6, 2, kernelVNNIUnit6x32), kernMul: vnniAsm(6, 2, kernelVNNI6x32),
		rows: 6, span: 2, rowsMul: 6, spanMul: 2,
		pack8: pack8U8AVX2, quant: quantizeRowU8AVX2, quantStrided: quantizeRowU8StridedAVX2, dec: vnniRowsAVX2,
		panel: map[gguf.Type]func(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32){
			gguf.TypeQ8_0: panelQ8_0AVX512,
			// Q4_K's panels have no multipliers: only starts.
			gguf.TypeQ4_K: superBlockPanels(decodePanelQ4KAVX512, 144, vnniNR),
			gguf.TypeQ6_K: superBlockPanels(decodePanelQ6KAVX512, 210, 3*vnniNR),
			gguf.TypeQ2_K: superBlockPanels(decodePanelQ2KAVX512, 84, 3*vnniNR),
		},
	}
	vnniAVX = &vnniTier{
		kern: vnniAsm(6, 1, kernelAVXVNNI6x16), kernMul: vnniAsm(3, 1, kernelAVXVNNI3x16),
		rows: 6, span: 1, rowsMul: 3, spanMul: 1,
		pack8: pack8U8AVX2, quant: quantizeRowU8AVX2, quantStrided: quantizeRowU8StridedAVX2, dec: vnniRowsAVX2,
	}
)

// vnniTiers returns the VNNI tiers this CPU runs, best first, built on
// the integer tier i8: products by quantized weights of int8Types through
// the VNNI kernels (from the same row threshold), everything else as i8.
func vnniTiers(i8 *impl) []*impl {
	var out []*impl
	add := func(name Tier, g *vnniTier) {
		t := *i8
		t.tier = name
		t.products.Quantized = name
		t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
			if !int8Types[w.Type] || w.Cols == 0 || m < int8Threshold(w.Type, int(int8MinRows.Load())) {
				i8.matMul(dst, x, m, w, bias)
				return
			}
			gemmVNNI(dst, x, m, w, bias, g)
		}
		t.prepare = func(w *Matrix) {}
		if g == vnniAVX512 || g == vnniAVX {
			t.prepare = func(w *Matrix) { packVNNI(w, g) }
		}
		out = append(out, &t)
	}
	if hasAMX {
		out = append(out, amxTier(i8, amxI8))
	}
	if hasAVX512VNNI {
		add(TierAVX512VNNI, vnniAVX512)
	}
	if hasAVXVNNI {
		add(TierAVXVNNI, vnniAVX)
	}
	return out
}

// archVNNIKernels lists the VNNI GEMMs this CPU runs, for the tests.
func archVNNIKernels() map[string]*vnniTier {
	out := map[string]*vnniTier{}
	if hasAVX512VNNI {
		out[string(TierAVX512VNNI)] = vnniAVX512
	}
	if hasAVXVNNI {
		out[string(TierAVXVNNI)] = vnniAVX
	}
	return out
}
