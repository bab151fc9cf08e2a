package qwenlayout

import (
	"fmt"
	"regexp"
	"slices"
)

// One table says which Hugging Face checkpoint tensor each GGUF tensor of a
// Qwen2-VL / Qwen2.5-VL / Qwen3-VL pair comes from, as llama.cpp's
// convert_hf_to_gguf.py maps them. Package synth uses it to name the tensors
// of a synthetic checkpoint, package convert to find the values of every
// tensor a Layout plans. Checkpoint names are given with the canonical
// prefixes of Qwen2VLForConditionalGeneration checkpoints ("model." for
// the decoder, "visual." for the tower, "lm_head."); other exports'
// prefixes are the reader's business.

// Hugging Face checkpoint layouts: how a family's release lays out its
// files and names its tensors (package convert reads them, package synth
// writes synthetic ones).
const (
	// LayoutJinaV4 is jina-embeddings-v4: a Qwen2.5-VL checkpoint with
	// multi_vector_projector, and under adapters/ one PEFT LoRA adapter
	// holding every task's A/B pair ("lora_A.<task>.weight").
	LayoutJinaV4 = "jina-v4"
	// LayoutColQwen25 and LayoutColQwen2 are colpali-engine's ColQwen2.5 /
	// ColQwen2: the base model with custom_text_proj, and a LoRA adapter
	// (adapter_config.json, adapter_model.safetensors) beside it.
	LayoutColQwen25 = "colqwen2.5"
	LayoutColQwen2  = "colqwen2"
	// LayoutGME is GME-Qwen2-VL: a plain Qwen2-VL checkpoint.
	LayoutGME = "gme"
	// LayoutQwen3VL is Qwen3-VL-Embedding: a plain
	// Qwen3VLForConditionalGeneration checkpoint (model.language_model.,
	// model.visual.).
	LayoutQwen3VL = "qwen3-vl"
	// LayoutQwen3VLReranker is Qwen3-VL-Reranker: the same form, told by
	// its name; the converter keeps the LM head's "yes" and "no" rows.
	LayoutQwen3VLReranker = "qwen3-vl-reranker"
	// LayoutColQwen3 is TomoroAI's ColQwen3 (tomoro-colqwen3-embed): the
	// Qwen3-VL backbone under vlm.model. (vlm.model.language_model.,
	// vlm.model.visual.; vlm.lm_head. when untied) and the head
	// embedding_proj_layer [embed_dim, H] with a bias.
	LayoutColQwen3 = "colqwen3"
	// LayoutOpsColQwen3 is OpenSearch-AI's Ops-ColQwen3: the backbone with
	// no outer prefix (language_model., visual.) and the head
	// custom_text_proj [H, H] with a bias, whose first dims rows are used.
	LayoutOpsColQwen3 = "ops-colqwen3"
	// LayoutNemotronColEmbed is NVIDIA's nemotron-colembed-vl-v2: stock
	// Qwen3-VL names, no head; a bidirectional decoder read before its
	// final norm.
	LayoutNemotronColEmbed = "nemotron-colembed-vl"
)

// Layouts lists the checkpoint layouts.
func Layouts() []string {
	return []string{LayoutJinaV4, LayoutColQwen25, LayoutColQwen2, LayoutGME, LayoutQwen3VL, LayoutQwen3VLReranker,
		LayoutColQwen3, LayoutOpsColQwen3, LayoutNemotronColEmbed}
}

// JinaTasks are jina-embeddings-v4's task adapters.
var JinaTasks = []string{"retrieval", "text-matching", "code"}

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
	// Rows, when set, are the rows of Name the GGUF tensor holds, in
	// order: the reranker's cls.output.weight is the LM head's rows of
	// "yes" and "no".
	Rows []int
}

// HFNaming is what names a pair's checkpoint tensors beyond the GGUF name:
// the tower's projector type and, for Qwen3-VL, the DeepStack taps (the
// checkpoint numbers its mergers 0, 1, ... where the GGUF uses the block
// index), whether the LM head is tied to the embeddings, and the token ids
// of "yes" and "no" (the reranker's head).
type HFNaming struct {
	Projector string
	DeepStack []int
	Tied      bool
	Yes, No   int
}

type hfRule struct {
	re   *regexp.Regexp
	hf   string
	only string // projector the rule applies to ("" for all)
}

