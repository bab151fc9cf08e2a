package synth

import (
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/qwenlayout"
)

// The recipes' names (package recipe, which imports synth in its tests;
// TestRetrieverPresets checks that they select these recipes).
const (
	recipeKey      = "vembed.recipe"
	recipeColQwen3 = "colqwen3"
	recipeNemotron = "nemotron-colembed-vl"
	recipeColVec   = "colvec1.1"
)

func qwen3BaseConfig() Config {
	c := baseConfig()
	c.BaseName = "synthetic-qwen3-vl"
	c.Projector = qwenlayout.ProjectorQwen3VL
	c.LM.ContextLength = 262144
	c.LM.RopeTheta = 5e6
	c.Vision.PatchSize = 16
	c.Vision.ImageSize = 768 // what the converter derives: √2304 · 16
	c.Vision.PositionSide = 48
	c.Vision.ImageMean, c.Vision.ImageStd = qwenlayout.Qwen3Mean, qwenlayout.Qwen3Std
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

// qwen3VL4B has the shapes of Qwen3-VL-4B, the backbone of the 4B
// multi-vector retrievers.
func qwen3VL4B() Config {
	c := qwen3BaseConfig()
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 2560, 36, 32, 8, 9728
	c.LM.HeadDim = 128
	c.LM.Vocab = 151936
	c.LM.MRoPE = [4]int32{24, 20, 20, 0}
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 1024, 24, 16, 4096
	c.Vision.DeepStack = []int{5, 11, 17}
	return c
}

// colQwen34BPreset is tomoro-colqwen3-embed-4b as vembed convert writes it:
// the 4B backbone, a 320-wide head (the mvproj, with --mvproj), images of
// 65,536 to 1,310,720 pixels.
func colQwen34BPreset() Config {
	c := qwen3VL4B()
	c.Name = "synthetic-colqwen3-4b"
	c.MVProj = qwenlayout.MVProjConfig{OutputDim: 320, Normalize: true, Type: "F32"}
	c.Vision.MinPixels, c.Vision.MaxPixels = 65536, 1310720
	c.LM.Extra = []qwenlayout.KV{{Key: recipeKey, Value: recipeColQwen3}}
	return c
}

// nemotronColEmbed4BPreset is nemotron-colembed-vl-4b-v2 as vembed convert
// writes it: the 4B backbone, bidirectional, rows from the hidden states
// before the final norm (no mvproj). Its image budget is not known from the
// published files (the spec's estimate from about 773 tokens a ViDoRe
// page): 65,536 to 802,816 pixels (784 tokens of 32²) here.
func nemotronColEmbed4BPreset() Config {
	c := qwen3VL4B()
	c.Name = "synthetic-nemotron-colembed-vl-4b-v2"
	c.Vision.MinPixels, c.Vision.MaxPixels = 65536, 802816
	c.LM.Extra = []qwenlayout.KV{
		{Key: recipeKey, Value: recipeNemotron},
		{Key: model.KeyCausal, Value: false},
		{Key: model.KeyOutputNorm, Value: false},
		{Key: heads.KeyMultiVectorSource, Value: "hidden"},
	}
	return c
}
