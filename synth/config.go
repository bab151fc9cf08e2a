package synth

import (
	"errors"
	"fmt"
	"math"
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
	// Pooling is qwen3vl.pooling_type as llama.cpp's converter writes it:
	// "" (none, what it writes for Qwen3-VL-Embedding), "last", or "rank"
	// (the Qwen3-VL-Reranker form, which also gets the yes/no classifier
	// head cls.output.weight and classifier.output_labels).
	Pooling string
}

// headDim is the attention head width the LM file stores.
func (lm *LMConfig) headDim() int {
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
}

// MVProjConfig describes the multi-vector projector side-car.
type MVProjConfig struct {
	OutputDim int
	Task      string
	Normalize bool
	Type      string // "F32", "F16" or "BF16"
}

// Config describes one synthetic model: an LM GGUF, an mmproj GGUF and
// optionally an mvproj side-car.
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

	// Seed seeds the LM weights; the mmproj uses Seed+1, the mvproj Seed+2.
	Seed uint64
	// Std is the standard deviation of weights and biases; norm weights are
	// 1 + Std·N(0,1).
	Std float32

	// LMType and MMProjType name the weight encoding of each file: a ggml type
	// ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "IQ4_XS", ...),
	// applied to every matrix as llama-quantize --pure does, or a llama.cpp mix
	// ("Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S"). See TypePlan.
	LMType     string
	MMProjType string

	// Merges is the number of learned merges of the small vocabulary.
	Merges int
	// VocabFrom, when set, is a GGUF whose tokenizer.* metadata is copied
	// instead of generating the small vocabulary; LM.Vocab must then equal its
	// token count.
	VocabFrom string

	// Workers is the number of goroutines generating and encoding tensors
	// (default 2). The output does not depend on it.
	Workers int

	// Progress, when set, is called as each file's tensors are written
	// with the values written so far and the file's total.
	Progress func(file string, done, total int64)
}

var presets = map[string]func() Config{
	"tiny":                  tinyPreset,
	"tiny-qwen2vl":          tinyQwen2VLPreset,
	"jina-v4":               jinaV4Preset,
	"qwen2vl-2b":            qwen2VL2BPreset,
	"tiny-qwen3vl":          tinyQwen3VLPreset,
	"qwen3-vl-embedding-2b": qwen3VLEmbedding2BPreset,
	"qwen3-vl-reranker-2b":  qwen3VLReranker2BPreset,
}

// Presets lists the preset names Preset accepts.
func Presets() []string {
	return []string{"tiny", "tiny-qwen2vl", "jina-v4", "qwen2vl-2b", "tiny-qwen3vl", "qwen3-vl-embedding-2b", "qwen3-vl-reranker-2b"}
}

// Preset returns a named configuration:
//   - "tiny": the shapes of the shared fixtures' tiny Qwen2.5-VL pair (LM 64
//     wide, 2 layers, 4/2 heads, FFN 128, M-RoPE [2,3,3,0], 512-token
//     vocabulary; ViT 32 wide, 4 blocks, 2 heads, FFN 64, n_wa_pattern 4);
//   - "tiny-qwen2vl": the same sizes with the Qwen2-VL vision tower;
//   - "jina-v4": jina-embeddings-v4 (Qwen2.5-VL-3B) shapes;
//   - "qwen2vl-2b": Qwen2-VL-2B shapes (GME-2B, ColQwen2);
//   - "tiny-qwen3vl": the shapes of the shared fixtures' tiny Qwen3-VL pair
//     (LM 64 wide, 3 layers, 4/2 heads of 32, FFN 128, M-RoPE [6,5,5,0],
//     pooling LAST, 512-token vocabulary; ViT 32 wide, 4 blocks, 2 heads,
//     FFN 64, patch 16, DeepStack taps 0, 2, 3);
//   - "qwen3-vl-embedding-2b", "qwen3-vl-reranker-2b": Qwen3-VL-Embedding-2B
//     and Qwen3-VL-Reranker-2B shapes, in the form llama.cpp converts them
//     (no pooling type; RANK with the yes/no head).
func Preset(name string) (Config, error) {
	f, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("synth: unknown preset %q (have %v)", name, Presets())
	}
	return f(), nil
}

// CLIP normalization constants, as preprocessor_config.json gives them.
var (
	clipMean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	clipStd  = [3]float32{0.26862954, 0.26130258, 0.27577711}
)

func baseConfig() Config {
	return Config{
		Projector: ProjectorQwen25VL,
		LM: LMConfig{
			ContextLength: 128000,
			RopeTheta:     1e6,
			RMSEps:        1e-6,
		},
		Vision: VisionConfig{
			PatchSize: 14,
			ImageSize: 560,
			Eps:       1e-6,
			ImageMean: clipMean,
			ImageStd:  clipStd,
		},
		MVProj:     MVProjConfig{OutputDim: 128, Task: "retrieval", Normalize: true, Type: "F32"},
		BaseName:   "synthetic-qwen2.5-vl",
		Seed:       1234,
		Std:        0.02,
		LMType:     "F32",
		MMProjType: "F32",
		Merges:     230,
		Workers:    2,
	}
}

