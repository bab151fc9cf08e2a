package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
)

// TestQwen35PlainDump runs vembed embed --dump on the qwen35 fixtures' plain
// llama.cpp LM (no vembed.recipe), causal and with qwen35.attention.causal
// = false added, and compares every text case's token ids (exactly) and
// final hidden rows (cosine >= 0.99999, the fixtures' text tolerance) to
// the goldens. It runs on the float32 tier, what VEMBED_CPU naming it does
// for a process: on a bfloat16 tier this tiny random decoder amplifies
// bfloat16 rounding far past that tolerance (model/qwen35's TestFixtures
// says by how much).
func TestQwen35PlainDump(t *testing.T) {
	dir := fixtures.Dir(t, "qwen35")
	var ix struct {
		LM    string
		Cases []struct {
			ID, Kind string
			Causal   bool
		}
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &ix)
	saved := kernels.Active()
	if err := kernels.Use(kernels.Float32Default()); err != nil {
		t.Fatal(err)
	}
	defer kernels.Use(saved)
	causalLM := filepath.Join(dir, ix.LM)
	bidirLM := filepath.Join(t.TempDir(), "bidirectional.gguf")
	rewriteKeys(t, causalLM, bidirLM, map[string]any{"qwen35.attention.causal": false})
	n := 0
	for _, c := range ix.Cases {
		if c.Kind != "text" {
			continue
		}
		n++
		t.Run(c.ID, func(t *testing.T) {
			var fc struct {
				Text        string
				IDs         []int32
				HiddenShape []int `json:"hidden_shape"`
			}
			fixtures.ReadJSON(t, filepath.Join(dir, "cases", c.ID, "case.json"), &fc)
			lm := causalLM
			if !c.Causal {
				lm = bidirLM
			}
			dump := t.TempDir()
			out := runOK(t, "embed", "--json", "--dump", dump, "--model", lm, "--text", fc.Text)
			var resp struct{ Embeddings [][]float32 }
			if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Embeddings) != 1 {
				t.Fatalf("embed output: %v (%d embeddings)", err, len(resp.Embeddings))
			}
			ids := readDump(t, dump, "input0.token_ids")
			if len(ids) != len(fc.IDs) {
				t.Fatalf("%d token ids, want %d", len(ids), len(fc.IDs))
			}
			for i, id := range fc.IDs {
				if ids[i] != float32(id) {
					t.Fatalf("token %d: id %v, want %d", i, ids[i], id)
				}
			}
			rows, width := fc.HiddenShape[0], fc.HiddenShape[1]
			got := readDump(t, dump, "input0.hidden_states")
			want := readDump(t, filepath.Join(dir, "cases", c.ID), "hidden")
			if len(got) != rows*width || len(want) != rows*width {
				t.Fatalf("hidden rows: %d and %d values, want %d×%d", len(got), len(want), rows, width)
			}
			for r := range rows {
				if cs := cosine(got[r*width:(r+1)*width], want[r*width:(r+1)*width]); cs < 0.99999 {
					t.Errorf("row %d: cosine %.9f to the golden, want >= 0.99999", r, cs)
				}
			}
			// The vector is the last row's state, L2-normalized.
			last := want[(rows-1)*width:]
			if cs := cosine(resp.Embeddings[0], last); cs < 0.99999 {
				t.Errorf("embedding: cosine %.9f to the golden last row, want >= 0.99999", cs)
			}
		})
	}
	if n == 0 {
		t.Fatal("the fixtures' index lists no text case")
	}
}

// TestQwen35PlainRefusals checks the plain Qwen3.5 LM's refusals through
// the CLI: a task (the base model was trained for none) and a multi-vector
// request without a projector.
func TestQwen35PlainRefusals(t *testing.T) {
	dir := fixtures.Dir(t, "qwen35")
	lm := filepath.Join(dir, "qwen35-a-lm.gguf")
	if _, err := os.Stat(lm); err != nil {
		t.Skipf("qwen35 fixture LM: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--task", "retrieval.query"}, "takes no task"},
		{[]string{"--multivector"}, "projector"},
	} {
		var out, errOut strings.Builder
		args := append([]string{"embed", "--model", lm, "--text", "a"}, tc.args...)
		if code := run(args, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
