package kernels

// NEON is part of every ARMv8-A core, so the loops of vecmath_arm64.s and
// norm_arm64.s need no feature check: every tier but the reference takes
// them, as every tier takes the AVX2 ones on an AVX2 CPU.
const hasVecLoops = true

//go:noescape
func scaleMaxNEON(x *float32, n8 int, s float32) float32

//go:noescape
func expSumNEON(x *float32, n8 int, sub float32) float32

//go:noescape
func siluMulNEON(dst, gate, up *float32, n8 int)

//go:noescape
func quickGELUNEON(x *float32, n8 int)

//go:noescape
func geluTanhNEON(x *float32, n8 int)

//go:noescape
func addNEON(dst, a, b *float32, n int)

//go:noescape
func ropeNEON(lo, hi, c, s *float32, n int)

// scaleMaxVec, expSumVec and the activations are the avx2 tier's
// functions computed by NEON: the same bits (vecmath_arm64.s), for the
// arm64 tiers' attention and activations.
func scaleMaxVec(x []float32, s float32) float32 { return scaleMaxWith(scaleMaxNEON, x, s) }

func expSumVec(x []float32, sub float32) float32 { return expSumWith(expSumNEON, x, sub) }

func siluMulVec(dst, gate, up []float32) { siluMulWith(siluMulNEON, dst, gate, up) }

func quickGELUVec(x []float32) { inPlace8(quickGELUNEON, x) }

func geluTanhVec(x []float32) { inPlace8(geluTanhNEON, x) }

func addVecNEON(dst, a, b []float32) { addVecWith(addNEON, dst, a, b) }

func ropeHeadsNEON(x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	ropeHeadsWith(ropeNEON, x, nTok, nHead, headDim, cos, sin)
}

func init() {
	addVec = addVecNEON
	ropeHeads = ropeHeadsNEON
	rmsRows = rmsNormRowsVec
	layerRows = layerNormRowsVec
}