var hfRules = []hfRule{
	// Qwen3-VL first: its tower reuses GGUF names whose sources differ.
	{re: regexp.MustCompile(`^blk\.(\d+)\.attn_(q|k)_norm\.weight$`), hf: "model.layers.$1.self_attn.${2}_norm.weight", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.attn_qkv\.(weight|bias)$`), hf: "visual.blocks.$1.attn.qkv.$2", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_up\.(weight|bias)$`), hf: "visual.blocks.$1.mlp.linear_fc1.$2", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_down\.(weight|bias)$`), hf: "visual.blocks.$1.mlp.linear_fc2.$2", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^v\.post_ln\.(weight|bias)$`), hf: "visual.merger.norm.$1", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^mm\.0\.(weight|bias)$`), hf: "visual.merger.linear_fc1.$1", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^mm\.2\.(weight|bias)$`), hf: "visual.merger.linear_fc2.$1", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^v\.patch_embd\.bias$`), hf: "visual.patch_embed.proj.bias", only: ProjectorQwen3VL},
	{re: regexp.MustCompile(`^v\.position_embd\.weight$`), hf: "visual.pos_embed.weight", only: ProjectorQwen3VL},

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
	qkvRule       = regexp.MustCompile(`^v\.blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$`)
	patchRule     = regexp.MustCompile(`^v\.patch_embd\.weight(?:\.(\d+))?$`)
	deepStackRule = regexp.MustCompile(`^v\.deepstack\.(\d+)\.(norm|fc1|fc2)\.(weight|bias)$`)
)

// TemporalPatch is the temporal extent of the Qwen2-VL / Qwen2.5-VL Conv3D
// patch embedding (two frames; a still image is repeated).
const TemporalPatch = 2

// HFSourceOf returns the checkpoint source of a GGUF tensor of a pair
// named by n.
func HFSourceOf(name string, n HFNaming) (HFSource, bool) {
	if n.Projector != ProjectorQwen3VL {
		if m := qkvRule.FindStringSubmatch(name); m != nil {
			part := map[string]int{"q": 0, "k": 1, "v": 2}[m[2]]
			return HFSource{Name: "visual.blocks." + m[1] + ".attn.qkv." + m[3], Part: part, Parts: 3}, true
		}
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
	if n.Projector == ProjectorQwen3VL {
		if m := deepStackRule.FindStringSubmatch(name); m != nil {
			var block int
			fmt.Sscan(m[1], &block)
			k := slices.Index(n.DeepStack, block)
			if k < 0 {
				return HFSource{}, false
			}
			part := map[string]string{"norm": "norm", "fc1": "linear_fc1", "fc2": "linear_fc2"}[m[2]]
			return HFSource{Name: fmt.Sprintf("visual.deepstack_merger_list.%d.%s.%s", k, part, m[3]), Parts: 1}, true
		}
		if name == "cls.output.weight" {
			head := "lm_head.weight"
			if n.Tied {
				head = "model.embed_tokens.weight"
			}
			return HFSource{Name: head, Parts: 1, Rows: []int{n.Yes, n.No}}, true
		}
	}
	for _, r := range hfRules {
		if (r.only == "" || r.only == n.Projector) && r.re.MatchString(name) {
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
// the layout's order of first use, with their PyTorch shapes. The LM head
// a reranker's rows come from is as wide as vocab.
func HFTensors(l *Layout, n HFNaming, vocab int) ([]HFTensor, error) {
	var out []HFTensor
	seen := map[string]bool{}
	for _, t := range l.Tensors {
		src, ok := HFSourceOf(t.Name, n)
		if !ok {
			return nil, fmt.Errorf("qwenlayout: no checkpoint tensor for %s", t.Name)
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
				return nil, fmt.Errorf("qwenlayout: %s: patch embedding ne %v", t.Name, t.NE)
			}
			shape = []int64{t.NE[3], t.NE[2], TemporalPatch, t.NE[1], t.NE[0]}
		case src.Parts > 1:
			shape[0] *= int64(src.Parts)
		case src.Rows != nil:
			shape[0] = int64(vocab)
		}
		out = append(out, HFTensor{Name: src.Name, Shape: shape, Norm: t.Norm})
	}
	return out, nil
}
