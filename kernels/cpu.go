package kernels

import (
	"fmt"
	"slices"
	"strings"
)

// CPU is the identity of a processor as the choice of the default tier
// sees it: a pure function of it (DefaultFor), never of a timing, so the
// same machine always computes the same bits.
type CPU struct {
	// Vendor is CPUID's vendor string on x86: "GenuineIntel",
	// "AuthenticAMD"; on ARM the name of the MIDR implementer: "ARM",
	// "Apple", "Ampere" (armtiers.go).
	Vendor string
	// Family and Model are on x86 the display family and model (the
	// extended fields added as the vendors' manuals say): Sapphire Rapids
	// is family 6 model 143, Zen 4 family 25, Zen 5 family 26. On ARM they
	// are MIDR_EL1's implementer code and part number: Neoverse N1 is
	// family 0x41 model 0xd0c. macOS does not show the MIDR to programs:
	// an Apple CPU there is family 0x61 model 0, told apart by its flags.
	Family, Model int
	// Flags are the features this process may use, named as Linux's
	// /proc/cpuinfo names them (avx2, avx512f, avx512_vnni, amx_bf16...;
	// on ARM asimd, asimddp, i8mm, bf16). The running CPU's lists only
	// what the OS enabled: amx_* only when it granted the tile state.
	Flags []string
}

// Has reports whether c has every flag of fs.
func (c CPU) Has(fs ...string) bool {
	for _, f := range fs {
		if !slices.Contains(c.Flags, f) {
			return false
		}
	}
	return true
}

// String is "GenuineIntel family 6 model 143", or on ARM "ARM
// implementer 0x41 part 0xd0c".
func (c CPU) String() string {
	v := c.Vendor
	if v == "" {
		v = "unknown vendor"
	}
	if name, arm := armVendors[c.Family]; arm && name == c.Vendor {
		return fmt.Sprintf("%s implementer %#x part %#x", v, c.Family, c.Model)
	}
	return fmt.Sprintf("%s family %d model %d", v, c.Family, c.Model)
}

// tierNeeds lists the CPU flags each tier needs, as the has* variables of
// the amd64 tiers test them (TestHostTiersMatchFlags checks the two agree).
var tierNeeds = func() map[Tier][]string {
	avx2 := []string{"avx", "avx2", "fma", "f16c"}
	avx512 := append(slices.Clone(avx2), "avx512f")
	vnni := append(slices.Clone(avx512), "avx512bw", "avx512vl", "avx512_vnni")
	bf16 := append(slices.Clone(avx512), "avx512bw", "avx512_bf16")
	amx := append(slices.Clone(vnni), "amx_tile", "amx_int8")
	neon := []string{flagASIMD}
	dot := append(slices.Clone(neon), flagASIMDDP)
	return map[Tier][]string{
		TierNEON:        neon,
		TierNEONDotProd: dot,
		TierI8MM:        append(slices.Clone(dot), flagI8MM),
		TierNEONBF16:    append(slices.Clone(dot), flagBF16),
		TierReference:   nil,
		TierGeneric:     nil,
		TierAVX2:        avx2,
		TierAVX2Int8:    avx2,
		TierAVX512:      avx512,
		TierAVX512VNNI:  vnni,
		TierAVXVNNI:     append(slices.Clone(avx2), "avx_vnni"),
		TierAVX512BF16:  bf16,
		TierAMX:         amx,
		TierAMXBF16:     append(slices.Concat(bf16, amx), "amx_bf16"),
	}
}()

// displayFamilyModel decodes CPUID leaf 1's EAX: the extended family is
// added to a base family of 15, and the extended model prefixed to the
// model of families 6 and 15 (and above), as Intel's and AMD's manuals
// say.
func displayFamilyModel(eax, _, _, _ uint32) (family, model int) {
	family = int(eax >> 8 & 0xf)
	model = int(eax >> 4 & 0xf)
	if family == 15 {
		family += int(eax >> 20 & 0xff)
	}
	if family >= 6 {
		model |= int(eax>>16&0xf) << 4
	}
	return family, model
}

