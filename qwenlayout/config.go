package qwenlayout

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/quantize"
)

// Projector types as clip.projector_type stores them.
const (
	ProjectorQwen25VL = "qwen2.5vl_merger" // Qwen2.5-VL: RMSNorm, SwiGLU MLP, window attention
	ProjectorQwen2VL  = "qwen2vl_merger"   // Qwen2-VL: LayerNorm, quick-GELU MLP, full attention
	ProjectorQwen3VL  = "qwen3vl_merger"   // Qwen3-VL: learned positions, fused qkv, GELU-tanh MLP, DeepStack
)

// LMConfig holds the language-model hyper-parameters (architecture qwen2vl,
// or qwen3vl beside a ProjectorQwen3VL tower).
type LMConfig struct {
	Hidden        int
	Layers        int
	Heads         int
	KVHeads       int
	FFN           int
	Vocab         int      // rows of token_embd; must equal the tokenizer's size
	ContextLength int      // qwen2vl.context_length
	RopeTheta     float32  // qwen2vl.rope.freq_base
	RMSEps        float32  // qwen2vl.attention.layer_norm_rms_epsilon
	MRoPE         [4]int32 // qwen2vl.rope.dimension_sections (t, h, w, unused)
	Untied        bool     // write output.weight (the models here tie it to token_embd)

	// HeadDim is qwen3vl.attention.key_length (= value_length), which
	// Qwen3 decouples from Hidden/Heads; 0 means Hidden/Heads. qwen2vl
	// files have no such key, so it must be 0 or Hidden/Heads there.
	HeadDim int
	// DeltaNet, when its Interval is set, makes the LM a Qwen3.5 one
	// (architecture qwen35, beside a ProjectorQwen3VL tower without
	// DeepStack): see qwen35.go.
	DeltaNet DeltaNetConfig
	// Pooling is qwen3vl.pooling_type as llama.cpp's converter writes it:
	// "" (none, what it writes for Qwen3-VL-Embedding), "last", or "rank"
	// (the Qwen3-VL-Reranker form, which also gets the yes/no classifier
	// head cls.output.weight and classifier.output_labels).
	Pooling string
	// Extra are keys written last, in order: vembed's own (vembed.recipe,
	// the decoder mode of model.KeyCausal and model.KeyOutputNorm, ...),
	// which llama.cpp's keys cannot say.
	Extra []KV
}

// HeadWidth is the attention head width the LM file stores: HeadDim, or
// Hidden/Heads.
func (lm *LMConfig) HeadWidth() int {
	if lm.HeadDim > 0 {
		return lm.HeadDim
	}
	return lm.Hidden / max(lm.Heads, 1)
}

// VisionConfig holds the vision tower hyper-parameters.
type VisionConfig struct {
	Width     int
	Blocks    int
	Heads     int
	FFN       int // real MLP width (ffn_up rows)
	PatchSize int
	ImageSize int     // clip.vision.image_size (not used by Qwen preprocessing)
	Eps       float32 // clip.vision.attention.layer_norm_epsilon
	// NWAPattern is clip.vision.n_wa_pattern (Qwen2.5-VL only): block i uses
	// full attention when (i+1) % NWAPattern == 0.
	NWAPattern int
	ImageMean  [3]float32
	ImageStd   [3]float32

	// DeepStack lists the blocks (ascending) after which a Qwen3-VL tower
	// taps a DeepStack merger (clip.vision.is_deepstack_layers); the LM
	// adds one set of rows per tap (qwen3vl.n_deepstack_layers).
	DeepStack []int
	// PositionSide is the side of Qwen3-VL's learned position table
	// (v.position_embd.weight has PositionSide² rows).
	PositionSide int

	// MinPixels and MaxPixels are the image budget of the model's
	// processor, written as clip.vision.image_min_pixels /
	// image_max_pixels when MaxPixels is set (0: none written, loaders use
	// their family's defaults).
	MinPixels, MaxPixels int
}

