package kernels

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// asmUse names an assembly function of this package and the instructions
// (objdump's mnemonics) its inner loop must execute: a tier whose kernel
// fell back to generic code, or lost its instruction in an edit, fails
// TestAsmInstructions.
type asmUse struct {
	arch  string // GOARCH the function is built for
	fn    string // the Go name, as in the TEXT line
	insns []string
}

// asmUses lists the checked functions. Add a row for every assembly loop
// that a tier relies on.
var asmUses = []asmUse{
	{"arm64", "kernel6x16NEON", []string{"fmla", "ld1r"}},
	{"arm64", "kernelBF16x6x16NEON", []string{"bfdot", "ld1r"}},
	{"arm64", "quantizeU8NEON", []string{"umaxv", "fcvtns", "uzp1"}},
	{"arm64", "quantizeU8StridedNEON", []string{"umaxv", "fcvtns", "uzp1"}},
	{"arm64", "peakFMLA", []string{"fmla"}},
	{"arm64", "peakSDOT", []string{"sdot"}},
	{"arm64", "peakSMMLA", []string{"smmla"}},
	{"arm64", "peakBFDOT", []string{"bfdot"}},
	{"arm64", "peakBFMMLA", []string{"bfmmla"}},
	{"arm64", "kernelSDOTUnit4x16", []string{"sdot"}},
	{"arm64", "kernelSDOTMul2x16", []string{"sdot", "mul", "mla"}},
	{"arm64", "kernelSMMLAUnit4x16", []string{"smmla", "zip1", "zip2"}},
	{"arm64", "kernelSMMLAMul2x16", []string{"smmla", "mul", "mla", "dup"}},
}

// TestAsmInstructions decodes the machine code of every function of
// asmUses built for this architecture (objdump_test.go's helpers) and
// checks that it holds its instructions. Under emulation (qemu-user runs
// the arm64 test binary, the host runs the cross objdump) it checks the
// arm64 kernels from an x86 machine.
func TestAsmInstructions(t *testing.T) {
	var names []string
	for _, u := range asmUses {
		if u.arch == runtime.GOARCH {
			names = append(names, u.fn)
		}
	}
	if len(names) == 0 {
		t.Skipf("no checked assembly for %s", runtime.GOARCH)
	}
	code := funcBytes(t, names...)
	for _, u := range asmUses {
		if u.arch != runtime.GOARCH {
			continue
		}
		var mnemonics []string
		for _, in := range armInsns(t, u.fn, code[u.fn]) {
			mnemonics = append(mnemonics, strings.Fields(in)[0])
		}
		for _, in := range u.insns {
			if !slices.Contains(mnemonics, in) {
				t.Errorf("%s: no %s among its %d instructions", u.fn, in, len(mnemonics))
			}
		}
	}
}

// TestARM64TierList checks testdata/arm64-tiers, the list of tiers the
// emulated CI runs the arm64 tests under (VEMBED_CPU=each in turn), against
// the tiers the package declares for ARM: every tier that needs ASIMD.
func TestARM64TierList(t *testing.T) {
	b, err := os.ReadFile("testdata/arm64-tiers")
	if err != nil {
		t.Fatal(err)
	}
	var listed []Tier
	for _, l := range strings.Fields(string(b)) {
		listed = append(listed, Tier(l))
	}
	var want []Tier
	for _, tier := range AllTiers() {
		if slices.Contains(tierNeeds[tier], flagASIMD) {
			want = append(want, tier)
		}
	}
	want = append(want, TierGeneric)
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("testdata/arm64-tiers lists %v, the package's ARM tiers and generic are %v", listed, want)
	}
}
