package kernels

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Recorded flags (as /proc/cpuinfo names them, those the tiers read).
const (
	flagsAVX2   = "avx avx2 fma f16c"
	flagsZen4   = flagsAVX2 + " avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16"
	flagsXeonAM = flagsAVX2 + " avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16 avx512_fp16 avx_vnni"
)

// TestDefaultFor pins the default tier of recorded CPU identities and the
// row of the table that picks it.
func TestDefaultFor(t *testing.T) {
	for _, c := range []struct {
		name string
		cpu  CPU
		tier Tier
		row  string
	}{
		// The Xeon of the AMX measurements, as its hypervisor reports it.
		{"Xeon with AMX (family 6 model 167)",
			CPU{"GenuineIntel", 6, 167, strings.Fields(flagsXeonAM + " amx_tile amx_int8 amx_bf16")},
			TierAMXBF16, "Intel Sapphire Rapids and later, with AMX-BF16"},
		{"Sapphire Rapids (family 6 model 143)",
			CPU{"GenuineIntel", 6, 143, strings.Fields(flagsXeonAM + " amx_tile amx_int8 amx_bf16")},
			TierAMXBF16, "Intel Sapphire Rapids and later, with AMX-BF16"},
		{"Granite Rapids (family 6 model 173)",
			CPU{"GenuineIntel", 6, 173, strings.Fields(flagsXeonAM + " amx_tile amx_int8 amx_bf16")},
			TierAMXBF16, "Intel Sapphire Rapids and later, with AMX-BF16"},
		// The same Xeon where the OS does not grant the tile state.
		{"Xeon without the AMX state (family 6 model 167)",
			CPU{"GenuineIntel", 6, 167, strings.Fields(flagsXeonAM)},
			TierAVX512VNNI, "Intel Sapphire Rapids and later, without AMX-BF16"},
		{"Sapphire Rapids with AMX int8 only",
			CPU{"GenuineIntel", 6, 143, strings.Fields(flagsXeonAM + " amx_tile amx_int8")},
			TierAVX512VNNI, "Intel Sapphire Rapids and later, without AMX-BF16"},
		{"Rocket Lake (family 6 model 167 on a client, no AVX512_BF16)",
			CPU{"GenuineIntel", 6, 167, strings.Fields(flagsAVX2 + " avx512f avx512bw avx512vl avx512dq avx512_vnni")},
			TierAVX512VNNI, "any CPU with AVX-512 VNNI"},
		{"Cooper Lake (family 6 model 85, AVX512_BF16, no AMX)",
			CPU{"GenuineIntel", 6, 85, strings.Fields(flagsZen4)},
			TierAVX512VNNI, "other Intel CPUs with AVX512_BF16"},
		{"Ice Lake server (family 6 model 106, no AMX)",
			CPU{"GenuineIntel", 6, 106, strings.Fields(flagsAVX2 + " avx512f avx512bw avx512vl avx512dq avx512_vnni")},
			TierAVX512VNNI, "any CPU with AVX-512 VNNI"},
		{"Skylake server (family 6 model 85, no VNNI)",
			CPU{"GenuineIntel", 6, 85, strings.Fields(flagsAVX2 + " avx512f avx512bw avx512vl avx512dq")},
			TierAVX2Int8, "any CPU with AVX2, FMA and F16C"},
		{"Alder Lake (family 6 model 151, AVX-VNNI)",
			CPU{"GenuineIntel", 6, 151, strings.Fields(flagsAVX2 + " avx_vnni")},
			TierAVXVNNI, "any CPU with AVX-VNNI"},
		{"Zen 4 (family 25 model 17)",
			CPU{"AuthenticAMD", 25, 17, strings.Fields(flagsZen4)},
			TierAVX512BF16, "AMD Zen 4"},
		{"Zen 5 (family 26 model 2)",
			CPU{"AuthenticAMD", 26, 2, strings.Fields(flagsZen4 + " avx_vnni")},
			TierAVX512BF16, "AMD Zen 5"},
		{"Zen 3 (family 25 model 1, AVX2 only)",
			CPU{"AuthenticAMD", 25, 1, strings.Fields(flagsAVX2)},
			TierAVX2Int8, "any CPU with AVX2, FMA and F16C"},
		{"a CPU without AVX2", CPU{"AuthenticAMD", 16, 2, []string{"avx"}},
			TierGeneric, "any other CPU"},
		{"an unknown CPU", CPU{}, TierGeneric, "any other CPU"},
	} {
		tier, row := DefaultFor(c.cpu)
		if tier != c.tier || row.Name != c.row {
			t.Errorf("%s (%v): default %s by row %q, want %s by row %q", c.name, c.cpu, tier, row.Name, c.tier, c.row)
		}
		if row.Tier != tier || row.Why == "" {
			t.Errorf("%s: row %+v", c.name, row)
		}
	}
}

