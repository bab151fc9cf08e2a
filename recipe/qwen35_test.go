package recipe

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/tokenizer"
)

// selectQwen35 writes a qwen35 LM file of the given keys and selects its
// recipe.
func selectQwen35(t *testing.T, kvs ...qwenlayout.KV) (Recipe, error) {
	t.Helper()
	return selectKVs(t, append([]qwenlayout.KV{{Key: "general.architecture", Value: "qwen35"}}, kvs...)...)
}

// selectKVs writes an LM file of exactly the given keys and selects its
// recipe.
func selectKVs(t *testing.T, kvs ...qwenlayout.KV) (Recipe, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lm.gguf")
	if err := qwenlayout.WriteFile(path, &qwenlayout.Layout{KVs: kvs}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Select(f)
}

// TestQwen35Recipes: the two Qwen3.5 retrievers' prompts (a query as the
// template makes it, a page as ColQwen3_5Processor's), the file keys they
// need or read, and the rows a page keeps.
func TestQwen35Recipes(t *testing.T) {
	tok := smallTokenizer(t, "qwen2")
	ids := func(s string, images ...int) *tokenizer.Prompt {
		p, err := tok.RawPrompt(s, images)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bidir := qwenlayout.KV{Key: qwenlayout.Qwen35CausalKey, Value: false}
	for _, name := range []string{ColQwen35Name, ColVecName} {
		if _, err := selectQwen35(t, qwenlayout.KV{Key: Key, Value: name}); err == nil || !strings.Contains(err.Error(), qwenlayout.Qwen35CausalKey) {
			t.Errorf("%s without the bidirectional key: %v", name, err)
		}
		if _, err := selectQwen35(t, qwenlayout.KV{Key: Key, Value: name}, qwenlayout.KV{Key: qwenlayout.Qwen35CausalKey, Value: true}); err == nil {
			t.Errorf("%s selected for a causal file", name)
		}
		for _, bad := range []qwenlayout.KV{{Key: QueryTemplateKey, Value: "no placeholder"}, {Key: RowsKey, Value: "some"}} {
			if _, err := selectQwen35(t, qwenlayout.KV{Key: Key, Value: name}, bidir, bad); err == nil {
				t.Errorf("%s selected with %s = %q", name, bad.Key, bad.Value)
			}
		}
		r, err := selectQwen35(t, qwenlayout.KV{Key: Key, Value: name}, bidir)
		if err != nil {
			t.Fatal(err)
		}
		task, _ := r.Task("")
		q, err := r.Prompt(tok, task, []tokenizer.Part{{Text: " where is the total? "}})
		if err != nil || !slices.Equal(q.IDs, ids(" where is the total? "+strings.Repeat("<|endoftext|>", 10)).IDs) {
			t.Errorf("%s: query %v (%v)", name, q, err)
		}
		p, err := r.Prompt(tok, task, []tokenizer.Part{{ImageTokens: 6}})
		want := ids("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe the image.<|im_end|><|endoftext|>", 6)
		if err != nil || !slices.Equal(p.IDs, want.IDs) {
			t.Errorf("%s: page %v (%v)", name, p, err)
		}
		if k := r.(RowKeeper).KeepRows(p); k != nil {
			t.Errorf("%s: a page keeps rows %v by default, want all", name, k)
		}
		// The overrides: a query template, and a page's image rows only.
		r, err = selectQwen35(t, qwenlayout.KV{Key: Key, Value: name}, bidir,
			qwenlayout.KV{Key: QueryTemplateKey, Value: "Query: {query}"}, qwenlayout.KV{Key: RowsKey, Value: "image"})
		if err != nil {
			t.Fatal(err)
		}
		q, _ = r.Prompt(tok, task, []tokenizer.Part{{Text: "total"}})
		if !slices.Equal(q.IDs, ids("Query: total").IDs) || r.Version() == name+"/1" {
			t.Errorf("%s: templated query %v, version %q", name, q.IDs, r.Version())
		}
		p, _ = r.Prompt(tok, task, []tokenizer.Part{{ImageTokens: 6}})
		if k := r.(RowKeeper).KeepRows(p); len(k) != 1 || k[0] != [2]int{p.Images[0].First, p.Images[0].End} || k[0][1]-k[0][0] != 6 {
			t.Errorf("%s: a page keeps rows %v, want its 6 image tokens", name, k)
		}
		if k := r.(RowKeeper).KeepRows(q); k != nil {
			t.Errorf("%s: a query keeps rows %v, want all", name, k)
		}
	}
}

// TestColVecPresetRecipe: synth's ColVec1.1 preset names this recipe
// (synth keeps its own copy of the name: it cannot import recipe, whose
// tests import synth).
func TestColVecPresetRecipe(t *testing.T) {
	cfg, err := synth.Preset("colvec1.1-4b")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.LM.Extra, qwenlayout.KV{Key: Key, Value: ColVecName}) {
		t.Errorf("the colvec1.1-4b preset's keys %v do not name the %s recipe", cfg.LM.Extra, ColVecName)
	}
}

// FuzzQueryTemplate: a template CheckQueryTemplate accepts builds a query
// prompt that holds the query's tokens (or fails with an error, never a
// panic); one it refuses never reaches a recipe.
func FuzzQueryTemplate(f *testing.F) {
	for _, s := range []string{DefaultQueryTemplate, "Query: {query}", "{query}{query}", "no placeholder", "<|im_start|>{query}<|im_end|>", "\xff{query}", ""} {
		f.Add(s, "where is the total?")
	}
	tok := smallTokenizer(f, "qwen35")
	f.Fuzz(func(t *testing.T, template, query string) {
		if CheckQueryTemplate(template) != nil {
			return
		}
		r := Qwen3MultiVector{family: familyColVec, query: template}
		task, _ := r.Task("retrieval.query")
		p, err := r.Prompt(tok, task, []tokenizer.Part{{Text: query}})
		if err == nil && len(p.Images) != 0 {
			t.Fatalf("a text query's prompt holds %d images", len(p.Images))
		}
	})
}

// smallTokenizer is a tokenizer of synth's small vocabulary with the given
// pre-tokenizer.
func smallTokenizer(tb testing.TB, pre string) *tokenizer.Tokenizer {
	tb.Helper()
	v, err := synth.SmallVocab(230, 512)
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := tokenizer.New(tokenizer.Vocab{Model: "gpt2", Pre: pre, Tokens: v.Tokens, TokenTypes: v.Types, Merges: v.Merges,
		BOS: int(v.BOS), EOS: int(v.EOS), PAD: int(v.PAD)}, tokenizer.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}
