package objdump

import (
	"slices"
	"testing"
)

// TestInsnLine reads the instruction out of objdump -D lines and skips
// the others.
func TestInsnLine(t *testing.T) {
	for line, want := range map[string]string{
		"   4:\tsdot\tv0.4s, v1.16b, v2.16b":   "sdot\tv0.4s, v1.16b, v2.16b",
		"  1c:   fmla v3.4s, v21.4s, v0.4s  ":  "fmla v3.4s, v21.4s, v0.4s",
		"0000000000000000 <.data>:":            "",
		"Disassembly of section .data:":        "",
		"  20:\t.inst\t0x4e80a400 ; undefined": ".inst\t0x4e80a400 ; undefined",
	} {
		got := ""
		if m := InsnLine.FindStringSubmatch(line); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: read %q, want %q", line, got, want)
		}
	}
}

// TestVectorOps keeps the instructions on vector arrangements and the
// across-lane and conversion ones, not the scalar ones.
func TestVectorOps(t *testing.T) {
	have := VectorOps([]string{
		"fmla v3.4s, v21.4s, v0.4s", "uaddlv h26, v2.16b", "fmaxv s0, v1.4s", "fcvtl v20.4s, v20.4h",
		"add x0, x0, #0x10", "fadd s0, s1, s2", "ld1 {v0.16b, v1.16b}, [x4], #32", "sqxtun v0.8b, v0.8h",
	})
	var ops []string
	for op := range have {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	if want := []string{"fcvtl", "fmaxv", "fmla", "ld1", "sqxtun", "uaddlv"}; !slices.Equal(ops, want) {
		t.Errorf("vector ops %v, want %v", ops, want)
	}
}
