package kernels

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/objdump"
)

// TestNEONLoopsInUse checks that the elementwise entry points run the NEON
// loops on arm64 (no portable Go loop left behind them), and decodes each
// loop's machine code (those, the panel packers' and the row decoders') to check that it holds the vector instructions of
// its arithmetic: a WORD with a wrong encoding decodes as another
// instruction or none.
func TestNEONLoopsInUse(t *testing.T) {
	same := func(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	for name, ok := range map[string]bool{
		"addVec":    same(addVec, addVecNEON),
		"ropeHeads": same(ropeHeads, ropeHeadsNEON),
		"rmsRows":   same(rmsRows, rmsNormRowsVec),
		"layerRows": same(layerRows, layerNormRowsVec),
	} {
		if !ok {
			t.Errorf("%s is not the NEON loop", name)
		}
	}

	exp := []string{"fcmge", "fmax", "fmin", "frintn", "fmls", "fmla", "fcvtzs", "shl", "and"}
	want := map[string][]string{
		"scaleMaxNEON":   {"fmul", "fmax", "fmaxv"},
		"expSumNEON":     append([]string{"fsub", "fadd", "faddp", "ext"}, exp...),
		"siluMulNEON":    append([]string{"fneg", "fdiv", "fmul"}, exp...),
		"quickGELUNEON":  append([]string{"fmul", "fdiv"}, exp...),
		"geluTanhNEON":   append([]string{"fmul", "fadd", "fdiv"}, exp...),
		"addNEON":        {"fadd"},
		"ropeNEON":       {"fmul", "fsub", "fadd"},
		"sumSqRows4NEON": {"fcvtl", "fcvtl2", "fsub", "fmul", "fadd"},
		"sumRows4NEON":   {"fcvtl", "fcvtl2", "fadd"},
		"rmsScaleNEON":   {"fcvtl", "fcvtl2", "fmul", "fcvtn", "fcvtn2"},
		"layerScaleNEON": {"fcvtl", "fcvtl2", "fsub", "fmul", "fcvtn", "fcvtn2", "fadd"},
		"pack8F32NEON":   {"trn1", "trn2"},
		"pack8F16NEON":   {"fcvtl", "fcvtl2", "trn1", "trn2"},
		"pack8BF16NEON":  {"zip1", "zip2", "trn1", "trn2"},
		"decodeQ8_0NEON": {"fcvtl", "sxtl", "sxtl2", "scvtf", "fmul"},
		"decodeNib4NEON": {"and", "ushr", "tbl", "sxtl", "sxtl2", "scvtf", "fmul"},
		// The integer tiers' byte decoders (gemm_int8_u8_arm64.s).
		"decodeQ4KU8NEON":    {"and", "ushr", "uaddlv"},
		"decodeQ6KU8NEON":    {"and", "ushr", "shl", "orr", "sub", "uaddlv"},
		"decodeQ5KU8NEON":    {"and", "ushr", "shl", "orr", "uaddlv"},
		"decodeQ3KU8NEON":    {"and", "ushr", "shl", "orr", "sub", "uaddlv"},
		"decodeNib4U8NEON":   {"and", "ushr", "dup", "sub", "uaddlv"},
		"decodeNib5U8NEON":   {"and", "ushr", "tbl", "cmtst", "orr", "sub", "uaddlv"},
		"decodeQ8_0S8NEON":   {"fcvtl", "eor", "uaddlv"},
		"decodeIQ4S8NEON":    {"and", "ushr", "tbl", "eor", "uaddlv"},
		"packChunks8NEON":    {"trn1", "trn2"},
		"decodeQ2KU8NEON":    {"and", "ushr", "uxtl", "uxtl2", "fcvtl", "uaddlv"},
		"q2kMinsNEON":        {"ushr", "uxtl", "uxtl2", "scvtf", "fneg", "fmul"},
		"widen32StridedNEON": {"sxtl", "sxtl2"},
		"halvesStridedNEON":  {"fcvtl", "fcvtl2"},
		"startsStridedNEON":  {"sshll", "sshll2"},
		"scaleBytesNEON":     {"sxtl", "sxtl2", "scvtf", "fmul"},
		"scaleAddBytesNEON":  {"sxtl", "sxtl2", "scvtf", "fmul", "fadd"},
		"bf16RowNEON":        {"ushr", "and", "add", "cmhi", "cmeq", "orr", "bit", "uzp1"},
		"bf16PanelPairsNEON": {"ushr", "and", "add", "cmhi", "cmeq", "orr", "bit", "sli"},
	}
	objdump.CheckARMOps(t, "github.com/vembed/vembed/kernels", want)
	// The norms round every product, as norm_amd64.s and the Go code do;
	// their sums add in double-precision lanes (the other kernels compute
	// in single-precision ones).
	norms := []string{"sumSqRows4NEON", "sumRows4NEON", "rmsScaleNEON", "layerScaleNEON"}
	lanes := map[string]string{"sumSqRows4NEON": ".2d", "sumRows4NEON": ".2d"}
	code := funcBytes(t, norms...)
	for _, n := range norms {
		insns := armInsns(t, n, code[n])
		have := objdump.VectorOps(insns)
		if have["fmla"] || have["fmls"] {
			t.Errorf("%s fuses a multiply-add, which the AVX2 loops do not", n)
		}
		l, ok := lanes[n]
		if !ok {
			continue
		}
		for _, in := range insns {
			op, args, _ := strings.Cut(in, " ")
			if strings.HasPrefix(op, "fadd") && objdump.VectorOps([]string{in})[op] && !strings.Contains(args, l) {
				t.Errorf("%s: %q is not in %s lanes", n, in, l)
			}
		}
	}
}
