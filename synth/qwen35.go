package synth

import (
	"strconv"

	"github.com/vembed/vembed/qwenlayout"
)

// tinyQwen35Preset has the shapes of the shared fixtures' tiny Qwen3.5
// pair: LM 64 wide, 4 layers (3 DeltaNet, 1 gated full attention), 4/2
// heads of 32 with 8 rotary dimensions (sections [2,1,1]), FFN 128,
// DeltaNet 2 key / 4 value heads of 16, convolution 4; ViT 32 wide, 4
// blocks, 2 heads, FFN 64, patch 16, no DeepStack; the 512-token
// vocabulary.
func tinyQwen35Preset() Config {
	c := qwen3BaseConfig()
	c.Name, c.BaseName = "synthetic-qwen3.5-tiny", "synthetic-qwen3.5"
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 64, 4, 4, 2, 128
	c.LM.HeadDim = 32
	c.LM.Vocab = 512
	c.LM.RopeTheta = 1e7
	c.LM.MRoPE = [4]int32{2, 1, 1, 0}
	c.LM.DeltaNet = qwenlayout.DeltaNetConfig{Interval: 4, KeyHeads: 2, ValueHeads: 4, KeyDim: 16, ValueDim: 16, ConvKernel: 4, RopeDims: 8}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 32, 4, 2, 64
	c.MVProj.OutputDim = 32 // a retriever's head, narrower than the LM
	return c
}

// qwen35HFConfig is a Qwen3.5 config.json (Qwen3_5ForConditionalGeneration):
// Qwen3-VL's with text_config's hybrid decoder fields and rope_parameters,
// and a vision_config without DeepStack.
func qwen35HFConfig(cfg Config, v *qwenlayout.Vocab, o HFOptions, id func(string) int) map[string]any {
	lm, d := cfg.LM, cfg.LM.DeltaNet
	types := make([]string, lm.Layers)
	for i := range types {
		types[i] = "linear_attention"
		if d.FullAttention(i) {
			types[i] = "full_attention"
		}
	}
	c := qwen3HFConfig(cfg, v, o, id)
	c["architectures"], c["model_type"] = []string{"Qwen3_5ForConditionalGeneration"}, "qwen3_5"
	tc, vc := c["text_config"].(map[string]any), c["vision_config"].(map[string]any)
	delete(tc, "rope_theta")
	delete(tc, "rope_scaling")
	delete(tc, "tie_word_embeddings")
	delete(vc, "deepstack_visual_indexes")
	vc["model_type"] = "qwen3_5"
	for k, val := range map[string]any{
		"model_type": "qwen3_5_text",
		"rope_parameters": map[string]any{
			"rope_type": "default", "rope_theta": lm.RopeTheta, "mrope_interleaved": true,
			"mrope_section": lm.MRoPE[:3], "partial_rotary_factor": float64(d.RopeDims) / float64(lm.HeadWidth()),
		},
		"full_attention_interval": d.Interval,
		"layer_types":             types,
		"linear_num_key_heads":    d.KeyHeads,
		"linear_num_value_heads":  d.ValueHeads,
		"linear_key_head_dim":     d.KeyDim,
		"linear_value_head_dim":   d.ValueDim,
		"linear_conv_kernel_dim":  d.ConvKernel,
		"attn_output_gate":        true,
	} {
		tc[k] = val
	}
	return c
}