// DefaultRule is a row of the table that picks the default tier.
type DefaultRule struct {
	// Name says which CPUs the row is for.
	Name string
	// Vendor, Family and Models restrict the row to those CPUs; empty,
	// zero and nil match any.
	Vendor string
	Family int
	Models []int
	// Needs lists flags the row requires beyond its tier's.
	Needs []string
	// Tier is the default the row picks; the row matches only CPUs with
	// every flag the tier needs.
	Tier Tier
	// Why gives the measurements behind the row.
	Why string
}

// sapphireRapidsOn are the Intel family 6 models of Sapphire Rapids and its
// successors (Emerald Rapids 207, Granite Rapids 173 and 174) and 167,
// which a hypervisor reported for a Xeon with AMX (AVX-512 FP16,
// AMX-TILE/INT8/BF16): cores whose VDPBF16PS runs at half the float32 FMA
// rate.
var sapphireRapidsOn = []int{143, 207, 173, 174, 167}

// defaultRules is the table: the first row that matches a CPU picks its
// default tier. Each tier is a choice per kind of product (TierProducts):
// which unit multiplies quantized weights, the float weights a model
// marks for bfloat16 (the vision towers' MLPs), and the other float
// weights and attention.
var defaultRules = []DefaultRule{
	{
		Name:   "Intel Sapphire Rapids and later, with AMX-BF16",
		Vendor: "GenuineIntel", Family: 6, Models: sapphireRapidsOn,
		Tier: TierAMXBF16,
		Why: "VDPBF16PS runs at half the float32 FMA rate, AMX tiles multiply the vision MLPs fastest " +
			"(one 448x448 image, Q8_0 LM + F16 mmproj, 2 threads: amx-bf16 5.5-6.4 s, avx512-vnni 6.7-7.0 s, avx512-bf16 8.4-9.2 s); " +
			"int8 stays on AVX-512 VNNI (amx int8 measured slower at 32 rows and end to end)",
	},
	{
		Name:   "Intel Sapphire Rapids and later, without AMX-BF16",
		Vendor: "GenuineIntel", Family: 6, Models: sapphireRapidsOn,
		// A client Rocket Lake (model 167 too) has no AVX512_BF16: the
		// general rows describe it.
		Needs: []string{"avx512_bf16"},
		Tier:  TierAVX512VNNI,
		Why:   "VDPBF16PS runs at half the float32 FMA rate (bf16-zmm 234 vs fma-zmm 461 GFLOPS, 2 threads): float weights stay float32",
	},
	{
		Name:   "other Intel CPUs with AVX512_BF16",
		Vendor: "GenuineIntel", Needs: []string{"avx512_bf16"},
		Tier: TierAVX512VNNI,
		Why:  "every Intel bfloat16 unit measured runs VDPBF16PS at half the float32 FMA rate: float weights stay float32",
	},
	{
		Name:   "AMD Zen 4",
		Vendor: "AuthenticAMD", Family: 25,
		Tier: TierAVX512BF16,
		Why:  "VDPBF16PS at 2x the float32 FMA rate (bf16-zmm 466 vs fma-zmm 233 GFLOPS, 2 threads)",
	},
	{
		Name:   "AMD Zen 5",
		Vendor: "AuthenticAMD", Family: 26,
		Tier: TierAVX512BF16,
		Why:  "VDPBF16PS at 1.8x the float32 FMA rate (bf16-zmm 712 vs fma-zmm 394 GFLOPS, 2 threads)",
	},
	{Name: "any CPU with AVX512_BF16", Tier: TierAVX512BF16,
		Why: "the best tier it has: the vision MLPs in bfloat16, int8 on VNNI"},
	{Name: "any CPU with AVX-512 VNNI", Tier: TierAVX512VNNI,
		Why: "the best tier it has: int8 on AVX-512 VNNI"},
	{Name: "any CPU with AVX-VNNI", Tier: TierAVXVNNI,
		Why: "the best tier it has: int8 on AVX-VNNI"},
	{Name: "any CPU with AVX2, FMA and F16C", Tier: TierAVX2Int8,
		Why: "the best tier it has: int8 products in AVX2"},
	// ARM. Speed could not be measured on ARM hardware yet: the rows
	// follow the instructions' published rates (docs/kernels.md).
	{
		Name:   "Arm Neoverse V1, V2, V3 and N2 (Graviton3/4, Google Axion, NVIDIA Grace)",
		Vendor: "ARM", Family: implARM, Models: []int{partNeoverseV1, partNeoverseV2, partNeoverseV3, partNeoverseN2},
		Tier: TierI8MM,
		Why:  "SMMLA does 32 int8 multiply-adds an instruction, SDOT 16, both 4 a cycle on V1/V2 (LLVM's scheduling models)",
	},
	{
		Name:   "Arm Neoverse N1 (Graviton2, Ampere Altra and Altra Max)",
		Vendor: "ARM", Family: implARM, Models: []int{partNeoverseN1},
		Tier: TierNEONDotProd,
		Why:  "SDOT: 16 int8 multiply-adds an instruction, 2 a cycle (32 a cycle against FMLA's 8 float32); no I8MM",
	},
	{
		Name:   "Apple M2 and later (I8MM)",
		Vendor: "Apple", Family: implApple,
		Tier: TierI8MM,
		Why:  "SMMLA: twice SDOT's multiply-adds an instruction",
	},
	{
		Name:   "Apple M1",
		Vendor: "Apple", Family: implApple,
		Tier: TierNEONDotProd,
		Why:  "SDOT; no I8MM",
	},
	{Name: "any ARM CPU with I8MM", Tier: TierI8MM,
		Why: "the best tier it has: int8 products by SMMLA"},
	{Name: "any ARM CPU with the dot product", Tier: TierNEONDotProd,
		Why: "the best tier it has: int8 products by SDOT"},
	{Name: "any ARM CPU with NEON", Tier: TierNEON,
		Why: "the best tier it has: float32 products by FMLA"},
	{Name: "any other CPU", Tier: TierGeneric,
		Why: "portable Go"},
}

