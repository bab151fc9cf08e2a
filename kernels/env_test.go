package kernels

import (
	"os"
	"os/exec"
	"testing"
)

// TestVEMBEDCPU re-runs this test binary with VEMBED_CPU set to every
// available tier and checks that the process starts on that tier; a bad
// name must stop the process with an error.
func TestVEMBEDCPU(t *testing.T) {
	if want := os.Getenv("VEMBED_CPU_WANT"); want != "" {
		if got := string(Active()); got != want {
			t.Fatalf("VEMBED_CPU=%s: active tier %s", want, got)
		}
		return
	}
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	for _, tier := range Available() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestVEMBEDCPU$")
		cmd.Env = append(os.Environ(), "VEMBED_CPU="+string(tier), "VEMBED_CPU_WANT="+string(tier))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("VEMBED_CPU=%s: %v\n%s", tier, err, out)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "VEMBED_CPU=no-such-tier")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("VEMBED_CPU=no-such-tier: process ran\n%s", out)
	}
}
