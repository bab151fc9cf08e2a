package recipe

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	tok := qwenVocab(t, dir)
	recipes := map[string]Recipe{
		"tomoro":   Qwen3MultiVector{family: familyColQwen3},
		"ops":      Qwen3MultiVector{family: familyOpsColQwen3},
		"nemotron": Qwen3MultiVector{family: familyNemotron, trunc: DefaultNemotronTruncation},
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
		r, err := selectKVs(t, append([]qwenlayout.KV{{Key: "general.architecture", Value: "qwen3vl"}, {Key: Key, Value: NemotronName}}, c.kvs...)...)
		switch {
		case c.want == "" && (err != nil || r.Name() != NemotronName):
			t.Errorf("keys %v: %v", c.kvs, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("keys %v: err %v, want %q", c.kvs, err, c.want)
		}
	}
}

// TestNemotronTruncation: nemotron's prompts are cut as its processor
// cuts them, the first tokens of the whole chat-templated prompt kept: a
// query to q_max_length, a page to p_max_length less its image tokens
// less reserve_tokens_for_images (image tokens counted in); shorter ones
// are whole. A page whose images leave no room, or whose cut would reach
// its image, is refused. The other families cut nothing.
func TestNemotronTruncation(t *testing.T) {
	tok := smallTokenizer(t, "qwen2")
	// The whole prompts, as the reference's chat template renders them.
	query := func(q string) []int32 {
		p, err := tok.RawPrompt("<|im_start|>user\nQuery: query: "+q+"<|im_end|>\n<|im_start|>assistant\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.IDs
	}
	page := func(text string, images ...int) *tokenizer.Prompt {
		p, err := tok.RawPrompt("<|im_start|>user\n"+strings.Repeat("<|vision_start|><|image_pad|><|vision_end|>", len(images))+"passage: "+text+"<|im_end|>\n<|im_start|>assistant\n", images)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("a long query about many things ", 200)
	if n := len(query(long)); n < 600 {
		t.Fatalf("the long text is %d tokens", n)
	}
	r := Qwen3MultiVector{family: familyNemotron, trunc: DefaultNemotronTruncation}
	prompt := func(task string, parts ...tokenizer.Part) (*tokenizer.Prompt, error) {
		tk, err := r.Task(task)
		if err != nil {
			t.Fatal(err)
		}
		return r.Prompt(tok, tk, parts)
	}
	p, err := prompt("", tokenizer.Part{Text: long})
	if err != nil || !slices.Equal(p.IDs, query(long)[:512]) {
		t.Errorf("long query: %v, %d ids; want the whole prompt's first 512", err, len(p.IDs))
	}
	if p, err := prompt("", tokenizer.Part{Text: "short"}); err != nil || !slices.Equal(p.IDs, query("short")) {
		t.Errorf("short query: %v, %d ids, want all %d", err, len(p.IDs), len(query("short")))
	}
	for _, c := range []struct {
		name   string
		task   string
		images []int
		text   string
		keep   int // 0: refused
		want   string
	}{
		{"page over its bound", "", []int{1000}, long + long, 4096 - 1000 - 100, ""},
		{"page within its bound", "", []int{1000}, "a short page", -1, ""},
		{"two images count together", "", []int{600, 400}, long + long, 4096 - 1000 - 100, ""},
		{"text page", "retrieval.passage", nil, long + long + long, 4096 - 100, ""},
		{"no room", "", []int{4000}, "x", 0, "leave no room"},
		{"cut into the image", "", []int{2000}, long + long, 0, "would cut into its images"},
	} {
		var parts []tokenizer.Part
		for _, n := range c.images {
			parts = append(parts, tokenizer.Part{ImageTokens: n})
		}
		parts = append(parts, tokenizer.Part{Text: c.text})
		got, err := prompt(c.task, parts...)
		if c.keep == 0 {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
			}
			continue
		}
		whole := page(c.text, c.images...)
		want := whole.IDs
		if c.keep > 0 {
			if len(want) <= c.keep {
				t.Fatalf("%s: the whole page is %d tokens, not over %d", c.name, len(want), c.keep)
			}
			want = want[:c.keep]
		}
		if err != nil || !slices.Equal(got.IDs, want) || !slices.Equal(got.Images, whole.Images) {
			t.Errorf("%s: %v, %d ids, want %d (the whole page's first)", c.name, err, len(got.IDs), len(want))
		}
	}
	// The other families keep their whole prompts.
	for _, f := range []mvFamily{familyColQwen3, familyOpsColQwen3} {
		o := Qwen3MultiVector{family: f}
		tk, _ := o.Task("")
		if p, err := o.Prompt(tok, tk, []tokenizer.Part{{Text: long}}); err != nil || len(p.IDs) < 600 {
			t.Errorf("%s: %v, %d ids", o.Name(), err, len(p.IDs))
		}
	}
}

// TestNemotronTruncationKeys: the file's truncation keys set the bounds;
// absent, the processor's defaults apply; bounds no prompt could meet
// are refused when the recipe is selected.
func TestNemotronTruncationKeys(t *testing.T) {
	mode := []qwenlayout.KV{{Key: "general.architecture", Value: "qwen3vl"}, {Key: Key, Value: NemotronName},
		{Key: model.KeyCausal, Value: false}, {Key: model.KeyOutputNorm, Value: false}}
	for _, c := range []struct {
		kvs  []qwenlayout.KV
		want NemotronTruncation
		err  string
	}{
		{nil, DefaultNemotronTruncation, ""},
		{[]qwenlayout.KV{{Key: QueryMaxTokensKey, Value: uint32(64)}, {Key: PassageMaxTokensKey, Value: uint32(300)}, {Key: ImageReserveTokensKey, Value: uint32(0)}},
			NemotronTruncation{QueryMax: 64, PassageMax: 300}, ""},
		{[]qwenlayout.KV{{Key: QueryMaxTokensKey, Value: uint32(0)}}, NemotronTruncation{}, "query max length 0"},
		{[]qwenlayout.KV{{Key: PassageMaxTokensKey, Value: uint32(100)}}, NemotronTruncation{}, "reserve for images 100"},
		{[]qwenlayout.KV{{Key: PassageMaxTokensKey, Value: uint32(1 << 30)}}, NemotronTruncation{}, "beyond any prompt"},
		{[]qwenlayout.KV{{Key: QueryMaxTokensKey, Value: "512"}}, NemotronTruncation{}, QueryMaxTokensKey},
	} {
		r, err := selectKVs(t, append(slices.Clip(mode), c.kvs...)...)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("keys %v: %v, want an error with %q", c.kvs, err, c.err)
			}
		case err != nil:
			t.Errorf("keys %v: %v", c.kvs, err)
		case r.(Qwen3MultiVector).trunc != c.want:
			t.Errorf("keys %v: %+v, want %+v", c.kvs, r.(Qwen3MultiVector).trunc, c.want)
		}
	}
}