// DefaultRules returns the table DefaultFor reads, first row first.
func DefaultRules() []DefaultRule { return slices.Clone(defaultRules) }

// DefaultFor returns the default tier of CPU c and the table row that
// picked it.
func DefaultFor(c CPU) (Tier, DefaultRule) {
	for _, r := range defaultRules {
		if r.Vendor != "" && r.Vendor != c.Vendor ||
			r.Family != 0 && r.Family != c.Family ||
			r.Models != nil && !slices.Contains(r.Models, c.Model) ||
			!c.Has(r.Needs...) || !c.Has(tierNeeds[r.Tier]...) {
			continue
		}
		return r.Tier, r
	}
	// Unreachable: the last row matches every CPU.
	return TierGeneric, defaultRules[len(defaultRules)-1]
}

// hostCPU is the identity of the CPU running this process.
var hostCPU = readHostCPU()

// HostCPU returns the identity of the CPU running this process.
func HostCPU() CPU {
	c := hostCPU
	c.Flags = slices.Clone(c.Flags)
	return c
}

// DefaultChoice returns the tier this CPU runs by default (VEMBED_CPU
// aside) and the row of the table that picked it.
func DefaultChoice() (Tier, DefaultRule) { return DefaultFor(hostCPU) }

// Products names the tier that computes each kind of product on a tier.
type Products struct {
	// Quantized is the tier of products by quantized weights (with at
	// least the integer row threshold of rows, on the integer tiers).
	Quantized Tier
	// Marked is the tier of products by the float weights a model marks
	// for bfloat16 (the vision towers' MLPs).
	Marked Tier
	// Float is the tier of products by the other float weights and of
	// attention.
	Float Tier
}

// String is "quantized weights: avx512-vnni; marked float weights
// (vision MLPs): amx-bf16; other float weights and attention: avx512".
func (p Products) String() string {
	return strings.Join([]string{
		"quantized weights: " + string(p.Quantized),
		"marked float weights (vision MLPs): " + string(p.Marked),
		"other float weights and attention: " + string(p.Float),
	}, "; ")
}

// TierProducts returns which tier computes each kind of product on tier t,
// and false if this CPU and build lack t.
func TierProducts(t Tier) (Products, bool) {
	for _, im := range tiers {
		if im.tier == t {
			return im.products, true
		}
	}
	return Products{}, false
}
