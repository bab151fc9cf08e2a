package qwenlayout

import (
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/quantize"
)

// Qwen3-VL pairs as llama.cpp's converter writes them (Qwen3VLTextModel and
// Qwen3VLVisionModel in convert_hf_to_gguf.py): an LM of architecture
// qwen3vl (a Qwen3 decoder: q/k/v without bias, per-head q/k RMSNorm,
// key_length free of hidden/heads, n_deepstack_layers) and a clip mmproj
// with projector qwen3vl_merger (patch embedding with a bias, a learned
// position table, fused qkv, DeepStack mergers named by their absolute
// block index). Key order and tensor names follow the shared fixtures'
// qwen3vl pair; tensor order is the converter's walk of the checkpoint's
// names, as for Qwen2-VL.

// llama.cpp's pooling types (LLAMA_POOLING_TYPE_*) the qwen3vl files use.
const (
	poolingLast = 3
	poolingRank = 4
)

// poolingTypes maps LMConfig.Pooling to the stored value.
var poolingTypes = map[string]uint32{"last": poolingLast, "rank": poolingRank}

// validateQwen3 checks what only a Qwen3-VL pair needs.
func (c *Config) validateQwen3() error {
	lm, vi := c.LM, c.Vision
	if _, ok := poolingTypes[lm.Pooling]; !ok && lm.Pooling != "" {
		return fmt.Errorf("qwenlayout: LM.Pooling %q: want \"\", \"last\" or \"rank\"", lm.Pooling)
	}
	// The tower's 2-D rotary splits each head into an h and a w half of
	// rotary pairs.
	if hd := vi.Width / vi.Heads; hd%4 != 0 {
		return fmt.Errorf("qwenlayout: vision head width %d is not a multiple of 4", hd)
	}
	if vi.PositionSide <= 0 || vi.PositionSide > 1024 {
		return fmt.Errorf("qwenlayout: Vision.PositionSide = %d out of range [1, 1024]", vi.PositionSide)
	}
	if len(vi.DeepStack) > lm.Layers {
		return fmt.Errorf("qwenlayout: %d DeepStack taps for a %d-layer LM", len(vi.DeepStack), lm.Layers)
	}
	for i, l := range vi.DeepStack {
		if l < 0 || l >= vi.Blocks || (i > 0 && l <= vi.DeepStack[i-1]) {
			return fmt.Errorf("qwenlayout: Vision.DeepStack %v: want ascending block indexes below %d", vi.DeepStack, vi.Blocks)
		}
	}
	return nil
}

// qwen3LMKVs returns the keys a qwen3vl LM has after the common ones, in
// the fixtures' order: the head width, the file type, the DeepStack count,
// and the pooling type and classifier labels when set.
func (c *Config) qwen3LMKVs(spec quantize.Spec) []KV {
	const a = "qwen3vl."
	hd := uint32(c.LM.HeadWidth())
	kvs := []KV{
		{a + "attention.key_length", hd},
		{a + "attention.value_length", hd},
		{"general.file_type", spec.FileType()},
		{a + "n_deepstack_layers", uint32(len(c.Vision.DeepStack))},
	}
	if p, ok := poolingTypes[c.LM.Pooling]; ok {
		kvs = append(kvs, KV{a + "pooling_type", p})
	}
	if c.LM.Pooling == "rank" {
		kvs = append(kvs, KV{a + "classifier.output_labels", []string{"yes", "no"}})
	}
	return kvs
}

// qwen3MMProjLayout plans a qwen3vl_merger vision file.
func (c *Config) qwen3MMProjLayout() (*Layout, error) {
	spec, err := parseSpec(c.MMProjType)
	if err != nil {
		return nil, err
	}
	spec.Mix = "" // as for Qwen2-VL: llama-quantize does not process mmproj files
	vi := c.Vision
	W, I, D := int64(vi.Width), int64(vi.FFN), int64(c.LM.Hidden)
	unit := 4 * W // a 2×2 merge window
	f := &Layout{}
	mat := func(name string, ne ...int64) {
		f.add(name, spec.Pick(quantize.RoleOther, ne[0], 0, 0), false, ne...)
	}
	vec := func(name string, norm bool, n int64) { f.add(name, gguf.TypeF32, norm, n) }
	linear := func(name string, in, out int64) {
		vec(name+".bias", false, out)
		mat(name+".weight", in, out)
	}
	norm := func(name string, n int64) {
		vec(name+".bias", false, n)
		vec(name+".weight", true, n)
	}
	for i := range vi.Blocks {
		p := fmt.Sprintf("v.blk.%d.", i)
		linear(p+"attn_out", W, W)
		linear(p+"attn_qkv", W, 3*W)
		linear(p+"ffn_up", W, I) // mlp.linear_fc1
		linear(p+"ffn_down", I, W)
		norm(p+"ln1", W)
		norm(p+"ln2", W)
	}
	for _, l := range vi.DeepStack {
		p := fmt.Sprintf("v.deepstack.%d.", l)
		linear(p+"fc1", unit, unit)
		linear(p+"fc2", unit, D)
		norm(p+"norm", unit)
	}
	linear("mm.0", unit, unit) // merger.linear_fc1
	linear("mm.2", unit, D)
	norm("v.post_ln", W)
	// The patch embedding's rows (PatchSize values, 16) fit no 32-value
	// block: F16 in an F16 file, F32 otherwise, as for Qwen2-VL.
	patchType := gguf.TypeF32
	if spec.Base == gguf.TypeF16 {
		patchType = gguf.TypeF16
	}
	P := int64(vi.PatchSize)
	vec("v.patch_embd.bias", false, W)
	f.add("v.patch_embd.weight", patchType, false, P, P, 3, W)
	f.add("v.patch_embd.weight.1", patchType, false, P, P, 3, W)
	// The converter and llama-quantize keep position tables in F32.
	side := int64(vi.PositionSide)
	f.add("v.position_embd.weight", gguf.TypeF32, false, W, side*side)

	flags := make([]bool, vi.Blocks)
	for _, l := range vi.DeepStack {
		flags[l] = true
	}
	const v = "clip.vision."
	f.KVs = append(generalKVs("clip", "mmproj", c.Name, c.BaseName, f.Tensors), c.visionKVs(spec, vi.FFN)...)
	f.KVs = append(f.KVs,
		KV{"clip.projector_type", ProjectorQwen3VL},
		KV{"clip.use_gelu", true},
		KV{v + "spatial_merge_size", uint32(2)},
		// The converter stores the text config's rms_norm_eps here, which
		// equals the tower's LayerNorm eps in the released models.
		KV{v + "attention.layer_norm_epsilon", vi.Eps},
	)
	if len(vi.DeepStack) > 0 || c.LM.IsQwen35() { // Qwen3.5's converter writes the flags, all false
		f.KVs = append(f.KVs, KV{v + "is_deepstack_layers", flags})
	}
	f.KVs = append(f.KVs, KV{"general.quantization_version", uint32(quantizationVersion)})
	return f, nil
}
