package jpeg

import (
	"testing"

	"github.com/vembed/vembed/internal/objdump"
)

// TestColorNEONInstructions decodes the colour conversion, upsampling and
// IDCT NEON loops with the AArch64 objdump and checks that each holds the
// vector instructions of its arithmetic.
func TestColorNEONInstructions(t *testing.T) {
	if !useVec {
		t.Fatal("the colour loops do not take the NEON kernels")
	}
	fancy := []string{"uxtl", "uxtl2", "add", "ushr", "xtn", "xtn2", "st2"}
	objdump.CheckARMOps(t, "github.com/vembed/vembed/imageproc/jpeg", map[string][]string{
		"yccNEON":       {"uxtl", "uxtl2", "sxtl", "sxtl2", "sub", "mul", "mla", "add", "sshr", "sqxtn", "sqxtn2", "sqxtun", "sqxtun2", "st3"},
		"h2FancyNEON":   fancy,
		"h2v2FancyNEON": fancy,
		"idctIslowNEON": {"sxtl", "sxtl2", "mul", "add", "sub", "shl", "sshr", "abs", "umaxv", "trn1", "trn2", "sqxtn", "sqxtn2", "sqxtun"},
	})
}
