package kernels

import (
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/vembed/vembed/gguf"
)

// FMAPeak measures the float32 FMA throughput of this machine with the
// widest FMA the active build can run, on threads goroutines at once, for
// about d. It returns GFLOPS summed over the threads and false when no
// assembly probe exists for this CPU. The probe keeps twelve independent
// FMA chains in registers, so it measures the arithmetic units alone: a
// GEMM's efficiency is its GFLOPS over this figure for the same threads.
func FMAPeak(threads int, d time.Duration) (float64, bool) {
	loop, flopsPerIter := fmaProbe()
	return runProbe(loop, flopsPerIter, threads, d)
}

// runProbe runs loop on threads locked goroutines for about d and returns
// the rate in billions of operations per second.
func runProbe(loop func(n int), opsPerIter float64, threads int, d time.Duration) (float64, bool) {
	if loop == nil || threads < 1 {
		return 0, false
	}
	const chunk = 1 << 14
	var wg sync.WaitGroup
	iters := make([]int, threads)
	start := time.Now()
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// At least one chunk: on a busy machine a thread may first run
			// after d has passed.
			for iters[t] == 0 || time.Since(start) < d {
				loop(chunk)
				iters[t] += chunk
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	total := 0
	for _, n := range iters {
		total += n
	}
	return float64(total) * opsPerIter / el / 1e9, true
}

// PeakUnit names an arithmetic instruction whose throughput bounds a
// tier's products: a GEMM's efficiency is its rate over the peak of the
// instruction it multiplies with. Rates count a multiply and an add as two
// operations whatever the operand width, as GEMM figures do (2·M·K·N).
type PeakUnit string

// The probed units.
const (
	// PeakFMA256 is VFMADD231PS on ymm registers (AVX2 + FMA): 8 float32
	// lanes, 16 flops an instruction.
	PeakFMA256 PeakUnit = "fma-ymm"
	// PeakFMA512 is VFMADD231PS on zmm registers (AVX-512F): 32 flops an
	// instruction. Zen 4 splits it into two 256-bit halves (the same rate
	// as PeakFMA256); Zen 5 and Intel server cores run it at full width.
	PeakFMA512 PeakUnit = "fma-zmm"
	// PeakVNNI512 is VPDPBUSD on zmm registers (AVX512-VNNI): 64 unsigned
	// by signed byte products summed by fours into 16 int32 lanes, 128
	// operations an instruction.
	PeakVNNI512 PeakUnit = "vnni-zmm"
	// PeakVNNI256 is VPDPBUSD on ymm registers in its VEX form (AVX-VNNI):
	// 64 operations an instruction.
	PeakVNNI256 PeakUnit = "avx-vnni-ymm"
	// PeakBF16 is VDPBF16PS on zmm registers (AVX512-BF16): 32 bf16
	// products summed by pairs into 16 float32 lanes, 64 flops an
	// instruction.
	PeakBF16 PeakUnit = "bf16-zmm"
	// PeakAMXInt8 is TDPBUSD on AMX tiles: 16×16 int32 sums of 64
	// unsigned by signed byte products each, 32768 operations an
	// instruction.
	PeakAMXInt8 PeakUnit = "amx-int8"
	// PeakAMXBF16 is TDPBF16PS on AMX tiles: 16×16 float32 sums of 32
	// bfloat16 products each, 16384 flops an instruction.
	PeakAMXBF16 PeakUnit = "amx-bf16"
	// PeakFMLA is FMLA on 128-bit NEON registers (arm64): 4 float32
	// lanes, 8 flops an instruction.
	PeakFMLA PeakUnit = "fmla-q"
	// PeakSDOT is SDOT .4S (FEAT_DotProd): 16 signed byte products
	// summed by fours into 4 int32 lanes, 32 operations an instruction.
	PeakSDOT PeakUnit = "sdot-q"
	// PeakSMMLA is SMMLA (FEAT_I8MM): a 2×8 by 8×2 signed byte product
	// into a 2×2 int32 tile, 64 operations an instruction.
	PeakSMMLA PeakUnit = "smmla-q"
	// PeakBFDOT is BFDOT .4S (FEAT_BF16): 8 bfloat16 products summed by
	// pairs into 4 float32 lanes, 16 flops an instruction.
	PeakBFDOT PeakUnit = "bfdot-q"
	// PeakBFMMLA is BFMMLA (FEAT_BF16): a 2×4 by 4×2 bfloat16 product into
	// a 2×2 float32 tile, 32 flops an instruction. No tier multiplies with
	// it yet; probed to show what a BFMMLA kernel could gain over BFDOT.
	PeakBFMMLA PeakUnit = "bfmmla-q"
)

// BasePeak is the unit of the float32 products of the tiers without
// their own instruction on this architecture (reference, generic): the
// AVX2 FMA on x86, FMLA on arm64.
func BasePeak() PeakUnit {
	if _, ok := peakProbes()[PeakFMLA]; ok {
		return PeakFMLA
	}
	return PeakFMA256
}

// peakProbe is one probe loop: n iterations of independent chains of its
// instruction over the operands at src (two 64-byte operands), storing
// the sum of its accumulators at dst; opsPerIter counts the operations of
// one iteration.
type peakProbe struct {
	loop       func(n int, src, dst *byte)
	opsPerIter float64
}

// PeakUnits lists the units this CPU and build can probe.
func PeakUnits() []PeakUnit {
	var out []PeakUnit
	for _, u := range []PeakUnit{PeakFMA256, PeakFMA512, PeakVNNI256, PeakVNNI512, PeakBF16, PeakAMXInt8, PeakAMXBF16,
		PeakFMLA, PeakSDOT, PeakSMMLA, PeakBFDOT, PeakBFMMLA} {
		if _, ok := peakProbes()[u]; ok {
			out = append(out, u)
		}
	}
	return out
}

// Peak measures the throughput of unit u on threads goroutines at once
// (each locked to an OS thread) for about d, in billions of operations a
// second summed over the threads. It returns false when the CPU lacks the
// instruction. The probe keeps independent chains in registers, so it
// measures the arithmetic units alone.
func Peak(u PeakUnit, threads int, d time.Duration) (float64, bool) {
	p, ok := peakProbes()[u]
	if !ok {
		return 0, false
	}
	return runProbe(func(n int) {
		var src [128]byte
		var dst [64]byte
		p.loop(n, &src[0], &dst[0])
	}, p.opsPerIter, threads, d)
}

// TierPeak returns the unit that bounds tier t's products of weights of
// type typ: the instruction its inner loop multiplies with. It returns
// false when no probe of this CPU measures it.
// Each tier has its entry here, next to the instructions it uses:
//   - reference, generic and avx2, and avx2-int8 for every type: the AVX2
//     FMA (AVX2 has no int8 dot product; the integer products are set
//     against the float peak, as they always were);
//   - avx512: the zmm FMA;
//   - avx512-vnni and avx-vnni: VPDPBUSD (zmm; ymm VEX) for the types they
//     multiply in integers, and for the rest the float products of the
//     tier they are built on (avx512 where the CPU has it, else avx2);
//   - avx512-bf16: VDPBF16PS for float weights (F32, F16, BF16; it
//     multiplies only those marked Matrix.BF16 in bfloat16, as bench's
//     are), VPDPBUSD zmm for the types the integer tiers multiply, and
//     the float products of avx512 for the rest;
//   - amx-bf16: as avx512-bf16, but TDPBF16PS for float weights;
//   - amx: TDPBUSD for the types it multiplies in integers, the float
//     products of avx512 for the rest;
//   - on arm64 reference, generic and neon: FMLA; neon-dotprod and i8mm:
//     SDOT and SMMLA for the types they multiply in integers, FMLA for the
//     rest; neon-bf16: BFDOT for float weights (those marked, as bench's
//     are), its integer tier's unit for the integer types, FMLA else.
func TierPeak(t Tier, typ gguf.Type) (PeakUnit, bool) {
	float := PeakFMA256
	if slices.Contains(Available(), TierAVX512) {
		float = PeakFMA512
	}
	u := BasePeak()
	intARM := PeakSDOT
	if slices.Contains(Available(), TierI8MM) {
		intARM = PeakSMMLA
	}
	switch t {
	case TierNEONDotProd, TierI8MM:
		if int8Types[typ] {
			u = map[Tier]PeakUnit{TierNEONDotProd: PeakSDOT, TierI8MM: PeakSMMLA}[t]
		}
	case TierNEONBF16:
		switch {
		case bf16Types[typ]:
			u = PeakBFDOT
		case int8Types[typ]:
			u = intARM
		}
	case TierAVX512:
		u = PeakFMA512
	case TierAVX512VNNI, TierAVXVNNI:
		u = float
		if int8Types[typ] {
			u = PeakVNNI512
			if t == TierAVXVNNI {
				u = PeakVNNI256
			}
		}
	case TierAVX512BF16, TierAMXBF16:
		switch {
		case bf16Types[typ] && t == TierAMXBF16:
			u = PeakAMXBF16
		case bf16Types[typ]:
			u = PeakBF16
		case int8Types[typ]:
			u = PeakVNNI512
		default:
			u = float
		}
	case TierAMX:
		u = float
		if int8Types[typ] {
			u = PeakAMXInt8
		}
	}
	_, ok := peakProbes()[u]
	return u, ok
}

// AttentionPeak returns the unit that bounds tier t's attention, which
// multiplies float32 with FMAs on every tier: the bfloat16 and AMX tiers'
// attention is the float32 code of the tier they are built on, the zmm
// FMA's.
func AttentionPeak(t Tier) (PeakUnit, bool) {
	switch t {
	case TierAVX512BF16, TierAMXBF16, TierAMX:
		t = TierAVX512VNNI // whose float32 products are avx512's
	case TierNEONBF16:
		t = TierNEON
	}
	return TierPeak(t, gguf.TypeF32)
}

// peakProbes lists the probes this CPU runs, by unit; built once.
var peakProbes = sync.OnceValue(func() map[PeakUnit]peakProbe {
	m := archPeakProbes()
	if loop, ops := fmaProbe(); loop != nil {
		m[PeakFMA256] = peakProbe{func(n int, _, _ *byte) { loop(n) }, ops}
	}
	return m
})
