package recipe

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/tokenizer"
)

// TestColQwenGMEFixturePrompts builds the prompt of every colqwen-gme case
// with the real Qwen2.5 vocabulary and compares the token ids exactly
// (image pads expanded to the case's merged token count), and ColQwen's
// no-prefix alternative with an empty QueryPrefix.
func TestColQwenGMEFixturePrompts(t *testing.T) {
	dir := fixtures.Dir(t, "colqwen-gme")
	tok := qwenVocab(t, dir)
	var idx struct {
		Cases []struct{ ID string } `json:"cases"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &idx)
	for _, c := range idx.Cases {
		var cs struct {
			Model       string  `json:"model"`
			Kind        string  `json:"kind"`
			InputText   string  `json:"input_text"`
			Instruction *string `json:"instruction"`
			IDs         []int32 `json:"token_ids"`
			Images      []struct {
				NMerged int `json:"n_merged_tokens"`
			} `json:"images"`
			Alternatives struct {
				NoPrefix struct {
					IDs []int32 `json:"token_ids"`
				} `json:"colpali_engine_0_3_13_no_prefix"`
			} `json:"alternatives"`
		}
		fixtures.ReadJSON(t, filepath.Join(dir, "cases", c.ID, "case.json"), &cs)
		var parts []tokenizer.Part
		for _, im := range cs.Images {
			parts = append(parts, tokenizer.Part{ImageTokens: im.NMerged})
		}
		if cs.Kind != "image" {
			parts = append(parts, tokenizer.Part{Text: cs.InputText})
		}
		var r Recipe = ColQwen{QueryPrefix: DefaultQueryPrefix}
		if cs.Model == "gme" {
			r = GME{}
		}
		task, err := r.Task("")
		if err != nil {
			t.Fatal(err)
		}
		if cs.Instruction != nil {
			task.Instruction = *cs.Instruction
		}
		p, err := r.Prompt(tok, task, parts)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if !slices.Equal(p.IDs, cs.IDs) {
			t.Errorf("%s: ids %v\nwant %v", c.ID, p.IDs, cs.IDs)
		}
		if r.Pooling(p).Kind != Last && cs.Model == "gme" {
			t.Errorf("%s: GME pools the last token", c.ID)
		}
		if want := cs.Alternatives.NoPrefix.IDs; want != nil {
			p, err := ColQwen{}.Prompt(tok, task, parts)
			if err != nil || !slices.Equal(p.IDs, want) {
				t.Errorf("%s: ids without prefix %v (%v), want %v", c.ID, p.IDs, err, want)
			}
		}
	}
}

// qwenVocab loads the real Qwen2.5 vocabulary of the tokenizer fixtures
// beside the fixture directory dir, or skips the test without it.
func qwenVocab(t *testing.T, dir string) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(filepath.Join(filepath.Dir(dir), "tokenizer", "qwen25-vocab.gguf"))
	if err != nil {
		t.Skipf("the real vocabulary: %v", err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