// MVProjConfig describes the multi-vector projector side-car.
type MVProjConfig struct {
	OutputDim int
	Task      string
	Normalize bool
	Type      string // "F32", "F16" or "BF16"
}

// Config describes one Qwen-VL GGUF set: an LM GGUF, an mmproj GGUF and
// optionally an mvproj side-car. It holds shapes and encodings only; what
// fills the tensors (a checkpoint, random values) is the writer's business.
type Config struct {
	Name     string // general.name
	BaseName string // general.basename
	// Projector is ProjectorQwen25VL, ProjectorQwen2VL or ProjectorQwen3VL;
	// it selects the vision block layout, and ProjectorQwen3VL the qwen3vl
	// LM architecture.
	Projector string
	LM        LMConfig
	Vision    VisionConfig
	MVProj    MVProjConfig

	// LMType and MMProjType name the weight encoding of each file: a ggml type
	// ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "IQ4_XS", ...),
	// applied to every matrix as llama-quantize --pure does, or a llama.cpp mix
	// ("Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S"); see quantize.ParseSpec.
	LMType     string
	MMProjType string
}

// CLIP normalization constants, as preprocessor_config.json gives them
// for Qwen2-VL and Qwen2.5-VL; Qwen3-VL normalizes with 0.5 and 0.5.
var (
	CLIPMean  = [3]float32{0.48145466, 0.4578275, 0.40821073}
	CLIPStd   = [3]float32{0.26862954, 0.26130258, 0.27577711}
	Qwen3Mean = [3]float32{0.5, 0.5, 0.5}
	Qwen3Std  = [3]float32{0.5, 0.5, 0.5}
)

// MaxImagePixels bounds an image budget: Qwen2-VL's own largest
// max_pixels (3584², about 12.8 MP), the most any loader accepts.
const MaxImagePixels = 3584 * 3584

// maxDim bounds every configured size, so a bad configuration is an error
// rather than an enormous allocation.
const maxDim = 1 << 20

