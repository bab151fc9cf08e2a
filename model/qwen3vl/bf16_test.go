package qwen3vl

import (
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// TestBF16Fixtures runs every embedding case of the qwen3vl fixtures (text
// and image, DeepStack included) on every bfloat16 tier
// (kernels.BF16Tiers) and on the
// float32 path (avx2): the last-token embeddings must keep a cosine of
// 0.9999 (the bound model/qwenvl's bf16MinCos derives).
func TestBF16Fixtures(t *testing.T) {
	bfTiers := modeltest.NeedBF16(t)
	dir, ix := loadFixtures(t)
	m, err := Load(filepath.Join(dir, ix.LM), filepath.Join(dir, ix.MMProj))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	D := m.Info().Hidden
	for _, ic := range ix.Cases {
		if ic.Kind == "rerank" {
			continue
		}
		cdir := filepath.Join(dir, "cases", ic.ID)
		var c fixCase
		fixtures.ReadJSON(t, filepath.Join(cdir, "case.json"), &c)
		run := func(tier kernels.Tier) []float32 {
			if err := kernels.Use(tier); err != nil {
				t.Fatal(err)
			}
			seq := model.Sequence{IDs: c.TokenIDs}
			if len(c.Images) > 0 {
				enc := encodeCase(t, m, cdir, c)[0]
				g := c.Images[0].GridTHW
				seq.Images = []model.ImageEmbedding{{Rows: enc.Rows, Deep: enc.Deep, First: imageSpans(c.TokenIDs, m.LM.ImagePad)[0], GridT: g[0], GridH: g[1], GridW: g[2]}}
			}
			h, err := m.Forward(seq)
			if err != nil {
				t.Fatal(err)
			}
			last := append([]float32(nil), h[len(h)-D:]...)
			heads.Normalize(last)
			return last
		}
		f32 := run(modeltest.Float32Tier())
		for _, tier := range bfTiers {
			bf := run(tier)
			cos := fixtures.Cosine(bf, f32)
			t.Logf("%s %s: cos(bf16, f32) %.8f; vs reference: bf16 %.8f f32 %.8f", c.ID, tier, cos, fixtures.Cosine(bf, c.Embedding), fixtures.Cosine(f32, c.Embedding))
			if cos < 0.9999 {
				t.Errorf("%s %s: cos(bf16, f32) = %.8f < 0.9999", c.ID, tier, cos)
			}
		}
	}
}
