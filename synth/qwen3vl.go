package synth

import (
	"fmt"

	"github.com/vembed/vembed/gguf"
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

// qwen3Mean and qwen3Std are Qwen3-VL's normalization (mean = std = 0.5).
var (
	qwen3Mean = [3]float32{0.5, 0.5, 0.5}
	qwen3Std  = [3]float32{0.5, 0.5, 0.5}
)

func qwen3BaseConfig() Config {
	c := baseConfig()
	c.BaseName = "synthetic-qwen3-vl"
	c.Projector = ProjectorQwen3VL
	c.LM.ContextLength = 262144
	c.LM.RopeTheta = 5e6
	c.Vision.PatchSize = 16
	c.Vision.ImageSize = 768 // what the converter derives: √2304 · 16
	c.Vision.PositionSide = 48
	c.Vision.ImageMean, c.Vision.ImageStd = qwen3Mean, qwen3Std
	return c
}

func tinyQwen3VLPreset() Config {
	c := qwen3BaseConfig()
	c.Name = "synthetic-qwen3-vl-tiny"
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 64, 3, 4, 2, 128
	c.LM.HeadDim = 32 // q is 128 wide: key_length != hidden/heads, as in the fixture
	c.LM.Vocab = 512
	c.LM.MRoPE = [4]int32{6, 5, 5, 0}
	c.LM.Pooling = "last"
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 32, 4, 2, 64
	c.Vision.DeepStack = []int{0, 2, 3}
	return c
}

// qwen3VL2B has the shapes shared by Qwen3-VL-Embedding-2B and
// Qwen3-VL-Reranker-2B (both Qwen3-VL-2B fine-tunes).
func qwen3VL2B() Config {
	c := qwen3BaseConfig()
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 2048, 28, 16, 8, 6144
	c.LM.HeadDim = 128
	c.LM.Vocab = 151936
	c.LM.MRoPE = [4]int32{24, 20, 20, 0}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 1024, 24, 16, 4096
	c.Vision.DeepStack = []int{5, 11, 17}
	return c
}

func qwen3VLEmbedding2BPreset() Config {
	c := qwen3VL2B()
	c.Name = "synthetic-qwen3-vl-embedding-2b"
	return c
}

func qwen3VLReranker2BPreset() Config {
	c := qwen3VL2B()
	c.Name = "synthetic-qwen3-vl-reranker-2b"
	c.LM.Pooling = "rank"
	return c
}

// validateQwen3 checks what only a Qwen3-VL pair needs.
func (c *Config) validateQwen3() error {
	lm, vi := c.LM, c.Vision
	if _, ok := poolingTypes[lm.Pooling]; !ok && lm.Pooling != "" {
		return fmt.Errorf("synth: LM.Pooling %q: want \"\", \"last\" or \"rank\"", lm.Pooling)
	}
	// The tower's 2-D rotary splits each head into an h and a w half of
	// rotary pairs.
	if hd := vi.Width / vi.Heads; hd%4 != 0 {
		return fmt.Errorf("synth: vision head width %d is not a multiple of 4", hd)
	}
	if vi.PositionSide <= 0 || vi.PositionSide > 1024 {
		return fmt.Errorf("synth: Vision.PositionSide = %d out of range [1, 1024]", vi.PositionSide)
	}
	if len(vi.DeepStack) > lm.Layers {
		return fmt.Errorf("synth: %d DeepStack taps for a %d-layer LM", len(vi.DeepStack), lm.Layers)
	}
	for i, l := range vi.DeepStack {
		if l < 0 || l >= vi.Blocks || (i > 0 && l <= vi.DeepStack[i-1]) {
			return fmt.Errorf("synth: Vision.DeepStack %v: want ascending block indexes below %d", vi.DeepStack, vi.Blocks)
		}
	}
	return nil
}

// qwen3LMKVs returns the keys a qwen3vl LM has after the common ones, in
// the fixtures' order: the head width, the file type, the DeepStack count,
// and the pooling type and classifier labels when set.
func (c *Config) qwen3LMKVs(spec TypeSpec) []kv {
	const a = "qwen3vl."
	hd := uint32(c.LM.headDim())
	kvs := []kv{
		{a + "attention.key_length", hd},
		{a + "attention.value_length", hd},
		{"general.file_type", spec.FileType()},
		{a + "n_deepstack_layers", uint32(len(c.Vision.DeepStack))},
	}
	if p, ok := poolingTypes[c.LM.Pooling]; ok {
		kvs = append(kvs, kv{a + "pooling_type", p})
	}
	if c.LM.Pooling == "rank" {
		kvs = append(kvs, kv{a + "classifier.output_labels", []string{"yes", "no"}})
	}
	return kvs
}

// qwen3MMProjSpec plans a qwen3vl_merger vision file.
func (c *Config) qwen3MMProjSpec() (*fileSpec, error) {
	spec, err := ParseTypeSpec(c.MMProjType)
	if err != nil {
		return nil, err
	}
	spec.Mix = "" // as for Qwen2-VL: llama-quantize does not process mmproj files
	vi := c.Vision
	W, I, D := int64(vi.Width), int64(vi.FFN), int64(c.LM.Hidden)
	unit := 4 * W // a 2×2 merge window
	f := &fileSpec{seed: c.Seed + 1, std: c.Std}
	mat := func(name string, ne ...int64) {
		f.add(name, spec.Pick(roleOther, ne[0], 0, 0), initWeight, ne...)
	}
	vec := func(name string, init initKind, n int64) { f.add(name, gguf.TypeF32, init, n) }
	linear := func(name string, in, out int64) {
		vec(name+".bias", initWeight, out)
		mat(name+".weight", in, out)
	}
	norm := func(name string, n int64) {
		vec(name+".bias", initWeight, n)
		vec(name+".weight", initNorm, n)
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
	vec("v.patch_embd.bias", initWeight, W)
	f.add("v.patch_embd.weight", patchType, initWeight, P, P, 3, W)
	f.add("v.patch_embd.weight.1", patchType, initWeight, P, P, 3, W)
	// The converter and llama-quantize keep position tables in F32.
	side := int64(vi.PositionSide)
	f.add("v.position_embd.weight", gguf.TypeF32, initWeight, W, side*side)

	flags := make([]bool, vi.Blocks)
	for _, l := range vi.DeepStack {
		flags[l] = true
	}
	const v = "clip.vision."
	f.kvs = append(generalKVs("clip", "mmproj", c.Name, c.BaseName, f.tensors), c.visionKVs(spec, vi.FFN)...)
	f.kvs = append(f.kvs,
		kv{"clip.projector_type", ProjectorQwen3VL},
		kv{"clip.use_gelu", true},
		kv{v + "spatial_merge_size", uint32(2)},
		// The converter stores the text config's rms_norm_eps here, which
		// equals the tower's LayerNorm eps in the released models.
		kv{v + "attention.layer_norm_epsilon", vi.Eps},
	)
	if len(vi.DeepStack) > 0 {
		f.kvs = append(f.kvs, kv{v + "is_deepstack_layers", flags})
	}
	f.kvs = append(f.kvs, kv{"general.quantization_version", uint32(quantizationVersion)})
	return f, nil
}
