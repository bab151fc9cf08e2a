package kernels

import (
	"fmt"
	"os"
)

// Tier names a set of kernel implementations.
type Tier string

// The tiers. TierReference runs the single-threaded reference code; the
// others are chosen from CPU features at start-up, or forced with the
// VEMBED_CPU environment variable.
const (
	TierReference Tier = "reference"
	TierGeneric   Tier = "generic"
	TierAVX2      Tier = "avx2"
)

// impl is the table of functions behind the exported API.
type impl struct {
	tier      Tier
	matMul    func(dst, x []float32, m int, w *Matrix, bias []float32)
	attention func(out, q, k, v []float32, nTok, nHead, nKV, headDim int, scale float32, mask Mask)
	rmsNorm   func(dst, x, w []float32, dim int, eps float32)
	layerNorm func(dst, x, w, b []float32, dim int, eps float32)
	rope      func(x []float32, nTok, nHead, headDim int, cos, sin []float32)
	add       func(dst, a, b []float32)
	swiGLU    func(dst, gate, up []float32)
	gelu      func(x []float32)
	quickGELU func(x []float32)
	prepare   func(w *Matrix)
}

var reference = &impl{
	tier:      TierReference,
	matMul:    MatMulRef,
	attention: AttentionRef,
	rmsNorm:   RMSNormRef,
	layerNorm: LayerNormRef,
	rope:      RoPERef,
	add:       AddRef,
	swiGLU:    SwiGLURef,
	gelu:      GELURef,
	quickGELU: QuickGELURef,
	prepare:   func(*Matrix) {},
}

// generic is the portable tier: the blocked, parallel algorithms with Go
// inner loops. Faster tiers start from a copy and replace inner loops.
var generic = &impl{
	tier: TierGeneric,
	matMul: func(dst, x []float32, m int, w *Matrix, bias []float32) {
		matMul(dst, x, m, w, bias, &gemmTier{kern: microKernelGo})
	},
	attention: (&attnTier{kern: microKernelGo, scaleMax: scaleMaxGo, expSum: expSumGo}).attention,
	rmsNorm:   rmsNormPar,
	layerNorm: layerNormPar,
	rope:      ropePar,
	add:       addPar,
	swiGLU:    swiGLUWith(siluMulGo),
	gelu:      geluPar,
	quickGELU: quickGELUWith(quickGELUGo),
	prepare:   func(*Matrix) {},
}

// tiers holds every tier this build and CPU can run, best first.
var tiers = append(archTiers(), generic, reference)

var active = reference

func init() {
	if name := os.Getenv("VEMBED_CPU"); name != "" {
		if err := Use(Tier(name)); err != nil {
			fmt.Fprintf(os.Stderr, "vembed: VEMBED_CPU: %v\n", err)
			os.Exit(2)
		}
		return
	}
	active = tiers[0]
}

// Use makes t the active tier. It fails if the CPU or build lacks it.
func Use(t Tier) error {
	for _, im := range tiers {
		if im.tier == t {
			active = im
			return nil
		}
	}
	return fmt.Errorf("kernels: tier %q is not available on this CPU (have %v)", t, Available())
}

// Active returns the tier in use.
func Active() Tier { return active.tier }

// Available lists the tiers this CPU and build support, best first.
func Available() []Tier {
	out := make([]Tier, len(tiers))
	for i, im := range tiers {
		out[i] = im.tier
	}
	return out
}
