package convert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

// hfNames is the inverse of LMName for the test's export.
var hfNames = []struct {
	re *regexp.Regexp
	hf string
}{
	{regexp.MustCompile(`^token_embd\.weight$`), "model.embed_tokens.weight"},
	{regexp.MustCompile(`^output_norm\.weight$`), "model.norm.weight"},
	{regexp.MustCompile(`^output\.weight$`), "lm_head.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.attn_norm\.weight$`), "model.layers.$1.input_layernorm.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.ffn_norm\.weight$`), "model.layers.$1.post_attention_layernorm.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$`), "model.layers.$1.self_attn.${2}_proj.$3"},
	{regexp.MustCompile(`^blk\.(\d+)\.attn_output\.weight$`), "model.layers.$1.self_attn.o_proj.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.ffn_(gate|up|down)\.weight$`), "model.layers.$1.mlp.${2}_proj.weight"},
}

// exportHF writes a GGUF language model back out as a Hugging Face
// checkpoint (config.json, tokenizer.json, safetensors in two shards with
// an index), independently of the converter.
func exportHF(t *testing.T, path, dir string) {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var shards [2][]safetensors.Data
	index := map[string]string{}
	for i, tt := range f.Tensors {
		hf := ""
		for _, m := range hfNames {
			if m.re.MatchString(tt.Name) {
				hf = m.re.ReplaceAllString(tt.Name, m.hf)
			}
		}
		if hf == "" {
			t.Fatalf("no HF name for %s", tt.Name)
		}
		vals, err := tt.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		shape := slices.Clone(tt.Dims)
		slices.Reverse(shape)
		shards[i%2] = append(shards[i%2], safetensors.Data{Name: hf, DType: safetensors.F32, Shape: shape, Values: vals})
		index[hf] = fmt.Sprintf("model-%05d-of-00002.safetensors", i%2+1)
	}
	for i, s := range shards {
		if err := safetensors.Write(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)), s, nil); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON(t, filepath.Join(dir, "model.safetensors.index.json"), map[string]any{"weight_map": index})
	u := func(k string) int64 { v, _ := f.Uint("qwen2vl." + k); return int64(v) }
	fl := func(k string) float64 { v, _ := f.Float("qwen2vl." + k); return v }
	secs, _ := f.Ints("qwen2vl.rope.dimension_sections")
	td, err := f.TokenizerData()
	if err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, "config.json"), map[string]any{
		"model_type": "qwen2_5_vl", "num_hidden_layers": u("block_count"), "max_position_embeddings": u("context_length"),
		"hidden_size": u("embedding_length"), "intermediate_size": u("feed_forward_length"),
		"num_attention_heads": u("attention.head_count"), "num_key_value_heads": u("attention.head_count_kv"),
		"rope_theta": fl("rope.freq_base"), "rms_norm_eps": fl("attention.layer_norm_rms_epsilon"),
		"vocab_size": len(td.Tokens), "tie_word_embeddings": f.Tensor("output.weight") == nil,
		"bos_token_id": td.BOS, "eos_token_id": td.EOS, "rope_scaling": map[string]any{"type": "mrope", "mrope_section": secs[:3]},
	})
	vocab := map[string]int{}
	var added []map[string]any
	for id, tok := range td.Tokens {
		switch td.TokenTypes[id] {
		case 3, 4:
			added = append(added, map[string]any{"id": id, "content": tok, "special": td.TokenTypes[id] == 3})
		case 5: // unused padding ids: absent from tokenizer.json, as in Qwen's
		default:
			vocab[tok] = id
		}
	}
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), map[string]any{"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": td.Merges}, "added_tokens": added})
	tmpl, _ := f.String("tokenizer.chat_template")
	writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{"chat_template": tmpl})
}

