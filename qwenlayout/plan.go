package qwenlayout

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/quantize"
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

func paramCount(ts []TensorLayout) int64 {
	var n int64
	for _, t := range ts {
		n += t.Elements()
	}
	return n
}

// generalKVs returns the general.* keys the converter writes first.
func generalKVs(arch, typ, name, base string, ts []TensorLayout) []KV {
	return []KV{
		{"general.architecture", arch},
		{"general.type", typ},
		{"general.name", name},
		{"general.basename", base},
		{"general.size_label", sizeLabel(paramCount(ts))},
	}
}

// LMLayout plans the language-model file of c with the given tokenizer
// metadata (as VocabKVs returns it; nil writes none): qwen2vl (q/k/v
// biases), or qwen3vl beside a Qwen3-VL tower (per-head q/k norms instead,
// heads of LM.HeadDim, and the reranker's head).
func (c *Config) LMLayout(tok []KV) (*Layout, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	spec, err := parseSpec(c.LMType)
	if err != nil {
		return nil, err
	}
	lm := c.LM
	if lm.IsQwen35() {
		return c.qwen35LMLayout(spec, tok), nil
	}
	qwen3 := c.Projector == ProjectorQwen3VL
	arch := "qwen2vl"
	if qwen3 {
		arch = "qwen3vl"
	}
	H, F, hd := int64(lm.Hidden), int64(lm.FFN), int64(lm.HeadWidth())
	qDim, kvDim := hd*int64(lm.Heads), hd*int64(lm.KVHeads)
	f := &Layout{}
	mat := func(name string, r quantize.Role, layer int, ne0, ne1 int64) {
		f.add(name, spec.Pick(r, ne0, layer, lm.Layers), false, ne0, ne1)
	}
	vec := func(name string, norm bool, n int64) { f.add(name, gguf.TypeF32, norm, n) }

	// The reranker conversion turns the LM head into cls.output.weight, the
	// rows of "yes" and "no", and writes no output.weight; the head comes
	// from lm_head when untied (sorting first) and from embed_tokens, just
	// before token_embd, when tied.
	embRole := quantize.RoleOutput // no output.weight: llama-quantize treats token_embd as the output matrix
	switch {
	case lm.Pooling == "rank":
		mat("cls.output.weight", quantize.RoleOther, 0, H, 2)
	case lm.Untied:
		embRole = quantize.RoleOther
		mat("output.weight", quantize.RoleOutput, 0, H, int64(lm.Vocab)) // lm_head sorts first
	}
	mat("token_embd.weight", embRole, 0, H, int64(lm.Vocab))
	for i := range lm.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		vec(p+"attn_norm.weight", true, H)
		mat(p+"ffn_down.weight", quantize.RoleFFNDown, i, F, H)
		mat(p+"ffn_gate.weight", quantize.RoleOther, i, H, F)
		mat(p+"ffn_up.weight", quantize.RoleOther, i, H, F)
		vec(p+"ffn_norm.weight", true, H)
		if qwen3 { // self_attn.k_norm sorts before k_proj
			vec(p+"attn_k_norm.weight", true, hd)
		} else {
			vec(p+"attn_k.bias", false, kvDim)
		}
		mat(p+"attn_k.weight", quantize.RoleOther, i, H, kvDim)
		mat(p+"attn_output.weight", quantize.RoleAttnOutput, i, qDim, H)
		if qwen3 {
			vec(p+"attn_q_norm.weight", true, hd)
		} else {
			vec(p+"attn_q.bias", false, qDim)
		}
		mat(p+"attn_q.weight", quantize.RoleOther, i, H, qDim)
		if !qwen3 {
			vec(p+"attn_v.bias", false, kvDim)
		}
		mat(p+"attn_v.weight", quantize.RoleAttnV, i, H, kvDim)
	}
	vec("output_norm.weight", true, H)

	a := arch + "."
	f.KVs = append(c.lmSizeKVs(arch, f.Tensors),
		KV{a + "rope.dimension_sections", lm.MRoPE[:]},
		KV{a + "rope.freq_base", lm.RopeTheta},
		KV{a + "attention.layer_norm_rms_epsilon", lm.RMSEps},
	)
	if qwen3 {
		f.KVs = append(f.KVs, c.qwen3LMKVs(spec)...)
	} else {
		f.KVs = append(f.KVs, KV{"general.file_type", spec.FileType()})
	}
	f.KVs = append(f.KVs, KV{"general.quantization_version", uint32(quantizationVersion)})
	f.KVs = append(f.KVs, tok...)
	f.KVs = append(f.KVs, lm.Extra...)
	if spec.Mix != "" || spec.Base.BlockSize() > 1 {
		quantizeLayout(f)
	}
	return f, nil
}

// lmSizeKVs returns the general keys and the sizes every LM file starts
// with, in the converter's order.
func (c *Config) lmSizeKVs(arch string, ts []TensorLayout) []KV {
	a, lm := arch+".", c.LM
	return append(generalKVs(arch, "model", c.Name, c.BaseName, ts),
		KV{a + "block_count", uint32(lm.Layers)},
		KV{a + "context_length", uint32(lm.ContextLength)},
		KV{a + "embedding_length", uint32(lm.Hidden)},
		KV{a + "feed_forward_length", uint32(lm.FFN)},
		KV{a + "attention.head_count", uint32(lm.Heads)},
		KV{a + "attention.head_count_kv", uint32(lm.KVHeads)},
	)
}

