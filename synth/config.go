package synth

import (
	"fmt"
	"math"

	"github.com/vembed/vembed/qwenlayout"
)

// Config describes one synthetic model: the layout of its files (an LM
// GGUF, an mmproj GGUF and optionally an mvproj side-car) and how their
// values are drawn.
type Config struct {
	qwenlayout.Config

	// Seed seeds the LM weights; the mmproj uses Seed+1, the mvproj Seed+2.
	Seed uint64
	// Std is the standard deviation of weights and biases; norm weights are
	// 1 + Std·N(0,1).
	Std float32

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
	"tiny":                       tinyPreset,
	"tiny-qwen2vl":               tinyQwen2VLPreset,
	"jina-v4":                    jinaV4Preset,
	"qwen2vl-2b":                 qwen2VL2BPreset,
	"tiny-qwen3vl":               tinyQwen3VLPreset,
	"qwen3-vl-embedding-2b":      qwen3VLEmbedding2BPreset,
	"qwen3-vl-reranker-2b":       qwen3VLReranker2BPreset,
	"colqwen3-4b":                colQwen34BPreset,
	"nemotron-colembed-vl-4b-v2": nemotronColEmbed4BPreset,
	"tiny-qwen35":                tinyQwen35Preset,
	"colvec1.1-4b":               colVec4BPreset,
}

// Presets lists the preset names Preset accepts.
func Presets() []string {
	return []string{"tiny", "tiny-qwen2vl", "jina-v4", "qwen2vl-2b", "tiny-qwen3vl", "qwen3-vl-embedding-2b", "qwen3-vl-reranker-2b",
		"colqwen3-4b", "nemotron-colembed-vl-4b-v2", "tiny-qwen35", "colvec1.1-4b"}
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
//     (no pooling type; RANK with the yes/no head);
//   - "colqwen3-4b", "nemotron-colembed-vl-4b-v2": tomoro-colqwen3-embed-4b
//     (320-wide mvproj) and nemotron-colembed-vl-4b-v2 (bidirectional, no
//     final norm, rows from the hidden states) as vembed convert writes
//     them, on the Qwen3-VL-4B shapes;
//   - "tiny-qwen35": the shapes of the shared fixtures' tiny Qwen3.5 pair
//     (a qwen35 LM with 3 DeltaNet layers and 1 gated full-attention
//     layer, and its tower), the 512-token vocabulary;
//   - "colvec1.1-4b": webAI-ColVec1.1-4b as vembed convert writes it: the
//     Qwen3.5-4B shapes (hybrid Gated DeltaNet decoder, bidirectional
//     full attention; the Qwen3-VL-4B tower without DeepStack), a 640-wide
//     head.
func Preset(name string) (Config, error) {
	f, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("synth: unknown preset %q (have %v)", name, Presets())
	}
	return f(), nil
}

func baseConfig() Config {
	return Config{
		Config: qwenlayout.Config{
			Projector: qwenlayout.ProjectorQwen25VL,
			LM: qwenlayout.LMConfig{
				ContextLength: 128000,
				RopeTheta:     1e6,
				RMSEps:        1e-6,
			},
			Vision: qwenlayout.VisionConfig{
				PatchSize: 14,
				ImageSize: 560,
				Eps:       1e-6,
				ImageMean: qwenlayout.CLIPMean,
				ImageStd:  qwenlayout.CLIPStd,
			},
			MVProj:     qwenlayout.MVProjConfig{OutputDim: 128, Task: "retrieval", Normalize: true, Type: "F32"},
			BaseName:   "synthetic-qwen2.5-vl",
			LMType:     "F32",
			MMProjType: "F32",
		},
		Seed:    1234,
		Std:     0.02,
		Merges:  230,
		Workers: 2,
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
	c.Projector = qwenlayout.ProjectorQwen2VL
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
	c.Projector = qwenlayout.ProjectorQwen2VL
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 1536, 28, 12, 2, 8960
	c.LM.Vocab = 151936
	c.LM.ContextLength = 32768
	c.LM.MRoPE = [4]int32{16, 24, 24, 0}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 1280, 32, 16, 5120
	return c
}

// Validate reports the first inconsistency in c.
func (c *Config) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if !(c.Std >= 0) || math.IsInf(float64(c.Std), 0) {
		return fmt.Errorf("synth: weight std %v is not a finite non-negative number", c.Std)
	}
	return nil
}
