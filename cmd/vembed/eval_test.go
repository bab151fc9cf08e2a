package main

import (
	"bytes"
	"encoding/json"
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
	run1 := func(args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"eval", "--dataset", dir, "--k", "1,3"}, args...), &out, &errb); code != 0 {
			t.Fatalf("eval %v: exit %d: %s", args, code, errb.String())
		}
		if !strings.Contains(strings.Join(args, " "), "--json") {
			if !strings.Contains(out.String(), "ndcg@1") {
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

// TestEvalSynthDataset: the synthetic dataset evaluates end to end in both
// its layouts (BEIR and the ViDoRe Parquet table).
func TestEvalSynthDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out, errb bytes.Buffer
	if code := run([]string{"synth", "--dataset", dir, "--docs", "6", "--queries", "4"}, &out, &errb); code != 0 {
		t.Fatalf("synth --dataset: exit %d: %s", code, errb.String())
	}
	for _, ds := range []string{dir, filepath.Join(dir, "vidore", "test.parquet")} {
		out.Reset()
		if code := run([]string{"eval", "--dataset", ds, "--json"}, &out, &errb); code != 0 {
			t.Fatalf("eval %s: exit %d: %s", ds, code, errb.String())
		}
		var m struct {
			Datasets []struct {
				Queries int
				Failed  int
			}
		}
		if err := json.Unmarshal(out.Bytes(), &m); err != nil || len(m.Datasets) != 1 || m.Datasets[0].Queries != 4 || m.Datasets[0].Failed != 0 {
			t.Errorf("eval %s: %v %s", ds, err, out.String())
		}
	}
}