func tinyPreset() Config {
	c := baseConfig()
	c.Name = "synthetic-qwen2.5-vl-tiny"
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 64, 2, 4, 2, 128
	c.LM.Vocab = 512
	c.LM.MRoPE = [4]int32{2, 3, 3, 0}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 32, 4, 2, 64
	c.Vision.NWAPattern = 4
	return c
}

func tinyQwen2VLPreset() Config {
	c := tinyPreset()
	c.Name, c.BaseName = "synthetic-qwen2-vl-tiny", "synthetic-qwen2-vl"
	c.Projector = ProjectorQwen2VL
	c.LM.ContextLength = 32768
	c.Vision.FFN = 4 * c.Vision.Width
	c.Vision.NWAPattern = 0
	return c
}

func jinaV4Preset() Config {
	c := baseConfig()
	c.Name = "synthetic-jina-embeddings-v4"
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 2048, 36, 16, 2, 11008
	c.LM.Vocab = 151936
	c.LM.MRoPE = [4]int32{16, 24, 24, 0}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 1280, 32, 16, 3420
	c.Vision.NWAPattern = 8
	return c
}

func qwen2VL2BPreset() Config {
	c := baseConfig()
	c.Name, c.BaseName = "synthetic-qwen2-vl-2b", "synthetic-qwen2-vl"
	c.Projector = ProjectorQwen2VL
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 1536, 28, 12, 2, 8960
	c.LM.Vocab = 151936
	c.LM.ContextLength = 32768
	c.LM.MRoPE = [4]int32{16, 24, 24, 0}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 1280, 32, 16, 5120
	return c
}

// maxDim bounds every configured size, so a bad configuration is an error
// rather than an enormous allocation.
const maxDim = 1 << 20

// Validate reports the first inconsistency in c.
func (c *Config) Validate() error {
	pos := func(what string, v int) error {
		if v <= 0 || v > maxDim {
			return fmt.Errorf("synth: %s = %d out of range [1, %d]", what, v, maxDim)
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
		return fmt.Errorf("synth: LM.HeadDim = %d out of range [0, %d]", lm.HeadDim, maxDim)
	case lm.HeadDim == 0 && lm.Hidden%lm.Heads != 0:
		return fmt.Errorf("synth: LM.Hidden %d is not a multiple of LM.Heads %d", lm.Hidden, lm.Heads)
	case lm.Heads%lm.KVHeads != 0:
		return fmt.Errorf("synth: LM.Heads %d is not a multiple of LM.KVHeads %d", lm.Heads, lm.KVHeads)
	case vi.Width%vi.Heads != 0:
		return fmt.Errorf("synth: Vision.Width %d is not a multiple of Vision.Heads %d", vi.Width, vi.Heads)
	}
	var sec int32
	for _, s := range lm.MRoPE {
		if s < 0 {
			return fmt.Errorf("synth: negative M-RoPE section in %v", lm.MRoPE)
		}
		sec += s
	}
	if hd := lm.headDim(); int(sec)*2 != hd {
		return fmt.Errorf("synth: M-RoPE sections %v cover %d rotary pairs, head_dim %d needs %d", lm.MRoPE, sec, hd, hd/2)
	}
	if c.Projector != ProjectorQwen3VL {
		// qwen2vl files store neither a head width nor DeepStack or pooling.
		switch {
		case lm.HeadDim != 0 && lm.HeadDim*lm.Heads != lm.Hidden:
			return fmt.Errorf("synth: LM.HeadDim %d: a qwen2vl LM's heads are Hidden/Heads = %d wide", lm.HeadDim, lm.Hidden/lm.Heads)
		case lm.Pooling != "":
			return fmt.Errorf("synth: LM.Pooling %q: only qwen3vl LMs get a pooling type", lm.Pooling)
		case len(vi.DeepStack) > 0:
			return errors.New("synth: Vision.DeepStack: only Qwen3-VL towers have DeepStack taps")
		}
	}
	switch c.Projector {
	case ProjectorQwen25VL:
		if vi.NWAPattern <= 0 || vi.NWAPattern > vi.Blocks {
			return fmt.Errorf("synth: Vision.NWAPattern = %d out of range [1, %d]", vi.NWAPattern, vi.Blocks)
		}
	case ProjectorQwen2VL:
	case ProjectorQwen3VL:
		if err := c.validateQwen3(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("synth: unknown projector type %q", c.Projector)
	}
	if !(c.Std >= 0) || math.IsInf(float64(c.Std), 0) {
		return fmt.Errorf("synth: weight std %v is not a finite non-negative number", c.Std)
	}
	if c.Name == "" {
		return errors.New("synth: empty model name")
	}
	if _, err := ParseTypeSpec(c.LMType); err != nil {
		return err
	}
	if _, err := ParseTypeSpec(c.MMProjType); err != nil {
		return err
	}
	return nil
}
