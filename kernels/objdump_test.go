package kernels

import (
	"testing"

	"github.com/vembed/vembed/internal/objdump"
)

// Helpers of the tests that decode the kernels' machine code with binutils'
// objdump (internal/objdump), to check that an assembly loop holds the
// instructions its tier stands for (on x86 the AMX tiles, on arm64 the
// NEON, SDOT, SMMLA and BFMMLA loops).

// objdumpInsn matches a line of objdump -D --no-show-raw-insn: the
// instruction after the offset.
var objdumpInsn = objdump.InsnLine

// funcBytes returns the machine code of the package's functions names
// (their ABI0 bodies: assembly) in the running test binary.
func funcBytes(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	return objdump.FuncBytes(t, "github.com/vembed/vembed/kernels", names...)
}

// armInsns decodes code, the bytes of function name, with the AArch64
// objdump (objdump.ARMInsns).
func armInsns(t *testing.T, name string, code []byte) []string {
	t.Helper()
	return objdump.ARMInsns(t, name, code)
}
