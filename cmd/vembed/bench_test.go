package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vembed/vembed/bench"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// TestBenchOutput runs a tiny benchmark and checks that the table and the
// closing JSON line carry a figure for every requested tier, type and size.
func TestBenchOutput(t *testing.T) {
	out := runOK(t, "bench", "--types", "F32,Q4_K", "--m", "7", "--k", "256", "--n", "32",
		"--time", "2ms", "--rounds", "1", "--tiers", "generic", "--attn-tokens", "70")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep bench.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, out)
	}
	if len(rep.GEMM) != 2 || len(rep.Attention) != 3 {
		t.Fatalf("report has %d GEMM and %d attention figures, want 2 and 3:\n%s", len(rep.GEMM), len(rep.Attention), out)
	}
	for _, g := range rep.GEMM {
		if g.Tier != "generic" || g.M != 7 || g.K != 256 || g.N != 32 || !(g.GFLOPS > 0) {
			t.Errorf("bad figure %+v", g)
		}
	}
	if !strings.Contains(out, "Q4_K") {
		t.Errorf("table lacks the Q4_K row:\n%s", out)
	}
	// The default tier of this CPU, the table row that chose it and the
	// tier of each kind of product, in the report and the table.
	want, row := kernels.DefaultChoice()
	p, _ := kernels.TierProducts(want)
	d := rep.Default
	if d.Tier != string(want) || d.Rule != row.Name || d.Why != row.Why || d.CPU != kernels.HostCPU().String() ||
		d.Quantized != string(p.Quantized) || d.Marked != string(p.Marked) || d.Float != string(p.Float) || d.Quantized == "" {
		t.Errorf("report's default %+v, want tier %s by row %q with products %v", d, want, row.Name, p)
	}
	for _, s := range []string{"default tier on this CPU", string(want), row.Name, "marked float weights (vision MLPs) on " + string(p.Marked)} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// TestBenchPeaks runs every available tier and checks that each figure
// names the peak of its tier's instructions, that the report holds that
// peak, and that it names the tier in use.
func TestBenchPeaks(t *testing.T) {
	out := runOK(t, "bench", "--types", "F16,Q8_0", "--m", "7", "--k", "256", "--n", "32",
		"--time", "2ms", "--rounds", "1", "--attn-tokens", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep bench.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, out)
	}
	if rep.Tier != string(kernels.Active()) || !strings.Contains(out, "kernel tier in use: "+rep.Tier) {
		t.Errorf("report names tier %q, active is %q:\n%s", rep.Tier, kernels.Active(), out)
	}
	tiers := map[string]bool{}
	for _, g := range rep.GEMM {
		tiers[g.Tier] = true
		typ, err := gguf.ParseType(g.Type)
		if err != nil {
			t.Fatal(err)
		}
		u, ok := kernels.TierPeak(kernels.Tier(g.Tier), typ)
		if !ok {
			continue
		}
		if g.Unit != string(u) || rep.Peaks[g.Unit] == nil {
			t.Errorf("%s %s: unit %q, want %q with its peak in the report (peaks %v)", g.Tier, g.Type, g.Unit, u, rep.Peaks)
		}
		if !(g.PctPeakWall > 0) {
			t.Errorf("%s %s: no percentage of the peak", g.Tier, g.Type)
		}
	}
	for _, tier := range kernels.Available() {
		if tier != kernels.TierReference && !tiers[string(tier)] {
			t.Errorf("tier %s not measured", tier)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--types", "NOPE"},
		{"bench", "--m", "0"},
		{"bench", "--tiers", "no-such-tier"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code == 0 {
			t.Errorf("%v: exit 0, want an error", args)
		}
	}
}
