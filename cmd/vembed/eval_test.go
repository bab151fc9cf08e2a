package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalCommand runs vembed eval on a small BEIR-layout dataset with the
// demo model: table and JSON agree, and a server run (--url) gives the
// same numbers.
func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(`{"_id":"a","text":"alpha document"}
{"_id":"b","text":"beta document"}
{"_id":"c","text":"gamma"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"_id":"1","text":"alpha"}
{"_id":"2","text":"beta"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte("query-id\tcorpus-id\tscore\n1\ta\t1\n2\tb\t2\n"), 0o644)
	cache := t.TempDir()
	run1 := func(args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"eval", "--dataset", dir, "--k", "1,3", "--cache-dir", cache}, args...), &out, &errb); code != 0 {
			t.Fatalf("eval %v: exit %d: %s", args, code, errb.String())
		}
		if !strings.Contains(strings.Join(args, " "), "--json") {
			if !strings.Contains(out.String(), "ndcg@1") || !strings.Contains(out.String(), "map@3") {
				t.Errorf("table: %s", out.String())
			}
			return nil
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("JSON: %v: %s", err, out.String())
		}
		return m
	}
	run1()
	local := run1("--json")
	url := startServer(t, serveOptions{})
	remote := run1("--json", "--url", url)
	if b1, _ := json.Marshal(local["average"]); string(b1) != mustJSON(remote["average"]) {
		t.Errorf("in-process %s, server %s", b1, mustJSON(remote["average"]))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestEvalSynthDataset: the synthetic dataset evaluates end to end in its
// three layouts (BEIR in JSONL and Parquet, the ViDoRe table) in one run.
func TestEvalSynthDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out, errb bytes.Buffer
	if code := run([]string{"synth", "--dataset", dir, "--docs", "6", "--queries", "4"}, &out, &errb); code != 0 {
		t.Fatalf("synth --dataset: exit %d: %s", code, errb.String())
	}
	paths := strings.Fields(out.String())
	if len(paths) != 3 {
		t.Fatalf("synth --dataset printed %q", out.String())
	}
	out.Reset()
	if code := run([]string{"eval", "--dataset", strings.Join(paths, ","), "--json", "--multivector", "--cache-dir", ""}, &out, &errb); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, errb.String())
	}
	var m struct {
		Datasets []struct {
			Queries int
			Failed  int
			Scores  map[string]float64
		}
		Average map[string]float64
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || len(m.Datasets) != 3 {
		t.Fatalf("eval: %v %s", err, out.String())
	}
	for _, d := range m.Datasets {
		if d.Queries != 4 || d.Failed != 0 || len(d.Scores) != 12 {
			t.Errorf("eval: %s", out.String())
		}
	}
	if want := (m.Datasets[0].Scores["ndcg@10"] + m.Datasets[1].Scores["ndcg@10"] + m.Datasets[2].Scores["ndcg@10"]) / 3; math.Abs(m.Average["ndcg@10"]-want) > 1e-12 {
		t.Errorf("average ndcg@10 %v, want %v", m.Average["ndcg@10"], want)
	}
}
