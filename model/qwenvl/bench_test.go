package qwenvl

import (
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/synth"
)

// The benchmarks run the active kernel tier (VEMBED_CPU selects another);
// the kernels' own benchmarks compare tiers.

// benchConfig has jina-embeddings-v4's per-layer shapes (LM 2048 wide with
// 16/2 heads and FFN 11008; ViT 1280 wide, 16 heads, FFN 3420) but two
// layers and blocks, so one layer's cost can be measured in seconds.
func benchConfig(c *synth.Config) {
	c.LM.Hidden, c.LM.Heads, c.LM.KVHeads, c.LM.FFN, c.LM.Layers = 2048, 16, 2, 11008, 2
	c.LM.MRoPE = [4]int32{16, 24, 24, 0}
	c.Vision.Width, c.Vision.Heads, c.Vision.FFN, c.Vision.Blocks = 1280, 16, 3420, 2
	c.Vision.NWAPattern = 2
}

func benchModel(b *testing.B, typ string) *Model {
	b.Helper()
	return loadSynth(b, "tiny", typ, typ, benchConfig)
}

// BenchmarkEncodeImages encodes one 448×448 image (32×32 patches, 256
// merged tokens) through two ViT blocks and the merger.
func BenchmarkEncodeImages(b *testing.B) {
	m := benchModel(b, "F16")
	img := randomImage(rand.New(rand.NewPCG(1, 1)), m, 1, 32, 32)
	for b.Loop() {
		if _, err := m.EncodeImages([]ImageInput{img}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForward runs 256 text tokens through two decoder layers.
func BenchmarkForward(b *testing.B) {
	for _, typ := range []string{"F16", "Q4_K"} {
		b.Run(typ, func(b *testing.B) {
			m := benchModel(b, typ)
			ids := sequence(rand.New(rand.NewPCG(2, 2)), m, 256, nil)
			for b.Loop() {
				if _, err := m.Forward(ids, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
