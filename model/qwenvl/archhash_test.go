package qwenvl

import (
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/internal/archhash"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/synth"
)

// embeddingGolden holds embeddingHash by arithmetic name
// (kernels.Arithmetic), recorded on amd64 (VEMBED_ARITH_RECORD=1 prints
// them): arm64's neon computes avx2's name and its integer tiers
// avx2-int8's, so under qemu they must reproduce these bits.
var embeddingGolden = map[string]uint64{
	"reference/4":             0x85cb9ecb011171cf,
	"generic/4":               0x3ce65cee428745a4,
	"avx2/4":                  0x7f21c506b82257c3,
	"avx2-int8/4":             0x6d45c48650eac395,
	"avx512-bf16+avx2-int8/4": 0x6d45c48650eac395,
}

// TestEmbeddingHashes pins whole embeddings of the tiny Qwen2.5-VL pair in
// Q8_0 and Q4_K (mmproj Q8_0), written by synth, per arithmetic name: the
// preprocessed patches of a synthetic photo, the image's pooled embedding
// with text around it, its Matryoshka truncation, and a text-only
// embedding, on every tier this CPU has.
func TestEmbeddingHashes(t *testing.T) {
	photo, err := synth.Photo(90, 3, "png")
	if err != nil {
		t.Fatal(err)
	}
	cfg := imageproc.JinaV4Config()
	cfg.MaxPixels = 112 * 112
	p, err := imageproc.Preprocess(photo, cfg, imageproc.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var models []*Model
	for _, lmType := range []string{"Q8_0", "Q4_K"} {
		models = append(models, loadSynth(t, "tiny", lmType, "Q8_0", quantConfig))
	}
	archhash.ArithmeticHashes(t, embeddingGolden, func(t *testing.T) uint64 {
		h := archhash.NewHash()
		h.Put(p.Data)
		for _, m := range models {
			D := m.Info().Hidden
			rows, err := m.EncodeImages([]ImageInput{{Patches: p.Data, GridT: p.GridT, GridH: p.GridH, GridW: p.GridW}})
			if err != nil {
				t.Fatal(err)
			}
			embs := []ImageEmbedding{{Rows: rows[0], First: 3, GridT: p.GridT, GridH: p.GridH, GridW: p.GridW}}
			r := rand.New(rand.NewPCG(5, 6))
			for _, in := range [][]ImageEmbedding{embs, nil} {
				ids := sequence(r, m, 24, in)
				hidden, err := m.Forward(ids, in)
				if err != nil {
					t.Fatal(err)
				}
				h.PutEmbedding(t, heads.MeanPool(hidden, D, 0, len(ids)))
			}
		}
		return h.Sum()
	})
}