// Validate reports the first inconsistency in c.
func (c *Config) Validate() error {
	pos := func(what string, v int) error {
		if v <= 0 || v > maxDim {
			return fmt.Errorf("qwenlayout: %s = %d out of range [1, %d]", what, v, maxDim)
		}
		return nil
	}
	lm, vi := c.LM, c.Vision
	for _, chk := range []struct {
		what string
		v    int
	}{
		{"LM.Hidden", lm.Hidden}, {"LM.Layers", lm.Layers}, {"LM.Heads", lm.Heads},
		{"LM.KVHeads", lm.KVHeads}, {"LM.FFN", lm.FFN}, {"LM.Vocab", lm.Vocab},
		{"LM.ContextLength", lm.ContextLength},
		{"Vision.Width", vi.Width}, {"Vision.Blocks", vi.Blocks}, {"Vision.Heads", vi.Heads},
		{"Vision.FFN", vi.FFN}, {"Vision.PatchSize", vi.PatchSize}, {"Vision.ImageSize", vi.ImageSize},
		{"MVProj.OutputDim", c.MVProj.OutputDim},
	} {
		if err := pos(chk.what, chk.v); err != nil {
			return err
		}
	}
	switch {
	case lm.HeadDim < 0 || lm.HeadDim > maxDim:
		return fmt.Errorf("qwenlayout: LM.HeadDim = %d out of range [0, %d]", lm.HeadDim, maxDim)
	case lm.HeadDim == 0 && lm.Hidden%lm.Heads != 0:
		return fmt.Errorf("qwenlayout: LM.Hidden %d is not a multiple of LM.Heads %d", lm.Hidden, lm.Heads)
	case lm.Heads%lm.KVHeads != 0:
		return fmt.Errorf("qwenlayout: LM.Heads %d is not a multiple of LM.KVHeads %d", lm.Heads, lm.KVHeads)
	case vi.Width%vi.Heads != 0:
		return fmt.Errorf("qwenlayout: Vision.Width %d is not a multiple of Vision.Heads %d", vi.Width, vi.Heads)
	}
	var sec int32
	for _, s := range lm.MRoPE {
		if s < 0 {
			return fmt.Errorf("qwenlayout: negative M-RoPE section in %v", lm.MRoPE)
		}
		sec += s
	}
	rot, what := lm.HeadWidth(), "head_dim"
	if lm.IsQwen35() { // only the first rope.dimension_count dimensions rotate
		rot, what = lm.DeltaNet.RopeDims, "rope.dimension_count"
	}
	if int(sec)*2 != rot {
		return fmt.Errorf("qwenlayout: M-RoPE sections %v cover %d rotary pairs, %s %d needs %d", lm.MRoPE, sec, what, rot, rot/2)
	}
	if lm.IsQwen35() {
		if err := c.validateQwen35(); err != nil {
			return err
		}
	}
	if c.Projector != ProjectorQwen3VL {
		// qwen2vl files store neither a head width nor DeepStack or pooling.
		switch {
		case lm.HeadDim != 0 && lm.HeadDim*lm.Heads != lm.Hidden:
			return fmt.Errorf("qwenlayout: LM.HeadDim %d: a qwen2vl LM's heads are Hidden/Heads = %d wide", lm.HeadDim, lm.Hidden/lm.Heads)
		case lm.Pooling != "":
			return fmt.Errorf("qwenlayout: LM.Pooling %q: only qwen3vl LMs get a pooling type", lm.Pooling)
		case len(vi.DeepStack) > 0:
			return errors.New("qwenlayout: Vision.DeepStack: only Qwen3-VL towers have DeepStack taps")
		}
	}
	switch c.Projector {
	case ProjectorQwen25VL:
		if vi.NWAPattern <= 0 || vi.NWAPattern > vi.Blocks {
			return fmt.Errorf("qwenlayout: Vision.NWAPattern = %d out of range [1, %d]", vi.NWAPattern, vi.Blocks)
		}
	case ProjectorQwen2VL:
	case ProjectorQwen3VL:
		if err := c.validateQwen3(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("qwenlayout: unknown projector type %q", c.Projector)
	}
	if vi.MaxPixels != 0 || vi.MinPixels != 0 {
		if vi.MinPixels < 0 || vi.MaxPixels <= 0 || vi.MinPixels > vi.MaxPixels || vi.MaxPixels > MaxImagePixels {
			return fmt.Errorf("qwenlayout: image pixel budget [%d, %d]: want 0 <= min <= max, 0 < max <= %d", vi.MinPixels, vi.MaxPixels, MaxImagePixels)
		}
	}
	if c.Name == "" {
		return errors.New("qwenlayout: empty model name")
	}
	if _, err := parseSpec(c.LMType); err != nil {
		return err
	}
	if _, err := parseSpec(c.MMProjType); err != nil {
		return err
	}
	return nil
}

// parseSpec parses a weight encoding name; see quantize.ParseSpec.
func parseSpec(s string) (quantize.Spec, error) {
	spec, err := quantize.ParseSpec(s)
	if err != nil {
		return quantize.Spec{}, fmt.Errorf("qwenlayout: %w", err)
	}
	return spec, nil
}

// LMFileName is the language model's file name, following llama.cpp's
// "<name>-<encoding>.gguf".
func (c *Config) LMFileName() string { return c.Name + "-" + upper(c.LMType) + ".gguf" }

// MMProjFileName is the vision file's name, "mmproj-<name>-<encoding>.gguf".
func (c *Config) MMProjFileName() string {
	return "mmproj-" + c.Name + "-" + upper(c.MMProjType) + ".gguf"
}

// MVProjFileName is the multi-vector side-car's name.
func (c *Config) MVProjFileName() string {
	return "mvproj-" + c.Name + "-" + upper(c.MVProj.Type) + ".gguf"
}

func upper(s string) string {
	if t, err := quantize.ParseSpec(s); err == nil {
		return t.Name
	}
	return s
}
