package kernels

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Tier names a set of kernel implementations.
type Tier string

// The tiers. The one a table of CPU identities picks (DefaultFor, cpu.go:
// by vendor, family, model and features, never by a timing) is active at
// start-up; the VEMBED_CPU environment variable (a tier name) forces
// another, and Use switches at run time. All but the integer
// tiers (avx2-int8 and the VNNI tiers built on it) and the bfloat16 ones
// (avx512-bf16, amx-bf16, for the float weights a model marks;
// gemm_bf16.go) compute float32 products with float32 accumulation (the
// reference accumulates in float64), so they agree with the reference
// within float32 summation-order error. The avx512, avx512-bf16 and
// amx-bf16 tiers are declared in gemm_bf16.go. Arithmetic names which
// tiers agree bit for bit.
const (
	// TierReference runs the single-threaded reference code of ref.go.
	TierReference Tier = "reference"
	// TierGeneric is portable Go: blocked, packed and parallel. On AVX2
	// CPUs its additions, RoPE and norms take the AVX2 loops every fast
	// tier shares, on arm64 the NEON ones, which give the Go code's bits
	// (elementwise.go).
	TierGeneric Tier = "generic"
	// TierAVX2 adds AVX2+FMA assembly: a 6×16 GEMM microkernel, vectorized
	// weight decoding and exp. Needs AVX2, FMA and F16C.
	TierAVX2 Tier = "avx2"
	// TierAVX2Int8 is avx2 with MatMul by quantized weights in integer
	// arithmetic: activations are quantized to 8 bits per 32 values
	// (gemm_int8.go), which adds an error of at most half a quantization
	// step per value; float weights keep the exact float32 path.
	TierAVX2Int8 Tier = "avx2-int8"
	// TierAVX512VNNI is avx2-int8 with the integer products by AVX-512
	// VNNI (VPDPBUSD on zmm, gemm_vnni.go): the same results, bit for bit.
	// Needs AVX-512 F/BW/VL and VNNI.
	TierAVX512VNNI Tier = "avx512-vnni"
	// TierAVXVNNI is avx2-int8 with the integer products by AVX-VNNI
	// (VEX VPDPBUSD on ymm), for CPUs with AVX-VNNI but no AVX-512 (Intel
	// Alder Lake and later client cores): the same results, bit for bit.
	TierAVXVNNI Tier = "avx-vnni"
	// TierAMX is avx512-vnni with the integer products by AMX int8 tiles
	// (TDPBUSD, gemm_amx_amd64.s), for Sapphire Rapids and later: the same
	// results, bit for bit. It has not run on AMX hardware yet, so it is
	// never picked by default: VEMBED_CPU=amx or Use selects it.
	TierAMX Tier = "amx"
)

// impl is the table of functions behind the exported API.
type impl struct {
	tier Tier
	// optIn keeps a tier from being the default unless a row of the
	// default table names it (amx-bf16 on Sapphire Rapids): otherwise
	// only VEMBED_CPU or Use select it.
	optIn bool
	// bits names the arithmetic of the tier's results: tiers with equal
	// bits return the same bits for the same inputs (avx512 those of
	// avx2, the VNNI and AMX int8 tiers those of avx2-int8).
	bits string
	// products names the tier computing each kind of product.
	products    Products
	matMul      func(dst, x []float32, m int, w *Matrix, bias []float32)
	attention   func(out, q, k, v []float32, nTok, nHead, nKV, headDim int, scale float32, mask Mask)
	attentionKV func(out, q []float32, nHead, nKV, headDim int, scale float32, spans []KVSpan)
	rmsNorm     func(dst, x, w []float32, dim int, eps float32)
	layerNorm   func(dst, x, w, b []float32, dim int, eps float32)
	rope        func(x []float32, nTok, nHead, headDim int, cos, sin []float32)
	add         func(dst, a, b []float32)
	swiGLU      func(dst, gate, up []float32)
	gelu        func(x []float32)
	quickGELU   func(x []float32)
	geluTanh    func(x []float32)
	prepare     func(w *Matrix)
}

var reference = &impl{
	tier:        TierReference,
	bits:        string(TierReference),
	products:    Products{TierReference, TierReference, TierReference},
	matMul:      MatMulRef,
	attention:   AttentionRef,
	attentionKV: AttentionKVRef,
	rmsNorm:     RMSNormRef,
	layerNorm:   LayerNormRef,
	rope:        RoPERef,
	add:         AddRef,
	swiGLU:      SwiGLURef,
	gelu:        GELURef,
	quickGELU:   QuickGELURef,
	geluTanh:    GELUTanhRef,
	prepare:     func(*Matrix) {},
}

