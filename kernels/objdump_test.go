package kernels

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

// Helpers of the tests that decode the kernels' machine code with binutils'
// objdump, to check that an assembly loop holds the instructions its tier
// stands for (on x86 the AMX tiles, on arm64 the NEON, SDOT, SMMLA and
// BFMMLA loops).

// objdumpInsn matches a line of objdump -D --no-show-raw-insn: the
// instruction after the offset.
var objdumpInsn = regexp.MustCompile(`^\s*[0-9a-f]+:\s+(.*?)\s*$`)

// funcBytes returns the machine code of the package's functions names
// (their ABI0 bodies: assembly) in the running test binary.
func funcBytes(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skipf("the test binary is not ELF: %v", err)
	}
	defer f.Close()
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		t.Skip("the test binary has no .text or .gopclntab section")
	}
	pclnData, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pclnData, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	textData, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, name := range names {
		full := "github.com/vembed/vembed/kernels." + name
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

// armInsns decodes code, the bytes of function name, with binutils'
// AArch64 objdump and returns its instructions, one per entry, as objdump
// spells them ("fmla v3.4s, v21.4s, v0.4s"). It skips the test when that
// objdump is not installed (Debian's binutils-aarch64-linux-gnu), and
// fails on bytes it cannot decode.
func armInsns(t *testing.T, name string, code []byte) []string {
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
		m := objdumpInsn.FindStringSubmatch(line)
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