// visionKVs returns the clip keys every Qwen-VL mmproj starts with (after
// general.*), in the converter's order; ffnLen is what it stores as the
// feed-forward length.
func (c *Config) visionKVs(spec quantize.Spec, ffnLen int) []KV {
	const v = "clip.vision."
	vi := c.Vision
	kvs := []KV{
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
	if vi.MaxPixels > 0 {
		kvs = append(kvs, KV{v + "image_min_pixels", uint32(vi.MinPixels)}, KV{v + "image_max_pixels", uint32(vi.MaxPixels)})
	}
	return kvs
}

// quantizeLayout reorders a file as llama-quantize writes it (quantized
// files come from it, not from the converter): tensors outside blocks first,
// then block by block, each group in name order; general.quantization_version
// and general.file_type re-set, hence moved to the end.
func quantizeLayout(f *Layout) {
	block := func(name string) int {
		var i int
		if _, err := fmt.Sscanf(name, "blk.%d.", &i); err != nil {
			return -1
		}
		return i
	}
	slices.SortStableFunc(f.Tensors, func(a, b TensorLayout) int {
		if c := cmp.Compare(block(a.Name), block(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var moved [2]KV
	kvs := f.KVs[:0]
	for _, p := range f.KVs {
		switch p.Key {
		case "general.quantization_version":
			moved[0] = p
		case "general.file_type":
			moved[1] = p
		default:
			kvs = append(kvs, p)
		}
	}
	f.KVs = append(kvs, moved[:]...)
}

// MMProjLayout plans the vision (mmproj) file of c.
func (c *Config) MMProjLayout() (*Layout, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Projector == ProjectorQwen3VL {
		return c.qwen3MMProjLayout()
	}
	spec, err := parseSpec(c.MMProjType)
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
	f := &Layout{}
	mat := func(name string, ne ...int64) {
		f.add(name, spec.Pick(quantize.RoleOther, ne[0], 0, 0), false, ne...)
	}
	vec := func(name string, norm bool, n int64) { f.add(name, gguf.TypeF32, norm, n) }
	norm := func(name string, n int64) {
		if qwen2 { // LayerNorm has a bias
			vec(name+".bias", false, n)
		}
		vec(name+".weight", true, n)
	}
	for i := range vi.Blocks {
		p := fmt.Sprintf("v.blk.%d.", i)
		vec(p+"attn_out.bias", false, W)
		mat(p+"attn_out.weight", W, W)
		for _, x := range []string{"q", "k", "v"} {
			vec(p+"attn_"+x+".bias", false, W)
		}
		for _, x := range []string{"q", "k", "v"} {
			mat(p+"attn_"+x+".weight", W, W)
		}
		if qwen2 { // fc1 → ffn_up, fc2 → ffn_down
			vec(p+"ffn_up.bias", false, I)
			mat(p+"ffn_up.weight", W, I)
			vec(p+"ffn_down.bias", false, W)
			mat(p+"ffn_down.weight", I, W)
		} else {
			vec(p+"ffn_down.bias", false, W)
			mat(p+"ffn_down.weight", I, W)
			vec(p+"ffn_gate.bias", false, I)
			mat(p+"ffn_gate.weight", W, I)
			vec(p+"ffn_up.bias", false, I)
			mat(p+"ffn_up.weight", W, I)
		}
		norm(p+"ln1", W)
		norm(p+"ln2", W)
	}
	norm("v.post_ln", W)
	vec("mm.0.bias", false, merged)
	mat("mm.0.weight", merged, merged)
	vec("mm.2.bias", false, D)
	mat("mm.2.weight", merged, D)
	// The converter keeps the patch embedding in F16 for --outtype f16 and in
	// F32 otherwise (its rows of 14 values fit no quantized block).
	patchType := gguf.TypeF32
	if spec.Base == gguf.TypeF16 {
		patchType = gguf.TypeF16
	}
	P := int64(vi.PatchSize)
	f.add("v.patch_embd.weight", patchType, false, P, P, 3, W)
	f.add("v.patch_embd.weight.1", patchType, false, P, P, 3, W)

	// Qwen2-VL's converter writes the vision config's hidden_size, which is
	// the LM width, as the feed-forward length; the real MLP width is only in
	// the tensor shapes.
	ffnLen := vi.FFN
	if qwen2 {
		ffnLen = c.LM.Hidden
	}
	const v = "clip.vision."
	f.KVs = append(generalKVs("clip", "mmproj", c.Name, c.BaseName, f.Tensors), c.visionKVs(spec, ffnLen)...)
	f.KVs = append(f.KVs, KV{"clip.projector_type", c.Projector})
	if !qwen2 {
		f.KVs = append(f.KVs,
			KV{"clip.use_silu", true},
			KV{v + "n_wa_pattern", uint32(vi.NWAPattern)},
		)
	}
	f.KVs = append(f.KVs,
		KV{v + "attention.layer_norm_epsilon", vi.Eps},
		KV{"general.quantization_version", uint32(quantizationVersion)},
	)
	return f, nil
}

// MVProjLayout plans the multi-vector projector side-car of c (format in
// the package doc).
func (c *Config) MVProjLayout() (*Layout, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	spec, err := parseSpec(c.MVProj.Type)
	if err != nil {
		return nil, err
	}
	switch spec.Base {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
	default:
		return nil, fmt.Errorf("qwenlayout: mvproj weight type %s: want F32, F16 or BF16", spec.Name)
	}
	if spec.Mix != "" {
		return nil, fmt.Errorf("qwenlayout: mvproj weight type %s: want F32, F16 or BF16", spec.Name)
	}
	f := &Layout{}
	in, out := int64(c.LM.Hidden), int64(c.MVProj.OutputDim)
	f.add("mvproj.weight", spec.Base, false, in, out)
	f.add("mvproj.bias", gguf.TypeF32, false, out)
	f.KVs = []KV{
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
