package synth

import (
	"fmt"
	"regexp"
	"slices"
)

// One table says which Hugging Face checkpoint tensor each GGUF tensor of a
// Qwen2-VL / Qwen2.5-VL pair comes from, as llama.cpp's
// convert_hf_to_gguf.py maps them. WriteHF uses it to name the tensors of
// a synthetic checkpoint; the converter uses it to find the values of every
// tensor a Layout plans. Checkpoint names are given with the canonical
// prefixes of Qwen2VLForConditionalGeneration checkpoints ("model." for
// the decoder, "visual." for the tower, "lm_head."); other exports'
// prefixes are the reader's business.

// HFSource locates a GGUF tensor's values in a checkpoint.
type HFSource struct {
	// Name is the checkpoint tensor.
	Name string
	// Parts > 1 means the GGUF tensor is the Part-th of Parts slices of
	// Name: equal blocks of rows (the fused vision qkv), or, when Temporal
	// is set, the Part-th temporal slice of the Conv3D patch embedding
	// [W, 3, T, p, p].
	Part, Parts int
	Temporal    bool
}

type hfRule struct {
	re   *regexp.Regexp
	hf   string
	only string // projector the rule applies to ("" for all)
}

var hfRules = []hfRule{
	{re: regexp.MustCompile(`^token_embd\.weight$`), hf: "model.embed_tokens.weight"},
	{re: regexp.MustCompile(`^output_norm\.weight$`), hf: "model.norm.weight"},
	{re: regexp.MustCompile(`^output\.weight$`), hf: "lm_head.weight"},
	{re: regexp.MustCompile(`^blk\.(\d+)\.attn_norm\.weight$`), hf: "model.layers.$1.input_layernorm.weight"},
	{re: regexp.MustCompile(`^blk\.(\d+)\.ffn_norm\.weight$`), hf: "model.layers.$1.post_attention_layernorm.weight"},
	{re: regexp.MustCompile(`^blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$`), hf: "model.layers.$1.self_attn.${2}_proj.$3"},
	{re: regexp.MustCompile(`^blk\.(\d+)\.attn_output\.weight$`), hf: "model.layers.$1.self_attn.o_proj.weight"},
	{re: regexp.MustCompile(`^blk\.(\d+)\.ffn_(gate|up|down)\.weight$`), hf: "model.layers.$1.mlp.${2}_proj.weight"},

	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.ln(1|2)\.(weight|bias)$`), hf: "visual.blocks.$1.norm$2.$3"},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.attn_out\.(weight|bias)$`), hf: "visual.blocks.$1.attn.proj.$2"},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_(gate|up|down)\.(weight|bias)$`), hf: "visual.blocks.$1.mlp.${2}_proj.$3", only: ProjectorQwen25VL},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_up\.(weight|bias)$`), hf: "visual.blocks.$1.mlp.fc1.$2", only: ProjectorQwen2VL},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_down\.(weight|bias)$`), hf: "visual.blocks.$1.mlp.fc2.$2", only: ProjectorQwen2VL},
	{re: regexp.MustCompile(`^v\.post_ln\.(weight|bias)$`), hf: "visual.merger.ln_q.$1"},
	{re: regexp.MustCompile(`^mm\.(0|2)\.(weight|bias)$`), hf: "visual.merger.mlp.$1.$2"},
}

var (
	qkvRule   = regexp.MustCompile(`^v\.blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$`)
	patchRule = regexp.MustCompile(`^v\.patch_embd\.weight(?:\.(\d+))?$`)
)

// TemporalPatch is the temporal extent of the Qwen2-VL / Qwen2.5-VL Conv3D
// patch embedding (two frames; a still image is repeated).
const TemporalPatch = 2

// HFSourceOf returns the checkpoint source of a GGUF tensor of a
// Qwen2-VL / Qwen2.5-VL pair whose tower has the given projector type.
func HFSourceOf(name, projector string) (HFSource, bool) {
	if m := qkvRule.FindStringSubmatch(name); m != nil {
		part := map[string]int{"q": 0, "k": 1, "v": 2}[m[2]]
		return HFSource{Name: "visual.blocks." + m[1] + ".attn.qkv." + m[3], Part: part, Parts: 3}, true
	}
	if m := patchRule.FindStringSubmatch(name); m != nil {
		part := 0
		if m[1] != "" {
			fmt.Sscan(m[1], &part)
		}
		if part >= TemporalPatch {
			return HFSource{}, false
		}
		return HFSource{Name: "visual.patch_embed.proj.weight", Part: part, Parts: TemporalPatch, Temporal: true}, true
	}
	for _, r := range hfRules {
		if (r.only == "" || r.only == projector) && r.re.MatchString(name) {
			return HFSource{Name: r.re.ReplaceAllString(name, r.hf), Parts: 1}, true
		}
	}
	return HFSource{}, false
}

// HFTensor is a checkpoint tensor with its PyTorch shape (outermost first).
type HFTensor struct {
	Name  string
	Shape []int64
	Norm  bool
}

// HFTensors lists the checkpoint tensors a layout's tensors come from, in
// the layout's order of first use, with their PyTorch shapes.
func HFTensors(l *Layout, projector string) ([]HFTensor, error) {
	var out []HFTensor
	seen := map[string]bool{}
	for _, t := range l.Tensors {
		src, ok := HFSourceOf(t.Name, projector)
		if !ok {
			return nil, fmt.Errorf("synth: no checkpoint tensor for %s", t.Name)
		}
		if seen[src.Name] {
			continue
		}
		seen[src.Name] = true
		shape := slices.Clone(t.NE)
		slices.Reverse(shape)
		switch {
		case src.Temporal: // ne [p, p, 3, W] → [W, 3, T, p, p]
			if len(t.NE) != 4 {
				return nil, fmt.Errorf("synth: %s: patch embedding ne %v", t.Name, t.NE)
			}
			shape = []int64{t.NE[3], t.NE[2], TemporalPatch, t.NE[1], t.NE[0]}
		case src.Parts > 1:
			shape[0] *= int64(src.Parts)
		}
		out = append(out, HFTensor{Name: src.Name, Shape: shape, Norm: t.Norm})
	}
	return out, nil
}