// generic is the portable tier: the blocked, parallel algorithms with Go
// inner loops. Faster tiers start from a copy and replace inner loops.
var generic = &impl{
	tier:     TierGeneric,
	bits:     string(TierGeneric),
	products: Products{TierGeneric, TierGeneric, TierGeneric},
	matMul: func(dst, x []float32, m int, w *Matrix, bias []float32) {
		matMul(dst, x, m, w, bias, &gemmTier{tile: genericTile})
	},
	attention:   (&attnTier{tile: genericTile, scaleMax: scaleMaxGo, expSum: expSumGo}).attention,
	attentionKV: (&attnTier{tile: genericTile, scaleMax: scaleMaxGo, expSum: expSumGo}).attentionKV,
	rmsNorm:     rmsNormPar,
	layerNorm:   layerNormPar,
	rope:        ropePar,
	add:         addPar,
	swiGLU:      swiGLUWith(siluMulGo),
	gelu:        geluPar,
	quickGELU:   inPlaceWith(quickGELUGo),
	geluTanh:    inPlaceWith(geluTanhGo),
	prepare:     func(*Matrix) {},
}

// tiers holds every tier this build and CPU can run, best first.
var tiers = append(archTiers(), generic, reference)

// active is the tier in use; an atomic pointer so that Use may run while
// other goroutines compute.
var active atomic.Pointer[impl]

func init() {
	if name := os.Getenv("VEMBED_CPU"); name != "" {
		if err := Use(Tier(name)); err != nil {
			fmt.Fprintf(os.Stderr, "vembed: VEMBED_CPU: %v\n", err)
			os.Exit(2)
		}
		return
	}
	active.Store(defaultTier())
}

// defaultTier is the tier the default table picks for this CPU, or, if
// the build lacks it, the best tier that is not opt-in.
func defaultTier() *impl {
	want, _ := DefaultChoice()
	for _, im := range tiers {
		if im.tier == want {
			return im
		}
	}
	for _, im := range tiers {
		if !im.optIn {
			return im
		}
	}
	return reference
}

// Float32Default is the tier the CPU would run by default if no tier
// multiplied in bfloat16: the default's arithmetic with every float weight
// in float32 (avx512-vnni on a Zen 4, where avx512-bf16 is the default,
// and on Sapphire Rapids, where amx-bf16 is).
// Tests of a model's float32 arithmetic against float64 transcriptions run
// on it; VEMBED_CPU set to its name does the same for a process.
func Float32Default() Tier {
	for _, im := range tiers {
		if !im.optIn && !tierRounding[im.tier].BF16 {
			return im.tier
		}
	}
	return TierReference
}

// Use makes t the active tier. It fails if the CPU or build lacks it.
func Use(t Tier) error {
	for _, im := range tiers {
		if im.tier == t {
			active.Store(im)
			return nil
		}
	}
	return fmt.Errorf("kernels: tier %q is not available on this CPU (have %v)", t, Available())
}

// Active returns the tier in use.
func Active() Tier { return active.Load().tier }

// Arithmetic names the arithmetic of the active tier: two tiers with the
// same name compute the same bits for the same inputs, whatever the CPU
// and architecture (avx512 and arm64's neon reproduce avx2, the VNNI
// tiers, neon-dotprod and i8mm avx2-int8). Caches shared between
// processes key results by it, so that vectors of one arithmetic are
// never served for another. The name holds for every build: the Go code
// of the module converts each product that an addition follows (float32(a·b)
// + c), which forbids a compiler that fuses multiply-adds (arm64, amd64
// from GOAMD64=v3) to fuse it, so Go arithmetic rounds the same everywhere;
// TestNoFusedMultiplyAdd decodes both builds to hold it so.
func Arithmetic() string {
	return active.Load().bits + arithmeticRevision
}

// arithmeticRevision names the revision of every tier's bits: it changes
// with every change to what a tier computes (a summation order, a
// blocking, an approximation), so that caches shared by processes of
// different versions never serve one's vectors for the other's.
// TestArithmeticRevision pins each name's results to catch a change made
// without one. Revision 2: attention's key blocks of 1024 keys. Revision
// 3: the models' rotary frequencies by portmath.Pow (the same on every
// architecture), which moves some rotations of far positions by a float32
// unit. Revision 4: attention's rescaling and the portable activations
// exponentiate by portmath.Exp.
const arithmeticRevision = "/4"

// Available lists the tiers this CPU and build support, best first.
func Available() []Tier {
	out := make([]Tier, len(tiers))
	for i, im := range tiers {
		out[i] = im.tier
	}
	return out
}
