package synth

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vembed/vembed/gguf"
)

// The plans below reproduce what llama.cpp's convert_hf_to_gguf.py writes
// for Qwen2-VL / Qwen2.5-VL: the same metadata keys, value types and order,
// tensor names, shapes and tensor order within a block (the converter walks
// the checkpoint's tensors in name order; we number blocks numerically).

const quantizationVersion = 2

// sizeLabel is gguf-py's general.size_label for a parameter count: at least
// two significant digits, suffix K/M/B/T.
func sizeLabel(n int64) string {
	scaled, suffix := float64(n)*1e-3, "K"
	switch {
	case n > 1e12:
		scaled, suffix = float64(n)*1e-12, "T"
	case n > 1e9:
		scaled, suffix = float64(n)*1e-9, "B"
	case n > 1e6:
		scaled, suffix = float64(n)*1e-6, "M"
	}
	digits := len(strings.TrimLeft(fmt.Sprint(int64(math.RoundToEven(scaled))), "0"))
	return fmt.Sprintf("%.*f%s", max(2-digits, 0), scaled, suffix)
}

func paramCount(ts []*tensorSpec) int64 {
	var n int64
	for _, t := range ts {
		n += t.elements()
	}
	return n
}

// generalKVs returns the general.* keys the converter writes first.
func generalKVs(arch, typ, name, base string, ts []*tensorSpec) []kv {
	return []kv{
		{"general.architecture", arch},
		{"general.type", typ},
		{"general.name", name},
		{"general.basename", base},
		{"general.size_label", sizeLabel(paramCount(ts))},
	}
}

// lmSpec plans the language-model file: qwen2vl (q/k/v biases), or
// qwen3vl beside a Qwen3-VL tower (per-head q/k norms instead, heads of
// LM.HeadDim, and the reranker's head).
func (c *Config) lmSpec(tok []kv) (*fileSpec, error) {
	spec, err := ParseTypeSpec(c.LMType)
	if err != nil {
		return nil, err
	}
	lm := c.LM
	qwen3 := c.Projector == ProjectorQwen3VL
	arch := "qwen2vl"
	if qwen3 {
		arch = "qwen3vl"
	}
	H, F, hd := int64(lm.Hidden), int64(lm.FFN), int64(lm.headDim())
	qDim, kvDim := hd*int64(lm.Heads), hd*int64(lm.KVHeads)
	f := &fileSpec{seed: c.Seed, std: c.Std}
	mat := func(name string, r role, layer int, ne0, ne1 int64) {
		f.add(name, spec.Pick(r, ne0, layer, lm.Layers), initWeight, ne0, ne1)
	}
	vec := func(name string, init initKind, n int64) { f.add(name, gguf.TypeF32, init, n) }

	// The reranker conversion turns the LM head into cls.output.weight, the
	// rows of "yes" and "no", and writes no output.weight; the head comes
	// from lm_head when untied (sorting first) and from embed_tokens, just
	// before token_embd, when tied.
	embRole := roleOutput // no output.weight: llama-quantize treats token_embd as the output matrix
	switch {
	case lm.Pooling == "rank":
		mat("cls.output.weight", roleOther, 0, H, 2)
	case lm.Untied:
		embRole = roleOther
		mat("output.weight", roleOutput, 0, H, int64(lm.Vocab)) // lm_head sorts first
	}
	mat("token_embd.weight", embRole, 0, H, int64(lm.Vocab))
	for i := range lm.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		vec(p+"attn_norm.weight", initNorm, H)
		mat(p+"ffn_down.weight", roleFFNDown, i, F, H)
		mat(p+"ffn_gate.weight", roleOther, i, H, F)
		mat(p+"ffn_up.weight", roleOther, i, H, F)
		vec(p+"ffn_norm.weight", initNorm, H)
		if qwen3 { // self_attn.k_norm sorts before k_proj
			vec(p+"attn_k_norm.weight", initNorm, hd)
		} else {
			vec(p+"attn_k.bias", initWeight, kvDim)
		}
		mat(p+"attn_k.weight", roleOther, i, H, kvDim)
		mat(p+"attn_output.weight", roleAttnOutput, i, qDim, H)
		if qwen3 {
			vec(p+"attn_q_norm.weight", initNorm, hd)
		} else {
			vec(p+"attn_q.bias", initWeight, qDim)
		}
		mat(p+"attn_q.weight", roleOther, i, H, qDim)
		if !qwen3 {
			vec(p+"attn_v.bias", initWeight, kvDim)
		}
		mat(p+"attn_v.weight", roleAttnV, i, H, kvDim)
	}
	vec("output_norm.weight", initNorm, H)

	a := arch + "."
	f.kvs = append(generalKVs(arch, "model", c.Name, c.BaseName, f.tensors),
		kv{a + "block_count", uint32(lm.Layers)},
		kv{a + "context_length", uint32(lm.ContextLength)},
		kv{a + "embedding_length", uint32(lm.Hidden)},
		kv{a + "feed_forward_length", uint32(lm.FFN)},
		kv{a + "attention.head_count", uint32(lm.Heads)},
		kv{a + "attention.head_count_kv", uint32(lm.KVHeads)},
		kv{a + "rope.dimension_sections", lm.MRoPE[:]},
		kv{a + "rope.freq_base", lm.RopeTheta},
		kv{a + "attention.layer_norm_rms_epsilon", lm.RMSEps},
	)
	if qwen3 {
		f.kvs = append(f.kvs, c.qwen3LMKVs(spec)...)
	} else {
		f.kvs = append(f.kvs, kv{"general.file_type", spec.FileType()})
	}
	f.kvs = append(f.kvs, kv{"general.quantization_version", uint32(quantizationVersion)})
	f.kvs = append(f.kvs, tok...)
	if spec.Mix != "" || spec.Base.BlockSize() > 1 {
		quantizeLayout(f)
	}
	return f, nil
}