func writeJSON(t *testing.T, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConvertRoundTrip: a synthetic LM exported as a sharded Hugging Face
// checkpoint converts back to the same tensors and tokenizer, and the
// engine embeds identically with either file.
func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	lm := filepath.Join(dir, "lm.gguf")
	if err := synth.WriteLM(lm, cfg); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "hf")
	os.MkdirAll(ck, 0o755)
	exportHF(t, lm, ck)
	out := filepath.Join(dir, "converted.gguf")
	if err := ConvertLM(ck, out, LMOptions{Type: gguf.TypeF32, Extra: map[string]any{"vembed.recipe": "jina-embeddings-v4"}}); err != nil {
		t.Fatal(err)
	}
	a, _ := gguf.Open(lm)
	defer a.Close()
	b, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, ta := range a.Tensors {
		tb := b.Tensor(ta.Name)
		if tb == nil || tb.Type != ta.Type || !slices.Equal(tb.Dims, ta.Dims) || !slices.Equal(tb.Data, ta.Data) {
			t.Errorf("%s differs after the round trip", ta.Name)
		}
	}
	if len(b.Tensors) != len(a.Tensors) {
		t.Errorf("%d tensors, want %d", len(b.Tensors), len(a.Tensors))
	}
	ta, _ := a.TokenizerData()
	tb, _ := b.TokenizerData()
	if !slices.Equal(ta.Tokens, tb.Tokens) || !slices.Equal(ta.Merges, tb.Merges) || !slices.Equal(ta.TokenTypes, tb.TokenTypes) || ta.EOS != tb.EOS || ta.BOS != tb.BOS {
		t.Errorf("the tokenizer differs after the round trip: tokens %v merges %v types %v eos %d/%d bos %d/%d", slices.Equal(ta.Tokens, tb.Tokens), slices.Equal(ta.Merges, tb.Merges), slices.Equal(ta.TokenTypes, tb.TokenTypes), ta.EOS, tb.EOS, ta.BOS, tb.BOS)
	}
	embed := func(path string) []float32 {
		e, err := engine.New(engine.Config{Model: path})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		r, err := e.Embed(t.Context(), engine.Request{Inputs: []engine.Input{engine.TextInput("a converted model embeds the same")}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Embeddings[0].Vector
	}
	if !slices.Equal(embed(lm), embed(out)) {
		t.Error("the converted model embeds differently")
	}
	// F16 rounds each weight once from its float64 value.
	out16 := filepath.Join(dir, "converted-f16.gguf")
	if err := ConvertLM(ck, out16, LMOptions{Type: gguf.TypeF16}); err != nil {
		t.Fatal(err)
	}
	c, _ := gguf.Open(out16)
	defer c.Close()
	w := c.Tensor("blk.0.ffn_up.weight")
	src, _ := a.Tensor("blk.0.ffn_up.weight").Float32s()
	want, _ := gguf.Quantize(gguf.TypeF16, src)
	if w.Type != gguf.TypeF16 || !slices.Equal(w.Data, want) || c.Tensor("blk.0.attn_norm.weight").Type != gguf.TypeF32 {
		t.Error("F16 conversion: weights not rounded once, or a norm not kept in F32")
	}
}

// TestConvertMergesAdapter: an adapter's update lands in the converted
// weights as W + (alpha/r)·B·A computed here, rounded once.
func TestConvertMergesAdapter(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := synth.Preset("tiny")
	lm := filepath.Join(dir, "lm.gguf")
	if err := synth.WriteLM(lm, cfg); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "hf")
	os.MkdirAll(ck, 0o755)
	exportHF(t, lm, ck)
	src, _ := gguf.Open(lm)
	defer src.Close()
	q := src.Tensor("blk.1.attn_q.weight")
	rows, cols := int(q.Dims[1]), int(q.Dims[0])
	const r = 3
	A, B := make([]float32, r*cols), make([]float32, rows*r)
	for i := range A {
		A[i] = float32(i%7-3) / 16
	}
	for i := range B {
		B[i] = float32(i%5-2) / 8
	}
	ad := filepath.Join(dir, "adapter")
	os.MkdirAll(ad, 0o755)
	writeJSON(t, filepath.Join(ad, "adapter_config.json"), map[string]any{"peft_type": "LORA", "r": r, "lora_alpha": 6, "target_modules": []string{"q_proj"}})
	safetensors.Write(filepath.Join(ad, "adapter_model.safetensors"), []safetensors.Data{
		{Name: "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight", DType: safetensors.F32, Shape: []int64{r, int64(cols)}, Values: A},
		{Name: "base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight", DType: safetensors.F32, Shape: []int64{int64(rows), r}, Values: B},
	}, nil)
	a, err := OpenAdapter(ad)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The adapter targets every q_proj but holds only layer 1's: refused.
	if err := ConvertLM(ck, filepath.Join(dir, "x.gguf"), LMOptions{Type: gguf.TypeF32, Adapter: a}); err == nil {
		t.Fatal("an adapter missing a targeted layer was accepted")
	}
	a.Config.targets = []string{"layers.1.self_attn.q_proj"}
	out := filepath.Join(dir, "merged.gguf")
	if err := ConvertLM(ck, out, LMOptions{Type: gguf.TypeF32, Adapter: a}); err != nil {
		t.Fatal(err)
	}
	m, _ := gguf.Open(out)
	defer m.Close()
	got, _ := m.Tensor("blk.1.attn_q.weight").Float32s()
	w, _ := q.Float32s()
	for i := range rows {
		for j := range cols {
			var d float64
			for k := range r {
				d += float64(B[i*r+k]) * float64(A[k*cols+j])
			}
			if want := float32(float64(w[i*cols+j]) + 2*d); got[i*cols+j] != want {
				t.Fatalf("merged [%d,%d] = %v, want %v", i, j, got[i*cols+j], want)
			}
		}
	}
	same, _ := m.Tensor("blk.0.attn_q.weight").Float32s()
	orig, _ := src.Tensor("blk.0.attn_q.weight").Float32s()
	if !slices.Equal(same, orig) {
		t.Error("an untargeted layer changed")
	}
}

