package kernels

import (
	"runtime"
	"strings"
	"testing"
)

// TestFusedBuildNamed checks the probe of fused multiply-adds against
// what the build is known to do, and that Arithmetic says so: on amd64
// the compiler fuses from GOAMD64=v3 (wantFuse, by build tag), on arm64
// always.
func TestFusedBuildNamed(t *testing.T) {
	switch runtime.GOARCH {
	case "amd64":
		if goFuses != wantFuseAMD64 {
			t.Errorf("the probe says fused %v; this amd64 build level fuses: %v", goFuses, wantFuseAMD64)
		}
	case "arm64":
		if !goFuses {
			t.Error("the probe finds no fused multiply-add on arm64")
		}
	}
	if got := strings.HasSuffix(Arithmetic(), "+fma"); got != goFuses {
		t.Errorf("Arithmetic() = %q for a build that fuses: %v", Arithmetic(), goFuses)
	}
}
