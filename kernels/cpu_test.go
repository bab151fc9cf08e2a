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

	// ARM: the Features line of /proc/cpuinfo, the flags the tiers read.
	flagsN1 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs"
	flagsV1 = flagsN1 + " sha3 sm3 sm4 asimdfhm dit uscat ilrcpc flagm sve sha512 paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng"
	flagsM1 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp flagm2 frint"
	flagsM2 = flagsM1 + " i8mm bf16 bti ecv"
)

// Recorded CPU identities, by vendor.
func intel(model int, flags string) CPU { return CPU{"GenuineIntel", 6, model, strings.Fields(flags)} }
func amd(family, model int, flags string) CPU {
	return CPU{"AuthenticAMD", family, model, strings.Fields(flags)}
}
func arm(impl, part int, flags string) CPU { return armCPU(impl, part, strings.Fields(flags)) }

// TestDefaultFor pins the default tier of recorded CPU identities and the
// row of the table that picks it.
func TestDefaultFor(t *testing.T) {
	const amx = " amx_tile amx_int8 amx_bf16"
	type named struct {
		name string
		cpu  CPU
	}
	for _, c := range []struct {
		tier Tier
		row  string
		cpus []named
	}{
		{TierAMXBF16, "Intel Sapphire Rapids and later, with AMX-BF16", []named{
			// The Xeon of the AMX measurements, as its hypervisor reports it.
			{"Xeon with AMX (family 6 model 167)", intel(167, flagsXeonAM+amx)},
			{"Sapphire Rapids (family 6 model 143)", intel(143, flagsXeonAM+amx)},
			{"Granite Rapids (family 6 model 173)", intel(173, flagsXeonAM+amx)},
		}},
		{TierAVX512VNNI, "Intel Sapphire Rapids and later, without AMX-BF16", []named{
			// The same Xeon where the OS does not grant the tile state.
			{"Xeon without the AMX state (family 6 model 167)", intel(167, flagsXeonAM)},
			{"Sapphire Rapids with AMX int8 only", intel(143, flagsXeonAM+" amx_tile amx_int8")},
		}},
		{TierAVX512VNNI, "any CPU with AVX-512 VNNI", []named{
			{"Rocket Lake (family 6 model 167 on a client, no AVX512_BF16)", intel(167, flagsAVX2+" avx512f avx512bw avx512vl avx512dq avx512_vnni")},
			{"Ice Lake server (family 6 model 106, no AMX)", intel(106, flagsAVX2+" avx512f avx512bw avx512vl avx512dq avx512_vnni")},
		}},
		{TierAVX512VNNI, "other Intel CPUs with AVX512_BF16", []named{
			{"Cooper Lake (family 6 model 85, AVX512_BF16, no AMX)", intel(85, flagsZen4)},
		}},
		{TierAVXVNNI, "any CPU with AVX-VNNI", []named{
			{"Alder Lake (family 6 model 151, AVX-VNNI)", intel(151, flagsAVX2+" avx_vnni")},
		}},
		{TierAVX512BF16, "AMD Zen 4", []named{{"Zen 4 (family 25 model 17)", amd(25, 17, flagsZen4)}}},
		{TierAVX512BF16, "AMD Zen 5", []named{{"Zen 5 (family 26 model 2)", amd(26, 2, flagsZen4+" avx_vnni")}}},
		{TierAVX2Int8, "any CPU with AVX2, FMA and F16C", []named{
			{"Skylake server (family 6 model 85, no VNNI)", intel(85, flagsAVX2+" avx512f avx512bw avx512vl avx512dq")},
			{"Zen 3 (family 25 model 1, AVX2 only)", amd(25, 1, flagsAVX2)},
		}},
		{TierNEONDotProd, "Arm Neoverse N1 (Graviton2, Ampere Altra and Altra Max)", []named{
			{"Graviton2 (Neoverse N1)", arm(0x41, 0xd0c, flagsN1)},
			// Ampere Altra's cores are Neoverse N1s: the MIDR names Arm.
			{"Ampere Altra (Neoverse N1)", arm(0x41, 0xd0c, flagsN1)},
		}},
		{TierI8MM, "Arm Neoverse V1, V2, V3 and N2 (Graviton3/4, Google Axion, NVIDIA Grace)", []named{
			{"Graviton3 (Neoverse V1)", arm(0x41, 0xd40, flagsV1)},
			{"Graviton4 (Neoverse V2)", arm(0x41, 0xd4f, flagsV1)},
		}},
		{TierNEONDotProd, "Apple M1", []named{
			{"Apple M1 on macOS", arm(0x61, 0, flagsM1)},
			{"Apple M1 Firestorm on Linux", arm(0x61, 0x23, flagsM1)},
		}},
		{TierI8MM, "Apple M2 and later (I8MM)", []named{
			{"Apple M2 on macOS", arm(0x61, 0, flagsM2)},
			{"Apple M4 on macOS", arm(0x61, 0, flagsM2)},
		}},
		{TierI8MM, "any ARM CPU with I8MM", []named{{"AmpereOne (implementer 0xc0, I8MM)", arm(0xc0, 0xac3, flagsV1)}}},
		{TierNEONDotProd, "any ARM CPU with the dot product", []named{
			{"an ARM CPU that the OS does not name (qemu -cpu cortex-a76)", arm(0, 0, "asimd asimddp")},
		}},
		{TierNEON, "any ARM CPU with NEON", []named{{"Cortex-A72 (Raspberry Pi 4, no dot product)", arm(0x41, 0xd08, "fp asimd crc32")}}},
		{TierGeneric, "any other CPU", []named{
			{"a CPU without AVX2", amd(16, 2, "avx")},
			{"an unknown CPU", CPU{}},
		}},
	} {
		for _, n := range c.cpus {
			tier, row := DefaultFor(n.cpu)
			if tier != c.tier || row.Name != c.row {
				t.Errorf("%s (%v): default %s by row %q, want %s by row %q", n.name, n.cpu, tier, row.Name, c.tier, c.row)
			}
			if row.Tier != tier || row.Why == "" {
				t.Errorf("%s: row %+v", n.name, row)
			}
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

// TestParseCPUInfoARM reads the identity of the first processor of
// arm64 /proc/cpuinfo texts, and nothing from an x86 one.
func TestParseCPUInfoARM(t *testing.T) {
	graviton2 := "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: " + flagsN1 +
		"\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n" +
		"processor\t: 1\nCPU implementer\t: 0x61\nCPU part\t: 0x23\n"
	if impl, part, ok := parseCPUInfoARM(graviton2); !ok || impl != 0x41 || part != 0xd0c {
		t.Errorf("Graviton2: %#x %#x %v", impl, part, ok)
	}
	if c := armCPU(0x41, 0xd0c, nil); c.String() != "ARM implementer 0x41 part 0xd0c" {
		t.Errorf("String: %q", c)
	}
	for _, text := range []string{
		"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n",
		"CPU implementer\t: 0x41\n",
		"CPU implementer\t: banana\nCPU part\t: 0xd0c\n",
		"",
	} {
		if impl, part, ok := parseCPUInfoARM(text); ok {
			t.Errorf("%q: read %#x %#x", text, impl, part)
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

// FuzzParseCPUInfoARM feeds arbitrary texts to the /proc/cpuinfo reader:
// it must not fail, and what it reads must be a pair of 32-bit values.
func FuzzParseCPUInfoARM(f *testing.F) {
	f.Add("CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n")
	f.Add("CPU part: 0x1\nCPU implementer: 077\n")
	f.Add("CPU implementer : -1\nCPU part : 99999999999\n")
	f.Fuzz(func(t *testing.T, text string) {
		impl, part, ok := parseCPUInfoARM(text)
		if ok && (impl < 0 || part < 0 || impl > 1<<31 || part > 1<<31) {
			t.Errorf("read %d %d", impl, part)
		}
	})
}
