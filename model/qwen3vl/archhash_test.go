package qwen3vl

import (
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/internal/archhash"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// embeddingGolden holds the hashes of TestEmbeddingHashes by arithmetic
// name (kernels.Arithmetic), recorded on amd64 (VEMBED_ARITH_RECORD=1
// prints them): arm64's neon computes avx2's name and its integer tiers
// avx2-int8's, so under qemu they must reproduce these bits.
var embeddingGolden = map[string]uint64{
	"reference/4":             0x92e2bf3723ab6932,
	"generic/4":               0x659c5efe26af00b4,
	"avx2/4":                  0xae0a07d571c55963,
	"avx2-int8/4":             0x66f055d078dc7eda,
	"avx512-bf16+avx2-int8/4": 0x66f055d078dc7eda,
}

// TestEmbeddingHashes pins whole embeddings of the tiny Qwen3-VL pair,
// widened so that Q4_K is stored as such, in Q8_0 and Q4_K (mmproj Q8_0),
// written by synth, per arithmetic name: the preprocessed patches of a
// synthetic photo, the last-token embedding of the image with text around
// it (DeepStack rows included), its Matryoshka truncation, and a
// text-only embedding, on every tier this CPU has.
func TestEmbeddingHashes(t *testing.T) {
	var models []*Model
	for _, lmType := range []string{"Q8_0", "Q4_K"} {
		models = append(models, loadSynth(t, lmType, "Q8_0", quantWide))
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
			for _, imgs := range [][]model.ImageEmbedding{{modeltest.Place(enc[0], in, 3)}, nil} {
				seq := modeltest.Sequence(r, 24, m.LM.ImagePad, info.MergeSize, imgs)
				hidden, err := m.Forward(seq)
				if err != nil {
					t.Fatal(err)
				}
				h.PutEmbedding(t, heads.LastToken(hidden, D))
			}
		}
		return h.Sum()
	})
}
