package convert

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vembed/vembed/qwenlayout"
)

// textConfig is the language model's part of config.json (top level for
// Qwen2-VL / Qwen2.5-VL, "text_config" in newer exports).
type textConfig struct {
	ModelType   string  `json:"model_type"`
	Layers      int     `json:"num_hidden_layers"`
	Context     int     `json:"max_position_embeddings"`
	Hidden      int     `json:"hidden_size"`
	FFN         int     `json:"intermediate_size"`
	Heads       int     `json:"num_attention_heads"`
	KVHeads     int     `json:"num_key_value_heads"`
	HeadDim     int     `json:"head_dim"` // Qwen3: q/k/v head width, free of hidden/heads
	RopeTheta   float64 `json:"rope_theta"`
	RMSNormEps  float64 `json:"rms_norm_eps"`
	Vocab       int     `json:"vocab_size"`
	Tie         *bool   `json:"tie_word_embeddings"`
	BOS         *int    `json:"bos_token_id"`
	EOS         any     `json:"eos_token_id"` // a number or a list
	RopeScaling struct {
		MRopeSection []int `json:"mrope_section"`
	} `json:"rope_scaling"`
	// RopeParameters is newer transformers' home of both.
	RopeParameters struct {
		RopeTheta     float64 `json:"rope_theta"`
		MRopeSection  []int   `json:"mrope_section"`
		PartialRotary float64 `json:"partial_rotary_factor"`
	} `json:"rope_parameters"`
	// Qwen3.5's hybrid decoder: the layer pattern and the DeltaNet's
	// sizes, the rotary share of each head, and the retrievers' mask.
	FullAttnInterval int      `json:"full_attention_interval"`
	LayerTypes       []string `json:"layer_types"`
	LinKeyHeads      int      `json:"linear_num_key_heads"`
	LinValueHeads    int      `json:"linear_num_value_heads"`
	LinKeyDim        int      `json:"linear_key_head_dim"`
	LinValueDim      int      `json:"linear_value_head_dim"`
	LinConv          int      `json:"linear_conv_kernel_dim"`
	PartialRotary    float64  `json:"partial_rotary_factor"`
	MRopeSection     []int    `json:"mrope_section"` // a flat config's (the others nest it)
	IsCausal         *bool    `json:"is_causal"`
}

// visionConfig is config.json's vision_config: Qwen2.5-VL's fields and
// Qwen2-VL's (embed_dim, mlp_ratio; its hidden_size is the LM's width).
type visionConfig struct {
	Depth     int     `json:"depth"`
	Hidden    int     `json:"hidden_size"`
	EmbedDim  int     `json:"embed_dim"`
	FFN       int     `json:"intermediate_size"`
	MLPRatio  float64 `json:"mlp_ratio"`
	Heads     int     `json:"num_heads"`
	PatchSize int     `json:"patch_size"`
	Temporal  int     `json:"temporal_patch_size"`
	Merge     int     `json:"spatial_merge_size"`
	OutHidden int     `json:"out_hidden_size"`
	FullAttn  []int   `json:"fullatt_block_indexes"`
	// Qwen3-VL: the learned position table's rows and the DeepStack taps.
	Positions int   `json:"num_position_embeddings"`
	DeepStack []int `json:"deepstack_visual_indexes"`
}

