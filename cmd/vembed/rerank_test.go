package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// q3ItemsJSON turns a qwen3vl fixture case's items into an --input JSON
// list with image paths resolved from the case folder.
func q3ItemsJSON(t *testing.T, cdir string, items []map[string]string) string {
	for _, it := range items {
		if p, ok := it["image"]; ok {
			it["image"] = filepath.Join(cdir, p)
		}
	}
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestQwen3VLCommands runs every qwen3vl fixture case through the command
// forms: vembed embed --instruction --json and vembed rerank --json.
func TestQwen3VLCommands(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl")
	mm := filepath.Join(dir, "mmproj-qwen3vl-tiny-F32.gguf")
	cases, _ := filepath.Glob(filepath.Join(dir, "cases", "*", "case.json"))
	for _, path := range cases {
		cdir := filepath.Dir(path)
		var c struct {
			Kind        string              `json:"kind"`
			Instruction *string             `json:"instruction"`
			Input       []map[string]string `json:"input"`
			Query       []map[string]string `json:"query"`
			Document    []map[string]string `json:"document"`
			Embedding   []float32           `json:"embedding"`
			Score       float64             `json:"score"`
		}
		fixtures.ReadJSON(t, path, &c)
		var args []string
		if c.Kind == "rerank" {
			args = []string{"rerank", "--model", filepath.Join(dir, "qwen3vl-tiny-reranker-F32.gguf"), "--mmproj", mm, "--json",
				"--query", q3ItemsJSON(t, cdir, c.Query), "--document", q3ItemsJSON(t, cdir, c.Document), "--document", `"an unrelated text"`}
		} else {
			args = []string{"embed", "--model", filepath.Join(dir, "qwen3vl-tiny-lm-F32.gguf"), "--mmproj", mm, "--json", "--input", q3ItemsJSON(t, cdir, c.Input)}
		}
		if c.Instruction != nil {
			args = append(args, "--instruction", *c.Instruction)
		}
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", filepath.Base(cdir), code, errb.String())
		}
		var got struct {
			Scores     []float64   `json:"scores"`
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v in %q", filepath.Base(cdir), err, out.String())
		}
		if c.Kind == "rerank" {
			if len(got.Scores) != 2 || math.Abs(got.Scores[0]-c.Score) > 1e-4 {
				t.Errorf("%s: scores %v, want %v first", filepath.Base(cdir), got.Scores, c.Score)
			}
			continue
		}
		if len(got.Embeddings) != 1 || fixtures.Cosine(got.Embeddings[0], c.Embedding) < 0.99999 {
			t.Errorf("%s: %q", filepath.Base(cdir), out.String())
		}
	}
}