// visionKVs returns the clip keys every Qwen-VL mmproj starts with (after
// general.*), in the converter's order; ffnLen is what it stores as the
// feed-forward length.
func (c *Config) visionKVs(spec TypeSpec, ffnLen int) []kv {
	const v = "clip.vision."
	vi := c.Vision
	return []kv{
		{"general.file_type", spec.FileType()},
		{"clip.has_vision_encoder", true},
		{v + "projection_dim", uint32(c.LM.Hidden)},
		{v + "image_size", uint32(vi.ImageSize)},
		{v + "patch_size", uint32(vi.PatchSize)},
		{v + "embedding_length", uint32(vi.Width)},
		{v + "feed_forward_length", uint32(ffnLen)},
		{v + "block_count", uint32(vi.Blocks)},
		{v + "attention.head_count", uint32(vi.Heads)},
		{v + "image_mean", vi.ImageMean[:]},
		{v + "image_std", vi.ImageStd[:]},
	}
}

// quantizeLayout reorders a file as llama-quantize writes it (quantized
// files come from it, not from the converter): tensors outside blocks first,
// then block by block, each group in name order; general.quantization_version
// and general.file_type re-set, hence moved to the end.
func quantizeLayout(f *fileSpec) {
	block := func(name string) int {
		var i int
		if _, err := fmt.Sscanf(name, "blk.%d.", &i); err != nil {
			return -1
		}
		return i
	}
	slices.SortStableFunc(f.tensors, func(a, b *tensorSpec) int {
		if c := cmp.Compare(block(a.name), block(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var moved [2]kv
	kvs := f.kvs[:0]
	for _, p := range f.kvs {
		switch p.Key {
		case "general.quantization_version":
			moved[0] = p
		case "general.file_type":
			moved[1] = p
		default:
			kvs = append(kvs, p)
		}
	}
	f.kvs = append(kvs, moved[:]...)
}

// vocabKVs returns the tokenizer.* metadata of v in the converter's order.
func vocabKVs(v *Vocab) []kv {
	return []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "qwen2"},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.token_type", v.Types},
		{"tokenizer.ggml.merges", v.Merges},
		{"tokenizer.ggml.eos_token_id", v.EOS},
		{"tokenizer.ggml.padding_token_id", v.PAD},
		{"tokenizer.ggml.bos_token_id", v.BOS},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.chat_template", ChatTemplate},
	}
}

// tokenizerKVs returns the tokenizer metadata for the LM: the small
// vocabulary, or the tokenizer.* keys of c.VocabFrom copied with their types.
func (c *Config) tokenizerKVs() ([]kv, error) {
	if c.VocabFrom == "" {
		v, err := c.smallVocab()
		if err != nil {
			return nil, err
		}
		return vocabKVs(v), nil
	}
	src, err := gguf.Open(c.VocabFrom)
	if err != nil {
		return nil, fmt.Errorf("synth: vocabulary source: %w", err)
	}
	defer src.Close()
	var out []kv
	ntok := -1
	for _, p := range src.KVs {
		if !strings.HasPrefix(p.Key, "tokenizer.") {
			continue
		}
		if p.Key == "tokenizer.ggml.tokens" {
			ntok = p.Value.Len()
		}
		out = append(out, kv{p.Key, p.Value.Interface()})
	}
	switch {
	case ntok < 0:
		return nil, fmt.Errorf("synth: vocabulary source %s has no tokenizer.ggml.tokens", c.VocabFrom)
	case ntok != c.LM.Vocab:
		return nil, fmt.Errorf("synth: vocabulary source %s has %d tokens, the LM is configured for %d", c.VocabFrom, ntok, c.LM.Vocab)
	}
	return out, nil
}

// mmprojSpec plans the vision file.
func (c *Config) mmprojSpec() (*fileSpec, error) {
	if c.Projector == ProjectorQwen3VL {
		return c.qwen3MMProjSpec()
	}
	spec, err := ParseTypeSpec(c.MMProjType)
	if err != nil {
		return nil, err
	}
	// llama-quantize does not process mmproj files, so a mix means its base
	// type here, applied as the converter applies --outtype.
	spec.Mix = ""
	vi := c.Vision
	W, I, D := int64(vi.Width), int64(vi.FFN), int64(c.LM.Hidden)
	merged := 4 * W // 2×2 spatial merge
	qwen2 := c.Projector == ProjectorQwen2VL
	f := &fileSpec{seed: c.Seed + 1, std: c.Std}
	mat := func(name string, ne ...int64) {
		f.add(name, spec.Pick(roleOther, ne[0], 0, 0), initWeight, ne...)
	}
	vec := func(name string, init initKind, n int64) { f.add(name, gguf.TypeF32, init, n) }
	norm := func(name string, n int64) {
		if qwen2 { // LayerNorm has a bias
			vec(name+".bias", initWeight, n)
		}
		vec(name+".weight", initNorm, n)
	}
	for i := range vi.Blocks {
		p := fmt.Sprintf("v.blk.%d.", i)
		vec(p+"attn_out.bias", initWeight, W)
		mat(p+"attn_out.weight", W, W)
		for _, x := range []string{"q", "k", "v"} {
			vec(p+"attn_"+x+".bias", initWeight, W)
		}
		for _, x := range []string{"q", "k", "v"} {
			mat(p+"attn_"+x+".weight", W, W)
		}
		if qwen2 { // fc1 → ffn_up, fc2 → ffn_down
			vec(p+"ffn_up.bias", initWeight, I)
			mat(p+"ffn_up.weight", W, I)
			vec(p+"ffn_down.bias", initWeight, W)
			mat(p+"ffn_down.weight", I, W)
		} else {
			vec(p+"ffn_down.bias", initWeight, W)
			mat(p+"ffn_down.weight", I, W)
			vec(p+"ffn_gate.bias", initWeight, I)
			mat(p+"ffn_gate.weight", W, I)
			vec(p+"ffn_up.bias", initWeight, I)
			mat(p+"ffn_up.weight", W, I)
		}
		norm(p+"ln1", W)
		norm(p+"ln2", W)
	}
	norm("v.post_ln", W)
	vec("mm.0.bias", initWeight, merged)
	mat("mm.0.weight", merged, merged)
	vec("mm.2.bias", initWeight, D)
	mat("mm.2.weight", merged, D)
	// The converter keeps the patch embedding in F16 for --outtype f16 and in
	// F32 otherwise (its rows of 14 values fit no quantized block).
	patchType := gguf.TypeF32
	if spec.Base == gguf.TypeF16 {
		patchType = gguf.TypeF16
	}
	P := int64(vi.PatchSize)
	f.add("v.patch_embd.weight", patchType, initWeight, P, P, 3, W)
	f.add("v.patch_embd.weight.1", patchType, initWeight, P, P, 3, W)

	// Qwen2-VL's converter writes the vision config's hidden_size, which is
	// the LM width, as the feed-forward length; the real MLP width is only in
	// the tensor shapes.
	ffnLen := vi.FFN
	if qwen2 {
		ffnLen = c.LM.Hidden
	}
	const v = "clip.vision."
	f.kvs = append(generalKVs("clip", "mmproj", c.Name, c.BaseName, f.tensors), c.visionKVs(spec, ffnLen)...)
	f.kvs = append(f.kvs, kv{"clip.projector_type", c.Projector})
	if !qwen2 {
		f.kvs = append(f.kvs,
			kv{"clip.use_silu", true},
			kv{v + "n_wa_pattern", uint32(vi.NWAPattern)},
		)
	}
	f.kvs = append(f.kvs,
		kv{v + "attention.layer_norm_epsilon", vi.Eps},
		kv{"general.quantization_version", uint32(quantizationVersion)},
	)
	return f, nil
}

// mvprojSpec plans the multi-vector projector side-car (format in doc.go).
func (c *Config) mvprojSpec() (*fileSpec, error) {
	spec, err := ParseTypeSpec(c.MVProj.Type)
	if err != nil {
		return nil, err
	}
	switch spec.Base {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
	default:
		return nil, fmt.Errorf("synth: mvproj weight type %s: want F32, F16 or BF16", spec.Name)
	}
	if spec.Mix != "" {
		return nil, fmt.Errorf("synth: mvproj weight type %s: want F32, F16 or BF16", spec.Name)
	}
	f := &fileSpec{seed: c.Seed + 2, std: c.Std}
	in, out := int64(c.LM.Hidden), int64(c.MVProj.OutputDim)
	f.add("mvproj.weight", spec.Base, initWeight, in, out)
	f.add("mvproj.bias", gguf.TypeF32, initWeight, out)
	f.kvs = []kv{
		{"general.architecture", "mvproj"},
		{"general.type", "mvproj"},
		{"general.name", c.Name + "-mvproj"},
		{"mvproj.input_dim", uint32(in)},
		{"mvproj.output_dim", uint32(out)},
		{"mvproj.normalize", c.MVProj.Normalize},
		{"mvproj.task", c.MVProj.Task},
		{"general.file_type", spec.FileType()},
	}
	return f, nil
}
