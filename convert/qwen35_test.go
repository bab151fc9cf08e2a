package convert

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
)

// TestQwen35MatchesFixture converts the shared fixtures' Qwen3.5 weights,
// stored under their Hugging Face names, and finds every tensor of the
// fixtures' GGUFs (whose values llama.cpp reproduces) with the same name,
// shape and values: the (1+w) norms, -exp(A_log), the value heads
// reordered and the conv kernel flattened as llama.cpp's converter does.
func TestQwen35MatchesFixture(t *testing.T) {
	dir := fixtures.Dir(t, "qwen35")
	weights := fixtures.ReadNPZ(t, filepath.Join(dir, "hf-weights.npz"))
	lmWant, err := gguf.Open(filepath.Join(dir, "qwen35-a-lm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer lmWant.Close()
	mmWant, err := gguf.Open(filepath.Join(dir, "mmproj-qwen35-a.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer mmWant.Close()
	// The npz leaves the token embeddings out: the GGUF's (F16) stand in.
	emb, err := lmWant.Tensor("token_embd.weight").Float32s()
	if err != nil {
		t.Fatal(err)
	}
	hidden := lmWant.Tensor("token_embd.weight").Dims[0]
	tensors := []safetensors.Data{{Name: "model.language_model.embed_tokens.weight", DType: safetensors.F32,
		Shape: []int64{int64(len(emb)) / hidden, hidden}, Values: emb}}
	for name, a := range weights {
		tensors = append(tensors, safetensors.Data{Name: name, DType: safetensors.F32, Shape: a.Shape, Values: a.Values})
	}
	ck := t.TempDir()
	if err := safetensors.Write(filepath.Join(ck, "model.safetensors"), tensors, nil); err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	fixtures.ReadJSON(t, filepath.Join(dir, "config.json"), &c)
	c["model_type"], c["architectures"] = "qwen3_5", []string{"Qwen3_5ForConditionalGeneration"}
	b, _ := json.Marshal(c)
	cfg, err := parseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	base, err := cfg.layoutConfig(ck, int(lmWant.Tensor("token_embd.weight").Dims[1]))
	if err != nil {
		t.Fatal(err)
	}
	base.LMType, base.MMProjType = "F32", "F32"
	src, err := openSource(ck)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv := converter{ctx: context.Background(), src: src, vocab: base.LM.Vocab,
		naming: qwenlayout.HFNaming{Projector: base.Projector, Tied: true, DeltaNet: base.LM.DeltaNet}}
	out := t.TempDir()
	lmPath, err := conv.writeLM(base, out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mmPath, err := conv.writeMMProj(base, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range []struct {
		got  string
		want *gguf.File
	}{{lmPath, lmWant}, {mmPath, mmWant}} {
		got, err := gguf.Open(pair.got)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Close()
		n := 0
		for _, w := range pair.want.Tensors {
			g := got.Tensor(w.Name)
			if g == nil {
				t.Errorf("%s: no tensor %s", filepath.Base(pair.got), w.Name)
				continue
			}
			n++
			if !slices.Equal(g.Dims, w.Dims) {
				t.Errorf("%s: shape %v, the fixture's %v", w.Name, g.Dims, w.Dims)
				continue
			}
			gv, err1 := g.Float32s()
			wv, err2 := w.Float32s()
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			worst := 0.0
			for i := range gv {
				worst = max(worst, math.Abs(float64(gv[i])-float64(wv[i]))/max(1e-30, math.Abs(float64(wv[i]))))
			}
			// The fixture rounded float64 values once to float32, as
			// the converter does: at most an ulp apart (exp's last bit).
			if worst > 2e-7 {
				t.Errorf("%s: values differ from the fixture's by %.3g (relative)", w.Name, worst)
			}
		}
		if n != len(pair.want.Tensors) || n == 0 {
			t.Errorf("%s: %d of the fixture's %d tensors found", filepath.Base(pair.got), n, len(pair.want.Tensors))
		}
	}
	// The keys the fixture's LM holds, with its values.
	got, err := gguf.Open(lmPath)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	for _, key := range []string{"general.architecture", "qwen35.block_count", "qwen35.embedding_length", "qwen35.feed_forward_length",
		"qwen35.attention.head_count", "qwen35.attention.head_count_kv", "qwen35.attention.key_length", "qwen35.attention.value_length",
		"qwen35.rope.dimension_count", "qwen35.rope.dimension_sections", "qwen35.ssm.conv_kernel", "qwen35.ssm.state_size",
		"qwen35.ssm.group_count", "qwen35.ssm.time_step_rank", "qwen35.ssm.inner_size", "qwen35.full_attention_interval",
		"qwen35.rope.freq_base", "qwen35.attention.layer_norm_rms_epsilon"} {
		w, ok1 := lmWant.Lookup(key)
		g, ok2 := got.Lookup(key)
		if !ok1 || !ok2 || !strings.EqualFold(keyString(w), keyString(g)) {
			t.Errorf("%s: got %v (present %v), the fixture's %v", key, keyString(g), ok2, keyString(w))
		}
	}
}

func keyString(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestHeadOrder checks the value-head permutation against its definition
// (llama.cpp's _reorder_v_heads: [K, r, w] viewed as [r, K, w]).
func TestHeadOrder(t *testing.T) {
	h := qwenlayout.HeadOrder{Skip: 3, KeyHeads: 2, PerKey: 3, Width: 2}
	var got []int
	for i := range h.Span() {
		got = append(got, h.Source(i))
	}
	var want []int
	want = append(want, 0, 1, 2)
	for v := range 3 {
		for k := range 2 {
			for w := range 2 {
				want = append(want, 3+(k*3+v)*2+w)
			}
		}
	}
	if keyString(got) != keyString(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