// hfConfig is what the converter reads of config.json.
type hfConfig struct {
	textConfig
	Text          *textConfig  `json:"text_config"`
	Vision        visionConfig `json:"vision_config"`
	Architectures []string     `json:"architectures"`
	NameOrPath    string       `json:"_name_or_path"`
	TaskNames     []string     `json:"task_names"`
	MVDim         int          `json:"multi_vector_projector_dim"`
	// The Qwen3-VL multi-vector retrievers: ColQwen3's head width, Ops-
	// ColQwen3's row width (the head's first rows), nemotron's pooling.
	EmbedDim int    `json:"embed_dim"`
	Dims     int    `json:"dims"`
	Pooling  string `json:"pooling"`
	// colpali-engine's ColQwen3.5 head: dim alone, or head_dims with
	// mrl_prefix (one Linear, Matryoshka prefixes) or without (one Linear
	// per width); its processor's image budget in merged tokens.
	Dim             int   `json:"dim"`
	HeadDims        []int `json:"head_dims"`
	MRLPrefix       bool  `json:"mrl_prefix"`
	MaxVisualTokens int   `json:"max_num_visual_tokens"`
	// outerModelType is the top-level model_type (text_config's replaces
	// ModelType).
	outerModelType string
}

func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("convert: %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// readConfig reads config.json.
func readConfig(dir string) (*hfConfig, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return parseConfig(b)
}

func parseConfig(b []byte) (*hfConfig, error) {
	var c hfConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("convert: config.json: %w", err)
	}
	c.outerModelType = c.ModelType
	if c.Text != nil && c.Text.Hidden > 0 {
		mt, tie, causal := c.ModelType, c.Tie, c.IsCausal
		c.textConfig = *c.Text
		if c.ModelType == "" {
			c.ModelType = mt
		}
		if c.Tie == nil { // Qwen3-VL states it at the top level
			c.Tie = tie
		}
		if c.IsCausal == nil {
			c.IsCausal = causal
		}
	}
	if c.PartialRotary == 0 {
		c.PartialRotary = c.RopeParameters.PartialRotary
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = c.RopeParameters.RopeTheta
	}
	if len(c.RopeScaling.MRopeSection) == 0 {
		c.RopeScaling.MRopeSection = c.RopeParameters.MRopeSection
	}
	if len(c.RopeScaling.MRopeSection) == 0 {
		c.RopeScaling.MRopeSection = c.MRopeSection
	}
	return &c, nil
}

// projector tells the vision tower's family from config.json.
func (c *hfConfig) projector() (string, error) {
	mt := strings.ToLower(c.ModelType)
	switch {
	case c.isQwen35() || strings.Contains(mt, "qwen3_vl") || len(c.Vision.DeepStack) > 0 || c.Vision.Positions > 0:
		return qwenlayout.ProjectorQwen3VL, nil
	case strings.Contains(mt, "qwen2_5") || strings.Contains(mt, "qwen2.5") || c.Vision.OutHidden > 0 || len(c.Vision.FullAttn) > 0:
		return qwenlayout.ProjectorQwen25VL, nil
	case strings.Contains(mt, "qwen2_vl") || c.Vision.EmbedDim > 0:
		return qwenlayout.ProjectorQwen2VL, nil
	}
	return "", fmt.Errorf("convert: config.json: model_type %q is not Qwen2-VL, Qwen2.5-VL or Qwen3-VL", c.ModelType)
}

