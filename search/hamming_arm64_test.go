package search

import (
	"testing"

	"github.com/vembed/vembed/internal/objdump"
)

// hammingAsm names the assembly Hamming kernel this CPU runs.
func hammingAsm() string { return "NEON" }

// TestHammingNEONInstructions decodes the NEON Hamming kernel with the
// AArch64 objdump and checks that it holds its vector instructions
// (TestHammingKernels checks its minima).
func TestHammingNEONInstructions(t *testing.T) {
	objdump.CheckARMOps(t, "github.com/vembed/vembed/search", map[string][]string{
		"hammingMinNEON": {"eor", "cnt", "add", "addp", "umin", "uxtl", "uxtl2"},
	})
}
