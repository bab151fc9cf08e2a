//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/bench"
)

// embedChildEnv carries the arguments of "vembed embed" to the test binary
// started as an embed process.
const embedChildEnv = "VEMBED_EMBED_CHILD_ARGS"

// TestEmbedChild is the embed process of TestBenchRegress: "vembed" with
// the arguments in VEMBED_EMBED_CHILD_ARGS and those after the test
// binary's own. It is skipped otherwise.
func TestEmbedChild(t *testing.T) {
	if os.Getenv(embedChildEnv) == "" {
		t.Skip("the embed process of TestBenchRegress")
	}
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// TestBenchRegress runs "bench regress" with this test binary as both the
// binary and the baseline: the vectors must agree exactly, the figures
// must be there; and against a baseline file whose figures are far lower,
// the command must report the regression.
func TestBenchRegress(t *testing.T) {
	dir := t.TempDir()
	mf := writeTestModel(t, dir)
	// A script that runs this test binary as "vembed".
	bin := filepath.Join(dir, "vembed.sh")
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q -test.run='^TestEmbedChild$' -- \"$@\"\n", embedChildEnv, os.Args[0])
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	common := []string{"--lm", mf.model, "--mmproj", mf.mmproj, "--binary", bin, "--rounds", "2", "--texts", "3", "--text-tokens", "20", "--image", "56"}

	var out, errb bytes.Buffer
	if err := runBenchRegress(append(common, "--against", bin, "--max-ratio", "1000"), &out, &errb); err != nil {
		t.Fatalf("bench regress: %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var rep bench.RegressReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("last line: %v\n%s", err, out.String())
	}
	if len(rep.Cases) != 2 || rep.Cases[0].Case != "image_56" || rep.Cases[1].Case != "text_3x20" {
		t.Fatalf("cases: %+v", rep.Cases)
	}
	for _, c := range rep.Cases {
		if c.WallS <= 0 || c.CPUS <= 0 || c.BaseWallS <= 0 || c.BaseCPUS <= 0 || c.CPURatio <= 0 {
			t.Errorf("%s: missing figures: %+v", c.Case, c)
		}
		// The same binary on the same inputs: the same vectors.
		if c.MinCosine < 1-1e-12 {
			t.Errorf("%s: min cosine %v between identical runs", c.Case, c.MinCosine)
		}
	}

	// The previous release's figures, as if it had been 100 times faster:
	// a regression, which the command reports as its error.
	fast := rep
	fast.Cases = append([]bench.RegressFigure(nil), rep.Cases...)
	for i := range fast.Cases {
		fast.Cases[i].WallS /= 100
		fast.Cases[i].CPUS /= 100
	}
	line, _ := json.Marshal(&fast)
	basePath := filepath.Join(dir, "previous.json")
	if err := os.WriteFile(basePath, append([]byte("table lines first\n"), line...), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := runBenchRegress(append(common, "--rounds", "1", "--baseline", basePath), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "regression") || !strings.Contains(err.Error(), "image_56") {
		t.Fatalf("against a 100x faster baseline: err %v\n%s", err, out.String())
	}

	for _, bad := range [][]string{
		{"--lm", mf.model, "--mmproj", mf.mmproj},                                           // no baseline
		{"--lm", mf.model, "--mmproj", mf.mmproj, "--against", bin, "--baseline", basePath}, // both
		{"--mmproj", mf.mmproj, "--against", bin},                                           // no LM
		{"--lm", mf.model, "--mmproj", mf.mmproj, "--against", bin, "--max-ratio", "0.5"},
	} {
		if err := runBenchRegress(bad, &out, &errb); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if err := runBenchRegress(append(common, "--baseline", filepath.Join(dir, "none.json")), &out, &errb); err == nil {
		t.Error("a missing baseline file: no error")
	}
}