// layoutConfig describes the checkpoint as a qwenlayout.Config, whose
// plans give every key and tensor of the GGUFs.
func (c *hfConfig) layoutConfig(dir string, vocab int) (qwenlayout.Config, error) {
	proj, err := c.projector()
	if err != nil {
		return qwenlayout.Config{}, err
	}
	t, v := c.textConfig, c.Vision
	switch {
	case t.Layers <= 0 || t.Hidden <= 0 || t.Heads <= 0 || t.FFN <= 0:
		return qwenlayout.Config{}, fmt.Errorf("convert: config.json: missing sizes (layers %d, hidden %d, heads %d, ffn %d)", t.Layers, t.Hidden, t.Heads, t.FFN)
	case t.Hidden%t.Heads != 0:
		return qwenlayout.Config{}, fmt.Errorf("convert: config.json: hidden %d is not a multiple of %d heads", t.Hidden, t.Heads)
	}
	if t.KVHeads == 0 {
		t.KVHeads = t.Heads
	}
	if t.RMSNormEps == 0 {
		t.RMSNormEps = 1e-6
	}
	if t.RopeTheta == 0 {
		t.RopeTheta = 1e6
	}
	if t.Context == 0 {
		t.Context = 32768
	}
	sec := t.RopeScaling.MRopeSection
	if len(sec) == 0 && c.isQwen35() {
		sec = qwen35Sections // llama.cpp's converter writes these when the config has none
	}
	if len(sec) == 0 {
		q := t.Hidden / t.Heads / 2
		sec = []int{q / 4, q * 3 / 8, q * 3 / 8}
		if proj == qwenlayout.ProjectorQwen3VL {
			q = cmp.Or(t.HeadDim, t.Hidden/t.Heads) / 2
			sec = []int{q * 3 / 8, q * 5 / 16, q * 5 / 16}
		}
	}
	if len(sec) > 4 {
		return qwenlayout.Config{}, fmt.Errorf("convert: config.json: mrope_section %v", sec)
	}
	name := cmpOr(filepath.Base(c.NameOrPath), dirName(dir))
	cfg := qwenlayout.Config{
		Name:      name,
		BaseName:  name,
		Projector: proj,
		LM: qwenlayout.LMConfig{
			Hidden: t.Hidden, Layers: t.Layers, Heads: t.Heads, KVHeads: t.KVHeads, FFN: t.FFN,
			Vocab: vocab, ContextLength: t.Context,
			RopeTheta: float32(t.RopeTheta), RMSEps: float32(t.RMSNormEps),
			Untied: t.Tie != nil && !*t.Tie,
		},
		Vision: qwenlayout.VisionConfig{
			Blocks: v.Depth, Heads: v.Heads, PatchSize: v.PatchSize,
			ImageSize: 560, Eps: 1e-6,
		},
		MVProj: qwenlayout.MVProjConfig{OutputDim: 1, Normalize: true, Type: "F32"},
		LMType: "F32", MMProjType: "F32",
	}
	for i, s := range sec {
		cfg.LM.MRoPE[i] = int32(s)
	}
	if v.Temporal != 0 && v.Temporal != qwenlayout.TemporalPatch {
		return qwenlayout.Config{}, fmt.Errorf("convert: config.json: temporal_patch_size %d (Qwen-VL towers have %d)", v.Temporal, qwenlayout.TemporalPatch)
	}
	if v.Merge != 0 && v.Merge != 2 {
		return qwenlayout.Config{}, fmt.Errorf("convert: config.json: spatial_merge_size %d (llama.cpp's Qwen-VL mergers are 2x2)", v.Merge)
	}
	cfg.Vision.ImageMean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	cfg.Vision.ImageStd = [3]float32{0.26862954, 0.26130258, 0.27577711}
	if proj == qwenlayout.ProjectorQwen2VL {
		cfg.Vision.Width = v.EmbedDim
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		cfg.Vision.FFN = int(float64(float64(v.EmbedDim)*v.MLPRatio) + 0.5)
		if v.MLPRatio == 0 {
			cfg.Vision.FFN = 4 * v.EmbedDim
		}
	} else {
		cfg.Vision.Width, cfg.Vision.FFN = v.Hidden, v.FFN
		if v.OutHidden != 0 && v.OutHidden != t.Hidden {
			return qwenlayout.Config{}, fmt.Errorf("convert: config.json: vision out_hidden_size %d differs from the LM's hidden size %d", v.OutHidden, t.Hidden)
		}
	}
	switch proj {
	case qwenlayout.ProjectorQwen3VL:
		if err := qwen3Vision(&cfg, t, v); err != nil {
			return qwenlayout.Config{}, err
		}
		if c.isQwen35() {
			if cfg.LM.DeltaNet, err = c.deltaNet(); err != nil {
				return qwenlayout.Config{}, err
			}
		}
	case qwenlayout.ProjectorQwen25VL:
		full := v.FullAttn
		if len(full) == 0 {
			return qwenlayout.Config{}, errors.New("convert: config.json: a Qwen2.5-VL vision_config without fullatt_block_indexes")
		}
		// llama.cpp stores only the period; the blocks must be evenly spaced.
		n := full[0] + 1
		for i, b := range full {
			if b != (i+1)*n-1 {
				return qwenlayout.Config{}, fmt.Errorf("convert: config.json: fullatt_block_indexes %v are not evenly spaced, which llama.cpp cannot store", full)
			}
		}
		cfg.Vision.NWAPattern = n
	}
	var pre struct {
		Mean []float32 `json:"image_mean"`
		Std  []float32 `json:"image_std"`
	}
	if err := readJSON(dir, "preprocessor_config.json", &pre); err != nil && !errors.Is(err, os.ErrNotExist) {
		return qwenlayout.Config{}, err
	}
	if len(pre.Mean) == 3 && len(pre.Std) == 3 {
		copy(cfg.Vision.ImageMean[:], pre.Mean)
		copy(cfg.Vision.ImageStd[:], pre.Std)
	}
	if err := cfg.Validate(); err != nil {
		return qwenlayout.Config{}, fmt.Errorf("convert: config.json: %w", err)
	}
	return cfg, nil
}

