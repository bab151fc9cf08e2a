package synth

import "github.com/vembed/vembed/qwenlayout"

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
