package synth

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/qwenlayout"
)

func tinyQwen3(t *testing.T) Config {
	t.Helper()
	c, err := Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// qwen3FreeKeys may differ from the fixture's: names, the keys the
// converter writes and the fixture's generator did not, the vocabulary
// (the fixture carries the real one) and the LM's file type (the fixture
// stores token_embd in F16).
var qwen3FreeKeys = map[string]bool{
	"general.name": true, "general.basename": true, "general.size_label": true,
	"general.file_type": true,
}

// compareQwen3 checks that got has want's metadata keys in the same order
// with the same types and values (tokenizer keys aside), and the same
// tensors by name with the same shapes and types, except token_embd's
// vocabulary rows and storage type.
func compareQwen3(t *testing.T, got, want *gguf.File) {
	t.Helper()
	keys := func(f *gguf.File) (out []string) {
		for _, p := range f.KVs {
			if !qwen3FreeKeys[p.Key] && !strings.HasPrefix(p.Key, "tokenizer.") {
				out = append(out, p.Key)
			}
		}
		return out
	}
	if g, w := keys(got), keys(want); !slices.Equal(g, w) {
		t.Fatalf("keys\n%v\nfixture\n%v", g, w)
	}
	for _, w := range want.KVs {
		if qwen3FreeKeys[w.Key] || strings.HasPrefix(w.Key, "tokenizer.") {
			continue
		}
		g, _ := got.Lookup(w.Key)
		if g.Type() != w.Value.Type() || g.ElemType() != w.Value.ElemType() || !reflect.DeepEqual(g.Interface(), w.Value.Interface()) {
			t.Errorf("key %q = %v (%v), fixture %v (%v)", w.Key, g, g.Type(), w.Value, w.Value.Type())
		}
	}
	if len(got.Tensors) != len(want.Tensors) {
		t.Errorf("%d tensors, fixture has %d", len(got.Tensors), len(want.Tensors))
	}
	for _, w := range want.Tensors {
		g := got.Tensor(w.Name)
		switch {
		case g == nil:
			t.Errorf("tensor %s missing", w.Name)
		case w.Name == "token_embd.weight":
			if g.Dims[0] != w.Dims[0] {
				t.Errorf("token_embd %v, fixture %v", g.Dims, w.Dims)
			}
		case g.Type != w.Type || !reflect.DeepEqual(g.Dims, w.Dims):
			t.Errorf("tensor %s: %s %v, fixture %s %v", w.Name, g.Type, g.Dims, w.Type, w.Dims)
		}
	}
}

// TestQwen3FixtureParity writes the tiny-qwen3vl preset as an embedder and
// as a reranker and compares them with the shared fixtures' qwen3vl files,
// which follow llama.cpp's converter.
func TestQwen3FixtureParity(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl")
	c := tinyQwen3(t)
	out := t.TempDir()
	lm, mm, err := WritePair(out, c)
	if err != nil {
		t.Fatal(err)
	}
	c.LM.Pooling = "rank"
	c.Name += "-reranker"
	rr := filepath.Join(out, c.LMFileName())
	if err := WriteLM(rr, c); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ got, want string }{
		{lm, "qwen3vl-tiny-lm-F32.gguf"},
		{mm, "mmproj-qwen3vl-tiny-F32.gguf"},
		{rr, "qwen3vl-tiny-reranker-F32.gguf"},
	} {
		t.Run(p.want, func(t *testing.T) {
			compareQwen3(t, open(t, p.got), open(t, filepath.Join(dir, p.want)))
		})
	}
}

// TestQwen3Layout checks what the fixtures do not show: the converter's
// tensor order, the untied head, a reranker's head in place of the LM
// head, and llama-quantize's layout and types for block types.
func TestQwen3Layout(t *testing.T) {
	c := tinyQwen3(t)
	c.LM.Untied = true
	c.LM.Pooling = ""
	dir := t.TempDir()
	lm, mm, err := WritePair(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, lm)
	names := func(f *gguf.File) (out []string) {
		for _, tn := range f.Tensors {
			out = append(out, tn.Name)
		}
		return out
	}
	if n := names(f); n[0] != "output.weight" || n[1] != "token_embd.weight" || n[2] != "blk.0.attn_norm.weight" || n[len(n)-1] != "output_norm.weight" {
		t.Errorf("LM tensor order %v", n)
	}
	if _, ok := f.Lookup("qwen3vl.pooling_type"); ok {
		t.Error("pooling_type written for Pooling \"\"")
	}
	if n := names(open(t, mm)); n[0] != "v.blk.0.attn_out.bias" || !slices.Contains(n, "v.deepstack.2.fc1.weight") || n[len(n)-1] != "v.position_embd.weight" {
		t.Errorf("mmproj tensor order %v", n)
	}

	c.LM.Pooling = "rank"
	c.LMType, c.MMProjType = "Q8_0", "Q8_0"
	lm, mm, err = WritePair(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	f = open(t, lm)
	if f.Tensor("output.weight") != nil || f.Tensor("cls.output.weight") == nil {
		t.Error("an untied reranker keeps output.weight or lacks cls.output.weight")
	}
	if n := names(f); n[0] != "cls.output.weight" || n[1] != "output_norm.weight" || n[2] != "token_embd.weight" || n[3] != "blk.0.attn_k.weight" {
		t.Errorf("quantized LM tensor order %v", n)
	}
	if k := f.KVs[len(f.KVs)-1].Key; k != "general.file_type" {
		t.Errorf("last key %q, llama-quantize writes general.file_type last", k)
	}
	for _, tn := range append(slices.Clone(f.Tensors), open(t, mm).Tensors...) {
		want := gguf.TypeQ8_0
		if len(tn.Dims) == 1 || tn.Name == "v.position_embd.weight" || strings.HasPrefix(tn.Name, "v.patch_embd") {
			want = gguf.TypeF32
		}
		if tn.Type != want {
			t.Errorf("%s: %s, want %s", tn.Name, tn.Type, want)
		}
	}
}

func TestQwen3Validate(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"pooling":     func(c *Config) { c.LM.Pooling = "mean" },
		"taps order":  func(c *Config) { c.Vision.DeepStack = []int{2, 0} },
		"tap range":   func(c *Config) { c.Vision.DeepStack = []int{4} },
		"taps vs LM":  func(c *Config) { c.LM.Layers = 2 },
		"head dim":    func(c *Config) { c.LM.HeadDim = 24 },   // sections cover 16 pairs
		"vision head": func(c *Config) { c.Vision.Heads = 16 }, // 2-wide heads
		"positions":   func(c *Config) { c.Vision.PositionSide = 0 },
		"qwen2 taps":  func(c *Config) { c.Projector = qwenlayout.ProjectorQwen2VL },
	} {
		c := tinyQwen3(t)
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: bad configuration accepted", name)
		}
	}
	for _, p := range []string{"qwen3-vl-embedding-2b", "qwen3-vl-reranker-2b", "tiny-qwen3vl"} {
		c, err := Preset(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