// qwen3Vision fills what a Qwen3-VL tower and decoder add, as llama.cpp's
// converter derives it: the head width, the position table's side (image
// size √positions · patch), the DeepStack taps, the text config's
// rms_norm_eps as the tower's LayerNorm eps, Qwen3-VL's normalization
// (preprocessor_config.json, when it has one, still decides).
func qwen3Vision(cfg *qwenlayout.Config, t textConfig, v visionConfig) error {
	cfg.LM.HeadDim = t.HeadDim
	n := cmp.Or(v.Positions, 2304)
	side := int(math.Round(math.Sqrt(float64(n))))
	if side*side != n {
		return fmt.Errorf("convert: config.json: num_position_embeddings %d is not a square", n)
	}
	cfg.Vision.PositionSide = side
	cfg.Vision.ImageSize = side * cmp.Or(v.PatchSize, 16)
	cfg.Vision.DeepStack = slices.Clone(v.DeepStack)
	cfg.Vision.Eps = float32(t.RMSNormEps)
	cfg.Vision.ImageMean = [3]float32{0.5, 0.5, 0.5}
	cfg.Vision.ImageStd = [3]float32{0.5, 0.5, 0.5}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" && a != "." && a != "/" {
		return a
	}
	return b
}

// retriever names the Qwen3-VL multi-vector family config.json's
// model_type or architectures name ("" for none).
func (c *hfConfig) retriever() string {
	names := append([]string{c.outerModelType}, c.Architectures...)
	has := func(sub string) bool {
		return slices.ContainsFunc(names, func(n string) bool {
			return strings.Contains(strings.ReplaceAll(strings.ToLower(n), "_", ""), sub)
		})
	}
	switch {
	case has("opscolqwen3"):
		return qwenlayout.LayoutOpsColQwen3
	case has("colqwen3"):
		return qwenlayout.LayoutColQwen3
	case has("nemotronembed"):
		return qwenlayout.LayoutNemotronColEmbed
	}
	return ""
}

// isJina reports jina-embeddings-v4's custom architecture.
func (c *hfConfig) isJina() bool {
	return slices.Contains(c.Architectures, "JinaEmbeddingsV4Model") || len(c.TaskNames) > 0
}

// dirName names a checkpoint by its directory, or for a snapshot of the
// hub cache (models--org--name/snapshots/<commit>) by its repository.
func dirName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	if filepath.Base(filepath.Dir(abs)) == "snapshots" {
		repo := filepath.Base(filepath.Dir(filepath.Dir(abs)))
		if i := strings.LastIndex(repo, "--"); strings.HasPrefix(repo, "models--") && i >= 0 {
			return repo[i+2:]
		}
	}
	return filepath.Base(abs)
}
