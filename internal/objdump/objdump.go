// Package objdump reads the machine code of a test binary's assembly
// functions and decodes it with binutils' objdump, for the tests that
// check that an assembly loop holds the instructions its tier stands for
// (on x86 the AMX tiles, on arm64 the NEON, SDOT, SMMLA and BFMMLA loops,
// under qemu-user from an x86 machine).
package objdump

import (
	"debug/elf"
	"debug/gosym"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// InsnLine matches a line of objdump -D --no-show-raw-insn: the
// instruction after the offset.
var InsnLine = regexp.MustCompile(`^\s*[0-9a-f]+:\s+(.*?)\s*$`)

// FuncBytes returns the machine code of the functions names of package
// pkg (an import path; their ABI0 bodies: assembly) in the running test
// binary. It skips the test when the binary is not ELF.
func FuncBytes(t testing.TB, pkg string, names ...string) map[string][]byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tab, text := Symbols(t, exe)
	textData, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, name := range names {
		full := pkg + "." + name
		var fn *gosym.Func
		for i := range tab.Funcs {
			if tab.Funcs[i].Name == full || tab.Funcs[i].Name == full+".abi0" {
				fn = &tab.Funcs[i]
				break
			}
		}
		if fn == nil || fn.Entry < text.Addr || fn.End > text.Addr+uint64(len(textData)) {
			t.Fatalf("%s not found in the test binary's symbol table", full)
		}
		out[name] = textData[fn.Entry-text.Addr : fn.End-text.Addr]
	}
	return out
}

// Symbols returns the Go symbol table of the ELF binary exe and its .text
// section (open until the test ends). It skips the test when exe is not
// ELF or has neither.
func Symbols(t testing.TB, exe string) (*gosym.Table, *elf.Section) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Skipf("%s is not ELF: %v", exe, err)
	}
	t.Cleanup(func() { f.Close() })
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		t.Skipf("%s has no .text or .gopclntab section", exe)
	}
	data, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	return tab, text
}

// ARMInsns decodes code, the bytes of function name, with binutils'
// AArch64 objdump and returns its instructions, one per entry, as objdump
// spells them ("fmla v3.4s, v21.4s, v0.4s"). It skips the test when that
// objdump is not installed (Debian's binutils-aarch64-linux-gnu), and
// fails on bytes it cannot decode.
func ARMInsns(t testing.TB, name string, code []byte) []string {
	t.Helper()
	objdump, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		t.Skip("aarch64-linux-gnu-objdump is not installed: the arm64 kernels' bytes are not decoded here")
	}
	raw := filepath.Join(t.TempDir(), name+".bin")
	if err := os.WriteFile(raw, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "aarch64", "--no-show-raw-insn", raw).Output()
	if err != nil {
		t.Fatalf("objdump -D: %v", err)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		m := InsnLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		insn := strings.Join(strings.Fields(m[1]), " ")
		// Zero padding after the last instruction decodes as udf #0;
		// a word objdump does not know is printed as .inst.
		if strings.HasPrefix(insn, ".inst") {
			t.Errorf("%s: objdump cannot decode %q", name, line)
		}
		got = append(got, insn)
	}
	return got
}

// VectorOps returns the mnemonics of insns (ARMInsns' output) that work
// on vector arrangements (.16b, .8h, .4s, .2d operands) or are the
// across-lane and conversion instructions that name none.
func VectorOps(insns []string) map[string]bool {
	have := map[string]bool{}
	for _, in := range insns {
		op, args, _ := strings.Cut(in, " ")
		if strings.Contains(args, ".4s") || strings.Contains(args, ".2d") || strings.Contains(args, ".16b") || strings.Contains(args, ".8h") ||
			strings.HasPrefix(op, "fmaxv") || strings.HasPrefix(op, "fcvt") {
			have[op] = true
		}
	}
	return have
}

// CheckARMOps decodes each function of want (names in package pkg) and
// fails the test for every vector instruction of its list it lacks
// (VectorOps): a WORD with a wrong encoding decodes as another
// instruction or none, and a loop that lost its instruction in an edit
// shows here.
func CheckARMOps(t testing.TB, pkg string, want map[string][]string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	code := FuncBytes(t, pkg, names...)
	for _, n := range names {
		insns := ARMInsns(t, n, code[n])
		have := VectorOps(insns)
		for _, op := range want[n] {
			if !have[op] {
				t.Errorf("%s has no vector %s (decoded: %s)", n, op, strings.Join(insns, "; "))
			}
		}
	}
}
