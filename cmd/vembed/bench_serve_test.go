package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/bench"
	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/redistest"
	"github.com/vembed/vembed/synth"
)

// TestBenchServe runs the load benchmark's scenarios on the tiny model and
// checks that the cache levels hit where each scenario says they must.
func TestBenchServe(t *testing.T) {
	var out, errw bytes.Buffer
	if err := runBenchServe([]string{"--scenarios", "Q,I-0,I-50,I-50-text,repeat", "--requests", "8", "--clients", "1", "--image-sizes", "56,84", "--q-rounds", "3", "--json"}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	var rep struct {
		Rows []bench.ServeFigure `json:"bench_serve"`
	}
	line := out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:]
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	by := map[string]bench.ServeFigure{}
	for _, r := range rep.Rows {
		by[r.Scenario] = r
		if r.Errors != 0 || r.Requests == 0 || r.ReqPerSec <= 0 {
			t.Errorf("%s: %+v", r.Scenario, r)
		}
	}
	if q := by["Q 16 clients"]; !(q.CPUSeconds > 0 && q.CPURatio > 0 && by["Q sequential"].CPUSeconds > 0) || !strings.Contains(q.Note, "CPU time") {
		t.Errorf("Q without its CPU time figures: %+v", q)
	}
	if n := by["Q 16 clients"].Note; !strings.Contains(n, "median of 3 rounds") {
		t.Errorf("Q with --q-rounds 3: note %q", n)
	}
	// The sequential queries take a step each; the 16 simultaneous ones
	// share one (the engine's gather window), or a few on a loaded
	// machine whose clients arrive more than the window apart.
	if q1, q16 := by["Q sequential"].Steps, by["Q 16 clients"].Steps; q1 != 16 || q16 < 1 || q16 > 4 {
		t.Errorf("Q took %d steps one at a time and %d at once, want 16 and about 1", q1, q16)
	}
	// Q compares equal work: its two phases send queries of one length.
	perReq := func(r bench.ServeFigure) float64 { return r.TokPerSec / r.ReqPerSec }
	if a, b := perReq(by["Q sequential"]), perReq(by["Q 16 clients"]); math.Abs(a-b) > 2e-3*a {
		t.Errorf("Q phases differ in tokens per query: %.4g vs %.4g", a, b)
	}
	if h := by["I-0"].CacheHits; h["encoder"] != 0 || h["embedding"] != 0 {
		t.Errorf("I-0 hit a cache: %v", h)
	}
	if h := by["I-50"].CacheHits; h["embedding"] == 0 {
		t.Errorf("I-50 never hit the embedding cache: %v", h)
	}
	if h := by["I-50-text"].CacheHits; h["embedding"] != 0 || h["encoder"] == 0 {
		t.Errorf("I-50-text: only the encoder cache should hit: %v", h)
	}
	if h := by["repeat again"].CacheHits; h["embedding"] != 1 {
		t.Errorf("a repeated request missed the embedding cache: %v", h)
	}
}

// TestBenchServeReplicas drives two replicas sharing a Valkey/Redis cache
// through --url A,B: I-50's repeated images, sent to the other replica,
// are hits in the shared cache, and the report says how many.
func TestBenchServeReplicas(t *testing.T) {
	url, _ := redistest.Start(t)
	m := writeTestModel(t, t.TempDir())
	var urls []string
	for range 2 {
		cfg := m.config()
		cfg.CacheURL = url
		e, err := engine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		urls = append(urls, serveEngine(t, e).URL)
	}
	var out, errw bytes.Buffer
	if err := runBenchServe([]string{"--url", strings.Join(urls, ","), "--scenarios", "I-50", "--requests", "24", "--clients", "1", "--image-sizes", "56", "--json"}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	var rep struct {
		Rows []bench.ServeFigure `json:"bench_serve"`
	}
	line := out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:]
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	for _, r := range rep.Rows {
		if r.Scenario == "I-50" && (r.CacheHits["shared"] <= 0 || r.CrossReplica != r.CacheHits["shared"]) {
			t.Errorf("no cross-replica hits: %+v, %v", r.CacheHits, r.CrossReplica)
		}
	}
}

// TestBenchServeImages sends given image files as I-0's requests, each once.
func TestBenchServeImages(t *testing.T) {
	dir := t.TempDir()
	for i, size := range []int{56, 84, 70} {
		data, err := synth.Photo(size, i, "png")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("page-%d.png", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errw bytes.Buffer
	if err := runBenchServe([]string{"--scenarios", "I-0", "--images", dir, "--clients", "2", "--json"}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	var rep struct {
		Rows []bench.ServeFigure `json:"bench_serve"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &rep); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Requests != 3 || rep.Rows[0].Errors != 0 {
		t.Fatalf("I-0 of 3 files: %+v", rep.Rows)
	}
}
