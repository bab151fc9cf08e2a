package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/kernels"
)

// TestBenchProfiles runs the tiny end-to-end benchmark with both profiles
// and checks that they are written and that the model ran on the default
// tier although the kernel measurements switched to the portable one.
func TestBenchProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	var out, errOut bytes.Buffer
	args := []string{"bench", "--types", "F32", "--m", "2", "--k", "32", "--n", "32",
		"--time", "1ms", "--rounds", "1", "--tiers", "generic", "--attn-tokens", "0",
		"--model", "--texts", "2", "--text-tokens", "20", "--images", "56",
		"--cpuprofile", cpu, "--memprofile", mem}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, p := range []string{cpu, mem} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v (size %v)", p, err, st)
		}
	}
	if want := "kernel tier " + string(kernels.Active()); !strings.Contains(errOut.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, errOut.String())
	}
}

func TestBenchProfileNeedsModel(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "--cpuprofile", filepath.Join(t.TempDir(), "p")}, &out, &errOut); code == 0 {
		t.Error("--cpuprofile without --model: exit 0, want an error")
	}
}
