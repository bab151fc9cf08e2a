package kernels

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The amx tier: the VNNI tiers' GEMM (gemm_vnni.go) with each 32-value
// block of a 16×32 tile summed by AMX int8 tiles (TDPBUSD), the float
// epilogue in AVX-512 (gemm_amx_amd64.s). It is built and tested like the
// others, but no machine it was written on had AMX: it is not picked by
// default, only by VEMBED_CPU=amx or Use(TierAMX), until it has been run
// against the avx2-int8 tier on AMX hardware (TestVNNIMatchesAVX2Int8 does
// that wherever AMX exists).

// hasAMX reports whether the CPU has AMX int8 tiles beside AVX-512 VNNI
// (for the epilogue) and the OS granted this process the tile state.
var hasAMX = hasAVX512VNNI && cpu.X86.HasAMXInt8 && amxGranted

// amxGranted reports whether the CPU has AMX tiles and the OS granted
// this process their state.
var amxGranted = cpu.X86.HasAMXTile && amxPermit()

//go:noescape
func kernelAMX16x32(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

// amxScratch is the kernel's scratch in floats: the float tile (16×32),
// the integer sums of the two half blocks (2·16×32 int32) and the 64-byte
// tile configuration.
const amxScratch = 16*32 + 2*16*32 + 16

// amxConfig writes the tile configuration (palette 1; per tile the bytes
// per row and the rows) for unit blocks (tmm0, tmm1 the sums of the two
// panels, tmm2 the activations, 32 bytes per row, tmm3, tmm4 the panels'
// weights, 8 rows of 64 bytes) or blocks with multipliers (tmm0..tmm3 the
// half sums, tmm4, tmm5 the activations' halves, 16 bytes per row, tmm6,
// tmm7 the weights of a half panel, 4 rows).
func amxConfig(cfg []byte, mul bool) {
	clear(cfg[:64])
	cfg[0] = 1
	set := func(t, colsb, rows int) {
		binary.LittleEndian.PutUint16(cfg[16+2*t:], uint16(colsb))
		cfg[48+t] = byte(rows)
	}
	if !mul {
		set(0, 64, 16)
		set(1, 64, 16)
		set(2, 32, 16)
		set(3, 64, 8)
		set(4, 64, 8)
		return
	}
	for t := 0; t < 4; t++ {
		set(t, 64, 16)
	}
	set(4, 16, 16)
	set(5, 16, 16)
	set(6, 64, 4)
	set(7, 64, 4)
}

// kernelAMX is the vnniKernel of the amx tier; the checks keep every access
// of the assembly inside the slices. Its scratch (the t argument is too
// small) comes from the float32 scratch pool.
func kernelAMX(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
	if ng <= 0 {
		return
	}
	if nb <= 0 {
		vnniKernelGo(16, 2, true)(ng, 0, a, as, ds, dss, b, aux, f, t, c, ldc, flags)
		return
	}
	_ = a[(ng-1)*as+nb*i8Block*16-1]
	_ = ds[(ng-1)*dss+nb*16*2-1]
	_ = b[2*nb*vnniPanel-1]
	_ = aux[2*nb*vnniAux-1]
	_ = f[2*nb*vnniPanelF-1]
	_ = c[((ng-1)*16+15)*ldc+2*vnniNR-1]
	sp := getScratch(amxScratch)
	defer putScratch(sp)
	s := *sp
	cfg := unsafe.Slice((*byte)(unsafe.Pointer(&s[amxScratch-16])), 64)
	amxConfig(cfg, flags&vnniFlagMul != 0)
	kernelAMX16x32(ng, nb, &a[0], as, &ds[0], dss, &b[0], &aux[0], &f[0], &s[0], &c[0], ldc, flags)
}

// vnniAMX is the GEMM of the amx tier.
var vnniAMX = &vnniTier{
	kern: kernelAMX, kernMul: kernelAMX,
	rows: 16, span: 2, rowsMul: 16, spanMul: 2, rowMajor: true,
	pack8: pack8U8AVX2, quant: quantizeRowU8AVX2, dec: vnniRowsAVX2,
}
