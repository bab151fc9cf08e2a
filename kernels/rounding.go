package kernels

// Rounding names the roundings a tier's matrix products add to the
// float32 path's, which decide the bound its results are held to: the
// float32 path is within float32 summation-order error of the exact
// product, a bfloat16 product within gemm_bf16.go's bound, an integer one
// within gemm_int8.go's.
type Rounding struct {
	// BF16: the float weights a model marks (Matrix.BF16) are multiplied
	// with weights and activations rounded to bfloat16, within
	// (2⁻⁷ + 2⁻¹⁶ + γ_K)·Σ|x·w| of the exact product.
	BF16 bool
	// Int8: the quantized weights of the integer types are multiplied by
	// activations quantized to 8 bits per 32 values, with the avx2-int8
	// tier's bits.
	Int8 bool
}

// tierRounding states the rounding of every tier the package declares,
// whether or not this CPU runs it. A tier added without a row here fails
// TestTierRoundingComplete, and the tests that compare tiers fail on a
// tier TierRounding does not know, so no tier is ever held to a bound
// chosen by default.
var tierRounding = map[Tier]Rounding{
	TierReference:   {},
	TierGeneric:     {},
	TierAVX2:        {},
	TierAVX512:      {},
	TierAVX2Int8:    {Int8: true},
	TierAVX512VNNI:  {Int8: true},
	TierAVXVNNI:     {Int8: true},
	TierAMX:         {Int8: true},
	TierAVX512BF16:  {BF16: true, Int8: true},
	TierAMXBF16:     {BF16: true, Int8: true},
	TierNEON:        {},
	TierNEONDotProd: {Int8: true},
	TierI8MM:        {Int8: true},
	TierNEONBF16:    {BF16: true, Int8: true},
}

// TierRounding returns the roundings tier t adds to the float32 path; false
// when t is not a tier of this package. Tests that run several tiers hold
// each to the bound its Rounding names, and fail on a tier without one.
func TierRounding(t Tier) (Rounding, bool) {
	r, ok := tierRounding[t]
	return r, ok
}

// AllTiers lists every tier the package declares, whether or not this CPU
// and build run it, in a fixed order.
func AllTiers() []Tier {
	return []Tier{TierAMXBF16, TierAMX, TierAVX512BF16, TierAVX512VNNI, TierAVXVNNI,
		TierAVX2Int8, TierAVX512, TierAVX2, TierNEONBF16, TierI8MM, TierNEONDotProd, TierNEON, TierGeneric, TierReference}
}

// BF16Tiers lists the tiers of this CPU and build whose Rounding has BF16:
// the tiers tests hold to the bfloat16 bound.
func BF16Tiers() []Tier {
	var out []Tier
	for _, t := range Available() {
		if tierRounding[t].BF16 {
			out = append(out, t)
		}
	}
	return out
}
