package recipe

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/tokenizer"
)

// TestQwen3MultiVectorFixturePrompts builds the prompt of every qwen3vl-mv
// case (ColQwen3, Ops-ColQwen3, nemotron) with the real vocabulary and
// compares the token ids exactly, image pads expanded to the case's merged
// token count; and the image budget each recipe falls back to.
func TestQwen3MultiVectorFixturePrompts(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	f, err := gguf.Open(filepath.Join(filepath.Dir(dir), "tokenizer", "qwen25-vocab.gguf"))
	if err != nil {
		t.Skipf("the real vocabulary: %v", err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recipes := map[string]Recipe{
		"tomoro":   Qwen3MultiVector{familyColQwen3},
		"ops":      Qwen3MultiVector{familyOpsColQwen3},
		"nemotron": Qwen3MultiVector{familyNemotron},
	}
	var idx struct {
		Cases []struct{ ID string } `json:"cases"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &idx)
	if len(idx.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range idx.Cases {
		var cs struct {
			Model     string  `json:"model"`
			Kind      string  `json:"kind"`
			InputText string  `json:"input_text"`
			IDs       []int32 `json:"token_ids"`
			Images    []struct {
				NMerged int `json:"n_merged_tokens"`
			} `json:"images"`
		}
		fixtures.ReadJSON(t, filepath.Join(dir, "cases", c.ID, "case.json"), &cs)
		var parts []tokenizer.Part
		for _, im := range cs.Images {
			parts = append(parts, tokenizer.Part{ImageTokens: im.NMerged})
		}
		if cs.Kind != "image" {
			parts = append(parts, tokenizer.Part{Text: cs.InputText})
		}
		r := recipes[cs.Model]
		task, err := r.Task("")
		if err != nil {
			t.Fatal(err)
		}
		p, err := r.Prompt(tok, task, parts)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if !slices.Equal(p.IDs, cs.IDs) {
			t.Errorf("%s: ids %v\nwant %v", c.ID, p.IDs, cs.IDs)
		}
	}
	// A text page and a query refused with an image.
	for _, r := range recipes {
		task, _ := r.Task("retrieval.passage")
		p, err := r.Prompt(tok, task, []tokenizer.Part{{Text: "a page of text"}})
		if err != nil || len(p.IDs) < 5 {
			t.Errorf("%s: text page: %v", r.Name(), err)
		}
		task, _ = r.Task("retrieval.query")
		if _, err := r.Prompt(tok, task, []tokenizer.Part{{ImageTokens: 4}}); err == nil {
			t.Errorf("%s: a query with an image was accepted", r.Name())
		}
		if _, err := r.Task("code"); err == nil {
			t.Errorf("%s: task code accepted", r.Name())
		}
		c := r.Image(model.Info{})
		if c.PatchSize != 16 || c.Factor() != 32 || c.MinPixels != 65536 || c.MaxPixels != 1310720 || c.QwenVLUtils {
			t.Errorf("%s: default image config %+v", r.Name(), c)
		}
		if c := r.Image(model.Info{PatchSize: 16, MergeSize: 2, MinPixels: 1024, MaxPixels: 524288}); c.MinPixels != 1024 || c.MaxPixels != 524288 {
			t.Errorf("%s: the mmproj's budget is not used: %+v", r.Name(), c)
		}
	}
}

// TestNemotronRefusesCausalFiles checks that the nemotron recipe is not
// selected for a file that would run it causally or with the final norm.
func TestNemotronRefusesCausalFiles(t *testing.T) {
	for _, c := range []struct {
		kvs  []qwenlayout.KV
		want string
	}{
		{nil, "lacks " + model.KeyCausal},
		{[]qwenlayout.KV{{Key: model.KeyCausal, Value: false}}, "lacks " + model.KeyOutputNorm},
		{[]qwenlayout.KV{{Key: model.KeyCausal, Value: true}, {Key: model.KeyOutputNorm, Value: false}}, model.KeyCausal + " = true"},
		{[]qwenlayout.KV{{Key: model.KeyCausal, Value: false}, {Key: model.KeyOutputNorm, Value: true}}, model.KeyOutputNorm + " = true"},
		{[]qwenlayout.KV{{Key: model.KeyCausal, Value: false}, {Key: model.KeyOutputNorm, Value: false}}, ""},
	} {
		kvs := append([]qwenlayout.KV{{Key: "general.architecture", Value: "qwen3vl"}, {Key: Key, Value: NemotronName}}, c.kvs...)
		path := filepath.Join(t.TempDir(), "lm.gguf")
		if err := qwenlayout.WriteFile(path, &qwenlayout.Layout{KVs: kvs}, nil); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Select(f)
		f.Close()
		switch {
		case c.want == "" && (err != nil || r.Name() != NemotronName):
			t.Errorf("keys %v: %v", c.kvs, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("keys %v: err %v, want %q", c.kvs, err, c.want)
		}
	}
}
