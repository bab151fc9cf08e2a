package kernels

import (
	"math"

	"github.com/vembed/vembed/gguf"
)

// The bfloat16 product of the avx512-bf16 tier, in portable form: the
// rounding of activations and weight panels to bfloat16 pairs (the tier's
// assembly does the whole vectors, these functions the tails) and a Go
// microkernel on the pair layout, with which the tests check the blocked
// driver on any CPU.
//
// Error: a float32 x rounded to bfloat16 (8 significant bits, round to
// nearest even) is x·(1+δ) with |δ| ≤ 2⁻⁸; a product of two rounded values
// is exact in float32 and within (2·2⁻⁸ + 2⁻¹⁶)·|x·w| of x·w (F16 and F32
// weights are rounded, BF16 weights are exact). Summed over K terms in
// float32 the output is within (2⁻⁷ + 2⁻¹⁶ + γ_K)·Σ|x_k·w_k| of the exact
// product of the unrounded values (the tests' bf16Slack).

// TierAVX512 is avx2 with the float32 products on an 8×32 AVX-512 tile
// (gemm_avx512_amd64.s): the GEMM and both products of the attention. Its
// results are bit for bit those of avx2, since every output is still
// accumulated in k order by FMA within each k slice. Needs AVX-512 F. On
// CPUs that have it, the integer tiers (avx2-int8, the VNNI ones) take
// their float32 products from it.
const TierAVX512 Tier = "avx512"

// TierAVX512BF16 is avx512-vnni (where the CPU lacks AVX-512 VNNI, the
// best other default tier: avx2-int8 on avx512's float32 products) with
// MatMul by the F32, F16 and BF16 weights a model marks (Matrix.BF16: the
// vision towers' MLPs) in bfloat16: weights and activations rounded to bfloat16
// (8 significant bits), products summed in float32 by VDPBF16PS on the
// 8×32 avx512 tile (gemm_bf16_amd64.s). Each output is within
// (2⁻⁷ + 2⁻¹⁶ + γ_K)·Σ|x·w| of the exact product (gemm_bf16.go). Unmarked
// weights, attention and the other operations stay float32 (or int8, as
// avx512-vnni). Needs AVX512_BF16 besides the avx512 tier's features; the
// default on AMD CPUs that have them (Zen 4 and later), not on Intel ones,
// whose VDPBF16PS runs at half the float32 FMA rate (cpu.go).
// VEMBED_CPU=avx512-vnni keeps every float weight in float32.
const TierAVX512BF16 Tier = "avx512-bf16"

// TierAMXBF16 is avx512-bf16 with its bfloat16 products on AMX tiles
// (TDPBF16PS, gemm_amxbf16_amd64.s) in 32×32 tiles: the same rounding of
// activations and weights, the same error bound. Its tests passed natively
// on a Xeon with AMX (family 6 model 167 as its hypervisor reports it),
// where it was the fastest tier end to end; the default table picks it on
// Sapphire Rapids and later with AMX-BF16 (cpu.go) and nowhere else. Its
// tests skip on CPUs without AMX; TestAMXBF16LayoutGo checks its data
// layout and tails through a Go model of the tile product everywhere.
const TierAMXBF16 Tier = "amx-bf16"

// bf16Types are the weight types the avx512-bf16 tier multiplies in
// bfloat16.
var bf16Types = map[gguf.Type]bool{gguf.TypeF32: true, gguf.TypeF16: true, gguf.TypeBF16: true}

// bf16Round rounds f to bfloat16 as VCVTNE2PS2BF16 does: to nearest even,
// NaN kept quiet, and a denormal input as a zero of its sign.
func bf16Round(f float32) uint32 {
	b := math.Float32bits(f)
	switch {
	case b&0x7fffffff > 0x7f800000:
		return (b >> 16) | 0x40
	case b&0x7f800000 == 0:
		return (b >> 16) & 0x8000
	}
	return (b + 0x7fff + (b>>16)&1) >> 16
}

// bf16Value is the float32 value of bfloat16 bits h.
func bf16Value(h uint32) float32 { return math.Float32frombits(h << 16) }

// bf16PairsGo rounds n values of src to bfloat16 pairs in dst, value 2p in
// the low half of word p, an odd n padded with a zero: the tail of the
// activation rows.
func bf16PairsGo(dst []float32, src []float32) {
	for p := 0; 2*p < len(src); p++ {
		w := bf16Round(src[2*p])
		if 2*p+1 < len(src) {
			w |= bf16Round(src[2*p+1]) << 16
		}
		dst[p] = math.Float32frombits(w)
	}
}

// bf16RowsGo is the portable narrower.x: m rows of k values to rows of
// (k+1)/2 pairs.
func bf16RowsGo(dst, src []float32, m, k int) {
	lda := (k + 1) / 2
	for i := 0; i < m; i++ {
		bf16PairsGo(dst[i*lda:(i+1)*lda], src[i*k:(i+1)*k])
	}
}

// bf16RowsWith returns narrower.x with whole groups of group values
// rounded by kern (n groups from src to n·group/2 words at dst), the rest
// in Go.
func bf16RowsWith(kern func(src *float32, n int, dst *float32), group int) func(dst, src []float32, m, k int) {
	return func(dst, src []float32, m, k int) {
		lda := (k + 1) / 2
		n := k / group
		for i := 0; i < m; i++ {
			d, s := dst[i*lda:(i+1)*lda], src[i*k:(i+1)*k]
			if n > 0 {
				_ = s[n*group-1]
				_ = d[n*group/2-1]
				kern(&s[0], n, &d[0])
			}
			bf16PairsGo(d[n*group/2:], s[n*group:])
		}
	}
}

// bf16PanelWith returns narrower.panel for nr-wide panels with whole row
// pairs rounded by kern (np pairs from src to np rows at dst, in place),
// an odd last row in Go.
func bf16PanelWith(kern func(src *float32, np int, dst *float32), nr int) func(pan []float32, kc, nr int) {
	width := nr
	return func(pan []float32, kc, nr int) {
		np := kc / 2
		if np > 0 && nr == width {
			_ = pan[2*np*nr-1]
			kern(&pan[0], np, &pan[0])
		} else {
			np = 0
		}
		bf16PanelGo(pan, kc, nr, np)
	}
}

// bf16PanelGo is the portable narrower.panel, from pair p0 on: rows 2p and
// 2p+1 of the kc×nr float32 panel pan become row p of pairs, in place.
func bf16PanelGo(pan []float32, kc, nr, p0 int) {
	for p := p0; 2*p < kc; p++ {
		for j := 0; j < nr; j++ {
			w := bf16Round(pan[2*p*nr+j])
			if 2*p+1 < kc {
				w |= bf16Round(pan[(2*p+1)*nr+j]) << 16
			}
			pan[p*nr+j] = math.Float32frombits(w)
		}
	}
}

// microKernelBF16Go is a portable microkernel on the pair layout for an
// mr×nr tile: c (+)= a·b over kp pairs, each pair's two products added to
// a float32 sum, high product first (as the SDM describes VDPBF16PS).
func microKernelBF16Go(mr, nr int) microKernel {
	return func(kp int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
		for i := 0; i < mr; i++ {
			for j := 0; j < nr; j++ {
				var s float32
				for p := 0; p < kp; p++ {
					x, w := math.Float32bits(a[i*lda+p]), math.Float32bits(b[p*nr+j])
					s += bf16Value(x>>16) * bf16Value(w>>16)
					s += bf16Value(x&0xffff) * bf16Value(w&0xffff)
				}
				if acc {
					s += c[i*ldc+j]
				}
				c[i*ldc+j] = s
			}
		}
	}
}
