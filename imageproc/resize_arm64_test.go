package imageproc

import (
	"testing"

	"github.com/vembed/vembed/internal/objdump"
)

// TestResizeNEONInstructions decodes the resampling passes' NEON loops
// with the AArch64 objdump and checks that each holds the vector
// instructions of its arithmetic.
func TestResizeNEONInstructions(t *testing.T) {
	if !useVec {
		t.Fatal("the resampling passes do not take the NEON loops")
	}
	objdump.CheckARMOps(t, "github.com/vembed/vembed/imageproc", map[string][]string{
		"vertAccNEON": {"uxtl", "uxtl2", "mla"},
		"splitNEON":   {"ld3", "uxtl", "uxtl2"},
		"horizNEON":   {"mla", "addp", "sshr", "sqxtn", "sqxtun"},
	})
}
