#include "textflag.h"

// func copy64StridedAVX2(dst *byte, dstStride int, src *byte, n int)
//
// Copies n 64-byte chunks from src, consecutive, to dst, dstStride bytes
// apart: a packed matrix's factors or starts into the kernels' layout.
TEXT ·copy64StridedAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ   cdone

cloop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $64, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  cloop

cdone:
	VZEROUPPER
	RET

// func widen32StridedAVX2(dst *int32, dstStride int, src *int16, n int)
//
// Sign-extends n chunks of 32 int16 from src, consecutive, to 32 int32
// each at dst, dstStride bytes apart: a packed matrix's half multipliers
// into the kernels' aux.
TEXT ·widen32StridedAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ   wdone

wloop:
	VPMOVSXWD 0(SI), Y0
	VPMOVSXWD 16(SI), Y1
	VPMOVSXWD 32(SI), Y2
	VPMOVSXWD 48(SI), Y3
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $64, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  wloop

wdone:
	VZEROUPPER
	RET

// func halvesStridedAVX2(dst *float32, dstStride int, src *uint16, n int)
//
// Converts n runs of 16 binary16 values from src, consecutive, to
// float32 at dst, dstStride bytes apart: a packed matrix's compact
// factors into the kernels' layout.
TEXT ·halvesStridedAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ   hdone

hloop:
	VCVTPH2PS 0(SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  hloop

hdone:
	VZEROUPPER
	RET

// func startsStridedAVX2(dst *int32, dstStride int, src *int16, n int)
//
// Writes n runs of 16 starts q·128 from the int16 quotients q at src,
// consecutive, to dst, dstStride bytes apart: a packed matrix's compact
// starts into the kernels' aux.
TEXT ·startsStridedAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ   sdone

sloop:
	VPMOVSXWD 0(SI), Y0
	VPMOVSXWD 16(SI), Y1
	VPSLLD $7, Y0, Y0
	VPSLLD $7, Y1, Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $32, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  sloop

sdone:
	VZEROUPPER
	RET
