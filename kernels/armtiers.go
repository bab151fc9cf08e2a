package kernels

import (
	"strconv"
	"strings"
)

// The arm64 tiers (tier_arm64.go builds them; cpu.go's table picks among
// them by the CPU's identity and features, cpu_arm.go). Declared on every
// architecture so that the tables of tiers, needs and roundings are the
// same everywhere.
const (
	// TierNEON is generic with the float32 products (float weights, the
	// attention's tiles, the float32 path of quantized weights) by a 6×16
	// FMLA microkernel: the same k order and fused multiply-adds as avx2's
	// 6×16 kernel, so the same bits. Needs ASIMD, which every ARMv8-A core
	// has.
	TierNEON Tier = "neon"
	// TierNEONDotProd is neon with MatMul by quantized weights in integer
	// arithmetic as avx2-int8 does (activations quantized to 8 bits per 32
	// values, the same decoders, block sums and epilogue), the byte
	// products by SDOT: bit for bit avx2-int8's products. Needs the dot
	// product (ARMv8.2 FEAT_DotProd: Neoverse N1, Ampere Altra, Apple M1).
	TierNEONDotProd Tier = "neon-dotprod"
	// TierI8MM is neon-dotprod with the byte products by SMMLA (2×8 by
	// 8×2 int8 matrix multiply-accumulate), on activations and weight
	// panels laid out in its operands' eight-byte chunks: the same block
	// sums, so the same bits. Needs FEAT_I8MM (Neoverse V1/V2,
	// Graviton3/4, Google Axion, Apple M2 and later).
	TierI8MM Tier = "i8mm"
	// TierNEONBF16 is the best integer tier (i8mm, else neon-dotprod) with
	// MatMul by the float weights a model marks (Matrix.BF16: the vision
	// towers' MLPs) in bfloat16, as avx512-bf16 does: weights and
	// activations rounded to bfloat16 pairs by the same Go code, products
	// summed by BFDOT on a 6×16 tile, within the bfloat16 bound (BFDOT
	// rounds to odd where VDPBF16PS rounds to nearest even, so the bits
	// differ from x86's). Needs FEAT_BF16. Opt-in (VEMBED_CPU): its speed
	// against FMLA has not been measured on ARM hardware.
	TierNEONBF16 Tier = "neon-bf16"
)

// ARM feature flags, as Linux's /proc/cpuinfo names them (the HWCAP and
// HWCAP2 bits; macOS's hw.optional.arm.FEAT_* sysctls map to the same
// names).
const (
	flagASIMD   = "asimd"
	flagASIMDDP = "asimddp"
	flagI8MM    = "i8mm"
	flagBF16    = "bf16"
)

// MIDR_EL1 implementer codes of the vendors the default table names: the
// Family of an ARM CPU (its Model is the MIDR part number).
const (
	implARM    = 0x41
	implApple  = 0x61
	implAmpere = 0xc0
)

// armVendors names the implementers a CPU's Vendor spells out.
var armVendors = map[int]string{
	implARM:    "ARM",
	implApple:  "Apple",
	implAmpere: "Ampere",
	0x42:       "Broadcom",
	0x43:       "Cavium",
	0x46:       "Fujitsu",
	0x48:       "HiSilicon",
	0x4e:       "NVIDIA",
	0x51:       "Qualcomm",
	0x6d:       "Microsoft",
}

// MIDR part numbers of the Arm cores the default table names.
const (
	partNeoverseN1 = 0xd0c // Graviton2, Ampere Altra and Altra Max
	partNeoverseV1 = 0xd40 // Graviton3
	partNeoverseN2 = 0xd49
	partNeoverseV2 = 0xd4f // Graviton4, Google Axion, NVIDIA Grace
	partNeoverseV3 = 0xd84
)

// armCPU is the identity of an ARM CPU of MIDR implementer impl and part
// number part, with the feature flags flags: Vendor the implementer's
// name (empty when unknown), Family the implementer code, Model the part.
func armCPU(impl, part int, flags []string) CPU {
	return CPU{Vendor: armVendors[impl], Family: impl, Model: part, Flags: flags}
}

// parseCPUInfoARM reads the implementer and part number of the first
// processor listed in the text of Linux's /proc/cpuinfo on arm64 ("CPU
// implementer : 0x41", "CPU part : 0xd0c"); ok is false when either is
// missing or malformed.
func parseCPUInfoARM(text string) (impl, part int, ok bool) {
	impl, part = -1, -1
	for line := range strings.Lines(text) {
		key, val, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(val), 0, 32)
		if err != nil || v < 0 {
			continue
		}
		switch strings.TrimSpace(key) {
		case "CPU implementer":
			if impl < 0 {
				impl = int(v)
			}
		case "CPU part":
			if part < 0 {
				part = int(v)
			}
		}
		if impl >= 0 && part >= 0 {
			return impl, part, true
		}
	}
	return 0, 0, false
}