// TestDefaultRules checks the table itself: every row picks a declared
// tier with stated needs and rounding, and the last row matches any CPU.
func TestDefaultRules(t *testing.T) {
	rules := DefaultRules()
	for _, r := range rules {
		if _, ok := tierNeeds[r.Tier]; !ok {
			t.Errorf("row %q: tier %s has no stated needs", r.Name, r.Tier)
		}
		if _, ok := TierRounding(r.Tier); !ok {
			t.Errorf("row %q: tier %s has no stated rounding", r.Name, r.Tier)
		}
	}
	last := rules[len(rules)-1]
	if last.Vendor != "" || last.Family != 0 || last.Models != nil || len(last.Needs) != 0 || len(tierNeeds[last.Tier]) != 0 {
		t.Errorf("the last row %+v does not match every CPU", last)
	}
	for _, tier := range declaredTiers(t) {
		if _, ok := tierNeeds[tier]; !ok {
			t.Errorf("tier %s is declared without its needs in tierNeeds", tier)
		}
	}
}

// TestDisplayFamilyModel decodes CPUID leaf 1 signatures of the CPUs the
// table names.
func TestDisplayFamilyModel(t *testing.T) {
	for _, c := range []struct {
		eax           uint32
		family, model int
	}{
		{0x000806F8, 6, 143}, // Sapphire Rapids
		{0x000A06A4, 6, 170}, // Meteor Lake
		{0x00A10F11, 25, 17}, // Zen 4 (EPYC 9004)
		{0x00B00F21, 26, 2},  // Zen 5
		{0x00A00F11, 25, 1},  // Zen 3 (EPYC 7003)
		{0x00000F29, 15, 2},  // Pentium 4: extended model applies, family 15
		{0x00000543, 5, 4},   // family 5: no extended model
	} {
		f, m := displayFamilyModel(c.eax, 0, 0, 0)
		if f != c.family || m != c.model {
			t.Errorf("signature %#x: family %d model %d, want %d %d", c.eax, f, m, c.family, c.model)
		}
	}
}

// TestHostDefault checks the running CPU: its flags name exactly the tiers
// this build offers (so the table sees what the tiers test), its default
// is the table's choice, and each tier's products are computed by tiers
// of the matching rounding.
func TestHostDefault(t *testing.T) {
	host := HostCPU()
	want, row := DefaultChoice()
	t.Logf("%v %v: default %s (row %q)", host, host.Flags, want, row.Name)
	for tier, needs := range tierNeeds {
		if got := slices.Contains(Available(), tier); got != host.Has(needs...) {
			t.Errorf("tier %s: available %v, but the host's flags say %v (needs %v)", tier, got, !got, needs)
		}
	}
	if os.Getenv("VEMBED_CPU") == "" && defaultTier().tier != want {
		t.Errorf("the default tier is %s, the table picks %s", defaultTier().tier, want)
	}
	for _, tier := range Available() {
		p, ok := TierProducts(tier)
		if !ok {
			t.Fatalf("%s: no products", tier)
		}
		r := tierRounding[tier]
		for _, by := range []Tier{p.Quantized, p.Marked, p.Float} {
			if !slices.Contains(Available(), by) {
				t.Errorf("%s: products %v name a tier not available", tier, p)
			}
		}
		if tierRounding[p.Quantized].Int8 != r.Int8 || tierRounding[p.Marked].BF16 != r.BF16 ||
			tierRounding[p.Float] != (Rounding{}) {
			t.Errorf("%s (rounding %+v): products %v", tier, r, p)
		}
	}
	if _, ok := TierProducts("no-such-tier"); ok {
		t.Error("an unknown tier has products")
	}
}
