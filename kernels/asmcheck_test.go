package kernels

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
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
	{"arm64", "kernelSDOTUnit4x16", []string{"sdot"}},
	{"arm64", "kernelSDOTMul2x16", []string{"sdot", "mul", "mla"}},
}

// objdumpFor returns the objdump that reads this architecture's machine
// code: the cross binutils' (Debian's binutils-aarch64-linux-gnu) or the
// native one on a machine of that architecture.
func objdumpFor(arch string) string {
	names := map[string][]string{
		"arm64": {"aarch64-linux-gnu-objdump"},
		"amd64": {"x86_64-linux-gnu-objdump"},
	}[arch]
	if runtime.GOARCH == arch {
		names = append(names, "objdump")
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// disasm caches the disassembly of this test binary by function.
var disasm = sync.OnceValues(func() (map[string][]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	tool := objdumpFor(runtime.GOARCH)
	if tool == "" {
		return nil, nil
	}
	cmd := exec.Command(tool, "-d", "--no-show-raw-insn", exe)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Keep only this package's functions: "addr <pkg.fn.abi0>:" opens one,
	// instruction lines are "addr:\tmnemonic\toperands".
	const pkg = "github.com/vembed/vembed/kernels."
	funcs := map[string][]string{}
	var cur string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " <"+pkg); i >= 0 && strings.HasSuffix(line, ">:") {
			cur = strings.TrimSuffix(strings.TrimSuffix(line[i+2+len(pkg):], ">:"), ".abi0")
			continue
		}
		if line == "" {
			cur = ""
			continue
		}
		if cur == "" {
			continue
		}
		if f := strings.Split(line, "\t"); len(f) >= 2 {
			funcs[cur] = append(funcs[cur], strings.TrimSpace(f[1]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return funcs, cmd.Wait()
})

// TestAsmInstructions disassembles this test binary and checks that every
// function of asmUses built for this architecture contains its
// instructions. Under emulation (qemu-user runs the binary, the host runs
// objdump) it checks the arm64 kernels from an x86 machine.
func TestAsmInstructions(t *testing.T) {
	var uses []asmUse
	for _, u := range asmUses {
		if u.arch == runtime.GOARCH {
			uses = append(uses, u)
		}
	}
	if len(uses) == 0 {
		t.Skipf("no checked assembly for %s", runtime.GOARCH)
	}
	funcs, err := disasm()
	if err != nil {
		t.Fatal(err)
	}
	if funcs == nil {
		t.Skipf("no objdump for %s (Debian: binutils-aarch64-linux-gnu)", runtime.GOARCH)
	}
	for _, u := range uses {
		body, ok := funcs[u.fn]
		if !ok {
			t.Errorf("%s: not in the binary's disassembly", u.fn)
			continue
		}
		for _, in := range u.insns {
			if !slices.Contains(body, in) {
				t.Errorf("%s: no %s among its %d instructions", u.fn, in, len(body))
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