// TestTasksAll: the jina-embeddings-v4 layout, one adapter per task under
// adapters/, converts to one LM per task, each with its own adapter
// merged, and a shared mmproj.
func TestTasksAll(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := synth.Preset("tiny")
	lm, mm, err := synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "hf")
	os.MkdirAll(ck, 0o755)
	exportHF(t, lm, ck)
	// Put the vision tower in the same checkpoint: a second shard.
	vdir := filepath.Join(dir, "v")
	os.MkdirAll(vdir, 0o755)
	vision := exportVision(t, mm, vdir)
	os.Rename(filepath.Join(vdir, "model.safetensors"), filepath.Join(ck, "vision.safetensors"))
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	b, _ := os.ReadFile(filepath.Join(ck, "model.safetensors.index.json"))
	json.Unmarshal(b, &idx)
	vf, err := safetensors.Open(filepath.Join(ck, "vision.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range vf.Names() {
		idx.WeightMap[n] = "vision.safetensors"
	}
	vf.Close()
	writeJSON(t, filepath.Join(ck, "model.safetensors.index.json"), idx)
	var conf map[string]any
	b, _ = os.ReadFile(filepath.Join(ck, "config.json"))
	json.Unmarshal(b, &conf)
	conf["vision_config"] = vision
	writeJSON(t, filepath.Join(ck, "config.json"), conf)
	for k, task := range []string{"retrieval", "text-matching", "code"} {
		ad := filepath.Join(ck, "adapters", task)
		os.MkdirAll(ad, 0o755)
		writeJSON(t, filepath.Join(ad, "adapter_config.json"), map[string]any{"peft_type": "LORA", "r": 1, "lora_alpha": 1, "target_modules": []string{"layers.0.self_attn.q_proj"}})
		A, B := make([]float32, 64), make([]float32, 64)
		A[k], B[k] = 1, 1
		safetensors.Write(filepath.Join(ad, "adapter_model.safetensors"), []safetensors.Data{
			{Name: "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", DType: safetensors.F32, Shape: []int64{1, 64}, Values: A},
			{Name: "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", DType: safetensors.F32, Shape: []int64{64, 1}, Values: B},
		}, nil)
	}
	out := filepath.Join(dir, "out", "jina.gguf")
	os.MkdirAll(filepath.Dir(out), 0o755)
	written, err := Tasks(ck, "all", out, filepath.Join(dir, "out", "mmproj.gguf"), "", LMOptions{Type: gguf.TypeF32})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4 {
		t.Fatalf("wrote %v", written)
	}
	src, _ := gguf.Open(lm)
	defer src.Close()
	orig, _ := src.Tensor("blk.0.attn_q.weight").Float32s()
	for _, task := range []string{"code", "retrieval", "text-matching"} {
		f, err := gguf.Open(filepath.Join(dir, "out", "jina-"+task+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		q, _ := f.Tensor("blk.0.attn_q.weight").Float32s()
		if r, _ := f.String("vembed.recipe"); r != "jina-embeddings-v4" {
			t.Errorf("%s: recipe %q", task, r)
		}
		// Adapter k adds 1 at [k, k] (code is k=2, retrieval 0, text-matching 1).
		d := map[string]int{"retrieval": 0, "text-matching": 1, "code": 2}[task]
		for i := range q {
			want := orig[i]
			if i == d*64+d {
				want = float32(float64(orig[i]) + 1)
			}
			if q[i] != want {
				t.Errorf("%s: q[%d] = %v, want %v", task, i, q[i], want)
				break
			}
		}
		f.Close()
	}
}
