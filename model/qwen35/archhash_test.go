package qwen35

import (
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/internal/archhash"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/synth"
)

// embeddingGolden holds the hashes of TestEmbeddingHashes by arithmetic
// name (kernels.Arithmetic), recorded on amd64 (VEMBED_ARITH_RECORD=1
// prints them): arm64's neon computes avx2's name and its integer tiers
// avx2-int8's, so under qemu they must reproduce these bits.
var embeddingGolden = map[string]uint64{
	"reference/4":             0x4210b03e4158ddb2,
	"generic/4":               0x1c634cd31ce60e6d,
	"avx2/4":                  0x243f077306142c38,
	"avx2-int8/4":             0xd9515d16fcc77109,
	"avx512-bf16+avx2-int8/4": 0xd9515d16fcc77109,
}

// TestEmbeddingHashes pins whole embeddings of the tiny Qwen3.5 pair
// (widened so that K types are stored as such) in Q8_0 and Q4_K_M
// (mmproj Q8_0), per arithmetic name: the preprocessed patches of a
// synthetic photo, the last-token embedding of the image with text around
// it, its Matryoshka truncation, and text-only embeddings shorter and
// longer than a delta-rule block (64 tokens), on every tier this CPU has.
func TestEmbeddingHashes(t *testing.T) {
	wide := func(c *synth.Config) { tinyColVec(false)(c); quantWide(c) }
	var models []*Model
	for _, lmType := range []string{"Q8_0", "Q4_K_M"} {
		models = append(models, loadSynth(t, modeltest.Weights{LM: lmType, MMProj: "Q8_0"}, wide))
	}
	info := models[0].Info()
	in := modeltest.Photo(t, info)
	archhash.ArithmeticHashes(t, embeddingGolden, func(t *testing.T) uint64 {
		h := archhash.NewHash()
		h.Put(in.Patches)
		for _, m := range models {
			D := m.Info().Hidden
			enc := modeltest.Encode(t, m, []model.ImageInput{in})
			r := rand.New(rand.NewPCG(5, 6))
			for _, s := range []struct {
				n    int
				imgs []model.ImageEmbedding
			}{{24, []model.ImageEmbedding{modeltest.Place(enc[0], in, 3)}}, {24, nil}, {150, nil}} {
				seq := modeltest.Sequence(r, s.n, m.LM.ImagePad, info.MergeSize, s.imgs)
				hidden := modeltest.Forward(t, m, []model.Sequence{seq})[0]
				h.PutEmbedding(t, heads.LastToken(hidden, D))
			}
		}
		return h.Sum()
	})
}
