package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAMXPeakProbes runs the AMX probes where the CPU has AMX, on operands
// chosen so that a wrong encoding, swapped operands or a lost product gives
// another sum, and checks row 0 of the first accumulator exactly. Without
// AMX it says so and skips; the encodings are then checked by the
// disassembly test alone.
func TestAMXPeakProbes(t *testing.T) {
	const n = 100
	ran := 0
	for _, c := range []struct {
		unit    PeakUnit
		a, b    []byte // four bytes repeated through the A and B rows
		float   bool
		perLane float64
	}{
		// Unsigned 200 by signed -3, 64 products an output each step.
		{PeakAMXInt8, []byte{200, 200, 200, 200}, []byte{253, 253, 253, 253}, false, n * 64 * 200 * -3},
		// bf16 pairs (1, 3) by (2, 0.5), 16 pairs an output each step.
		{PeakAMXBF16, []byte{0x80, 0x3F, 0x40, 0x40}, []byte{0x00, 0x40, 0x00, 0x3F}, true, n * 16 * 3.5},
	} {
		p, ok := peakProbes()[c.unit]
		if !ok {
			continue
		}
		ran++
		src := append(bytes.Repeat(c.a, 16), bytes.Repeat(c.b, 16)...)
		dst := make([]byte, 64)
		p.loop(n, &src[0], &dst[0])
		for l := 0; l < 16; l++ {
			raw := binary.LittleEndian.Uint32(dst[4*l:])
			got := float64(int32(raw))
			if c.float {
				got = float64(math.Float32frombits(raw))
			}
			if got != c.perLane {
				t.Errorf("%s lane %d: %v, want %v", c.unit, l, got, c.perLane)
			}
		}
	}
	if ran == 0 {
		t.Skip("no AMX on this CPU (or the OS refused the tile state): the AMX probes are not run here")
	}
}

// TestAMXProbeEncoding checks that the bytes of the AMX probes decode, by
// binutils' objdump, as the instructions their macros name, in order: the
// Go assembler has no AMX mnemonics, so a wrong byte would otherwise show
// only on AMX hardware. The functions' bytes are found through the test
// binary's Go symbol table (.gopclntab, which go test keeps when it strips
// the others). It skips where objdump is absent or too old to know AMX.
func TestAMXProbeEncoding(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("binutils' objdump is not installed: the AMX probes' bytes are not decoded here")
	}
	code := funcBytes(t, "peakAMXInt8", "peakAMXBF16")
	start := func(product string) []string {
		return []string{
			"ldtilecfg (%r10)", "tilezero %tmm0", "tilezero %tmm1", "tilezero %tmm2", "tilezero %tmm3",
			"tileloadd (%r10,%r11,1),%tmm4", "tileloadd (%r10,%r11,1),%tmm5",
			"tileloadd (%r10,%r11,1),%tmm6", "tileloadd (%r10,%r11,1),%tmm7",
			product + " %tmm6,%tmm4,%tmm0", product + " %tmm7,%tmm4,%tmm1",
			product + " %tmm6,%tmm5,%tmm2", product + " %tmm7,%tmm5,%tmm3",
			"tilestored %tmm0,(%rdi,%r11,1)", "tilerelease",
		}
	}
	for fn, want := range map[string][]string{
		"peakAMXInt8": start("tdpbusd"),
		"peakAMXBF16": start("tdpbf16ps"),
	} {
		got := tileInsns(t, objdump, fn, code[fn])
		if len(got) == 0 {
			t.Skipf("this objdump decodes no AMX instruction in %s (binutils before 2.34?)", fn)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s decodes as\n%s\nwant\n%s", fn, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// tileInsns decodes code, the machine code of function name, with binutils'
// objdump and returns its tile instructions (ldtilecfg, tile*, tdp*) in
// order as objdump prints them; bytes objdump cannot decode are an error.
// It skips the test where objdump fails.
func tileInsns(t *testing.T, objdump, name string, code []byte) []string {
	t.Helper()
	raw := filepath.Join(t.TempDir(), name+".bin")
	if err := os.WriteFile(raw, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "--no-show-raw-insn", raw).Output()
	if err != nil {
		t.Skipf("objdump -D: %v", err)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		m := objdumpInsn.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[1])
		if len(f) == 0 {
			continue
		}
		if f[0] == "(bad)" {
			t.Errorf("%s: objdump cannot decode %q", name, line)
		}
		if strings.HasPrefix(f[0], "tile") || strings.HasPrefix(f[0], "tdp") || f[0] == "ldtilecfg" {
			got = append(got, strings.Join(f, " "))
		}
	}
	return got
}