// qwen35Head lists the head tensors of a Qwen3.5 retriever's checkpoint:
// ColVec1.1's embedding_proj_layer, ColQwen3.5's custom_text_proj (one
// Linear of OutputDim rows, the widest of HeadDims with MRLPrefix) or one
// custom_text_proj.dW per width of HeadDims.
func qwen35Head(cfg Config, o HFOptions, head string) []qwenlayout.HFTensor {
	H := int64(cfg.LM.Hidden)
	linear := func(name string, rows int64) []qwenlayout.HFTensor {
		return []qwenlayout.HFTensor{{Name: name + ".weight", Shape: []int64{rows, H}}, {Name: name + ".bias", Shape: []int64{rows}}}
	}
	switch {
	case len(o.HeadDims) > 0 && !o.MRLPrefix:
		var ts []qwenlayout.HFTensor
		for _, d := range o.HeadDims {
			ts = append(ts, linear(head+".d"+strconv.Itoa(d), int64(d))...)
		}
		return ts
	case len(o.HeadDims) > 0:
		return linear(head, int64(o.HeadDims[len(o.HeadDims)-1]))
	}
	return linear(head, int64(cfg.MVProj.OutputDim))
}

// qwen35Release adds a Qwen3.5 retriever's config.json fields.
func qwen35Release(c map[string]any, cfg Config, o HFOptions) {
	switch o.Layout {
	case qwenlayout.LayoutColQwen35:
		// colpali-engine saves ColQwen3_5, a Qwen3_5Model.
		c["architectures"] = []string{"ColQwen3_5"}
		if len(o.HeadDims) > 0 {
			c["head_dims"], c["mrl_prefix"] = o.HeadDims, o.MRLPrefix
			c["dim"] = o.HeadDims[len(o.HeadDims)-1]
		} else {
			c["dim"], c["embed_dim"] = cfg.MVProj.OutputDim, cfg.MVProj.OutputDim
		}
		if cfg.Vision.MaxPixels > 0 {
			c["max_num_visual_tokens"] = cfg.Vision.MaxPixels / (32 * 32)
		}
	case qwenlayout.LayoutColVec:
		c["architectures"] = []string{"ColVec1_1"}
		c["embed_dim"], c["is_causal"] = cfg.MVProj.OutputDim, false
	}
}

// colVec4BPreset is webAI-ColVec1.1-4b as vembed convert writes it, on the
// shapes of Qwen3.5-4B: LM 2560 wide, 32 layers (24 Gated DeltaNet, 8 gated
// full attention, bidirectional), 16/4 heads of 256 with 64 rotary
// dimensions (sections [11,11,10]), FFN 9216, DeltaNet 16 key / 32 value
// heads of 128, convolution 4, θ 1e7; the Qwen3-VL-4B tower without
// DeepStack taps; a 640-wide head (the mvproj, with --mvproj) and
// ColVec1.1's budget of 1792 image tokens.
func colVec4BPreset() Config {
	c := qwen3VL4B()
	c.Name, c.BaseName = "synthetic-colvec1.1-4b", "synthetic-qwen3.5"
	c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 32, 16, 4, 9216
	c.LM.HeadDim = 256
	c.LM.RopeTheta = 1e7
	c.LM.MRoPE = [4]int32{11, 11, 10, 0}
	c.LM.DeltaNet = qwenlayout.DeltaNetConfig{Interval: 4, KeyHeads: 16, ValueHeads: 32, KeyDim: 128, ValueDim: 128, ConvKernel: 4, RopeDims: 64}
	c.Vision.DeepStack = nil
	c.Vision.MinPixels, c.Vision.MaxPixels = 65536, 1792*1024
	c.MVProj = qwenlayout.MVProjConfig{OutputDim: 640, Normalize: true, Type: "F32"}
	c.LM.Extra = []qwenlayout.KV{{Key: recipeKey, Value: recipeColVec}, {Key: qwenlayout.Qwen35CausalKey, Value: false}}
	return c
}

// qwen35Split is Qwen3.5's tokenizer.json split pattern: Qwen2's, with
// combining marks (\p{M}) in words.
const qwen35Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// preTokenizer is tokenizer.json's pre_tokenizer: Qwen3.5's split pattern
// for a Qwen3.5 LM (which the converter reads as llama.cpp's qwen35),
// none stated for the others (read as qwen2).
func preTokenizer(cfg Config) map[string]any {
	if !cfg.LM.IsQwen35() {
		return map[string]any{"type": "Sequence"}
	}
	return map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwen35Split}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
	}}
}
