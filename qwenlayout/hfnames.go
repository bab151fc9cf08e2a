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
	// LayoutColQwen35 is colpali-engine's ColQwen3.5 (a Qwen3_5Model:
	// language_model., visual.) with custom_text_proj (with a bias) in one
	// of three forms its config.json chooses: dim alone, one Linear;
	// head_dims with mrl_prefix, one Linear to the widest whose prefixes
	// are the Matryoshka widths; head_dims alone, one Linear per width
	// (custom_text_proj.d64 ... .d2048).
	LayoutColQwen35 = "colqwen3.5"
	// LayoutColVec is webAI's ColVec1.1: the Qwen3.5 backbone and the head
	// embedding_proj_layer (640 rows, with a bias), bidirectional.
	LayoutColVec = "colvec1.1"
)

// Layouts lists the checkpoint layouts.
func Layouts() []string {
	return []string{LayoutJinaV4, LayoutColQwen25, LayoutColQwen2, LayoutGME, LayoutQwen3VL, LayoutQwen3VLReranker,
		LayoutColQwen3, LayoutOpsColQwen3, LayoutNemotronColEmbed, LayoutColQwen35, LayoutColVec}
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
	// Transform changes the values on the way (Qwen3.5's norms and
	// A_log), and Heads, when set, permutes Qwen3.5's value heads.
	Transform Transform
	Heads     *HeadOrder
	// Shape, when set, is the checkpoint tensor's shape where it is not
	// the GGUF one reversed (Qwen3.5's conv1d kernel, [C, 1, K]).
	Shape []int64
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
	// DeltaNet is a Qwen3.5 LM's (zero for the others), whose naming and
	// value changes it decides.
	DeltaNet DeltaNetConfig
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
	if n.DeltaNet.Interval > 0 {
		if src, ok := qwen35Source(name, n.DeltaNet); ok {
			return src, true
		}
	}
	for _, r := range hfRules {
		if (r.only == "" || r.only == n.Projector) && r.re.MatchString(name) {
			src := HFSource{Name: r.re.ReplaceAllString(name, r.hf), Parts: 1}
			if n.DeltaNet.Interval > 0 && onePlusNorm.MatchString(name) {
				src.Transform = TransformPlusOne
			}
			return src, true
		}
	}
	return HFSource{}, false
}

var (
	qwen35Rule  = regexp.MustCompile(`^blk\.(\d+)\.(post_attention_norm\.weight|attn_qkv\.weight|attn_gate\.weight|ssm_beta\.weight|ssm_alpha\.weight|ssm_conv1d\.weight|ssm_dt\.bias|ssm_a|ssm_norm\.weight|ssm_out\.weight)$`)
	onePlusNorm = regexp.MustCompile(`^(output_norm|blk\.\d+\.(attn_norm|post_attention_norm|attn_q_norm|attn_k_norm))\.weight$`)
)

// qwen35Source names the sources of the tensors only a Qwen3.5 LM has.
func qwen35Source(name string, d DeltaNetConfig) (HFSource, bool) {
	m := qwen35Rule.FindStringSubmatch(name)
	if m == nil {
		return HFSource{}, false
	}
	p := "model.layers." + m[1] + "."
	qk := 2 * d.KeyHeads * d.KeyDim
	heads := func(skip, width int, cols bool) *HeadOrder {
		if d.ValueHeads == d.KeyHeads { // one value head a key head: no change
			return nil
		}
		return &HeadOrder{Skip: skip, KeyHeads: d.KeyHeads, PerKey: d.ValueHeads / d.KeyHeads, Width: width, Columns: cols}
	}
	src := HFSource{Parts: 1}
	switch m[2] {
	case "post_attention_norm.weight":
		src.Name, src.Transform = p+"post_attention_layernorm.weight", TransformPlusOne
	case "attn_qkv.weight":
		src.Name, src.Heads = p+"linear_attn.in_proj_qkv.weight", heads(qk, d.ValueDim, false)
	case "attn_gate.weight":
		src.Name, src.Heads = p+"linear_attn.in_proj_z.weight", heads(0, d.ValueDim, false)
	case "ssm_beta.weight":
		src.Name, src.Heads = p+"linear_attn.in_proj_b.weight", heads(0, 1, false)
	case "ssm_alpha.weight":
		src.Name, src.Heads = p+"linear_attn.in_proj_a.weight", heads(0, 1, false)
	case "ssm_conv1d.weight":
		src.Name, src.Heads = p+"linear_attn.conv1d.weight", heads(qk, d.ValueDim, false)
		src.Shape = []int64{d.qkvWidth(), 1, int64(d.ConvKernel)}
	case "ssm_dt.bias":
		src.Name, src.Heads = p+"linear_attn.dt_bias", heads(0, 1, false)
	case "ssm_a":
		src.Name, src.Heads, src.Transform = p+"linear_attn.A_log", heads(0, 1, false), TransformNegExp
	case "ssm_norm.weight":
		src.Name = p + "linear_attn.norm.weight" // a plain weight: no 1 added
	case "ssm_out.weight":
		src.Name, src.Heads = p+"linear_attn.out_proj.weight", heads(0, d.ValueDim, true)
	}
	return src, true
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
		case src.Shape != nil:
			shape = slices.Clone(src.Shape)
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
		// A (1+w) norm's checkpoint weight is w, around 0.
		out = append(out, HFTensor{Name: src.Name, Shape: shape, Norm: t.Norm && src.Transform != TransformPlusOne})
	}
	return out, nil
}
