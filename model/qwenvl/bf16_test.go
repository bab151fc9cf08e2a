package qwenvl

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// bf16MinCos is the cosine the bfloat16 tiers' embeddings must keep to
// the float32 path's. Rounding both factors of a product to bfloat16
// moves it by a relative error of RMS about 2·2⁻⁸/√3 per term, which over
// K random-signed terms leaves the product's relative error near
// 2⁻⁸·√(2/3) ≈ 0.3%; the M products on a token's path add in quadrature,
// 1−cos ≈ (0.003²·M)/2, about 1e-4 for the 15 products of the 2-layer
// fixture models before pooling divides it. Measured: 1−cos of 2e-6 to
// 1.5e-5 with mean pooling, up to 4.7e-5 with qwen3vl's last token.
const bf16MinCos = 0.9999

// TestBF16Fixtures runs every float fixture model on every bfloat16 tier
// and on the float32 path (avx2, or neon on arm64): the tiny Qwen2.5-VL pair (F32) on its
// text, image and interleaved cases, and the text models of the quant
// fixtures stored in F32, F16 and BF16.
func TestBF16Fixtures(t *testing.T) {
	bfTiers := modeltest.NeedBF16(t)
	dir, ix := modelFixtures(t)
	m, err := Load(filepath.Join(dir, ix.LM), filepath.Join(dir, ix.MMProj))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	D := m.Info().Hidden
	for _, ic := range ix.Cases {
		cdir := filepath.Join(dir, ic.Dir)
		c := &fixtureCase{}
		fixtures.ReadJSON(t, filepath.Join(cdir, "case.json"), c)
		run := func(tier kernels.Tier) []float32 {
			if err := kernels.Use(tier); err != nil {
				t.Fatal(err)
			}
			return pooled(c, runCase(t, m, cdir, c).hidden, D)
		}
		f32 := run(modeltest.Float32Tier())
		want := c.Embedding
		if c.Kind == "interleaved" {
			want = c.Alternatives.TextRule // what pooled computes
		}
		for _, tier := range bfTiers {
			bf := run(tier)
			cos := fixtures.Cosine(bf, f32)
			t.Logf("%s %s: cos(bf16, f32) %.8f; vs reference: bf16 %.8f f32 %.8f", c.ID, tier, cos, fixtures.Cosine(bf, want), fixtures.Cosine(f32, want))
			if cos < bf16MinCos {
				t.Errorf("%s %s: cos(bf16, f32) = %.8f < %v", c.ID, tier, cos, bf16MinCos)
			}
		}
	}

	qdir := fixtures.Dir(t, "quant")
	for _, typ := range []string{"F32", "F16", "BF16"} {
		var ref struct {
			Cases []struct {
				IDs       []int32   `json:"ids"`
				Reference []float32 `json:"embedding_reference"`
			} `json:"cases"`
		}
		fixtures.ReadJSON(t, filepath.Join(qdir, "q256-"+typ+".embeddings.json"), &ref)
		qm, err := Load(filepath.Join(qdir, "q256-"+typ+".gguf"), "")
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range ref.Cases {
			f32 := embedText(t, qm, modeltest.Float32Tier(), c.IDs)
			for _, tier := range bfTiers {
				bf := embedText(t, qm, tier, c.IDs)
				cos := fixtures.Cosine(bf, f32)
				t.Logf("q256-%s case %d %s: cos(bf16, f32) %.8f; vs reference: bf16 %.8f f32 %.8f", typ, i, tier, cos, fixtures.Cosine(bf, c.Reference), fixtures.Cosine(f32, c.Reference))
				if cos < bf16MinCos {
					t.Errorf("q256-%s case %d %s: cos(bf16, f32) = %.8f < %v", typ, i, tier, cos, bf16MinCos)
				}
			}
		}
		qm.Close()
	}
}

// TestBF16Synthetic runs synthetic models with F16 towers (the usual
// mmproj type) beside F16 and F32 LMs, through the vision tower and an
// interleaved LM pass, on every bfloat16 tier and the float32 path: the
// tower's rows (each one an embedding of a multi-vector model) and the
// pooled embedding must keep bf16MinCos, and the rows must differ, or the
// tier did not multiply the MLPs in bfloat16.
func TestBF16Synthetic(t *testing.T) {
	bfTiers := modeltest.NeedBF16(t)
	for _, w := range [][2]string{{"F16", "F16"}, {"F32", "F16"}, {"BF16", "BF16"}} {
		for _, preset := range []string{"tiny", "tiny-qwen2vl"} {
			m := loadSynth(t, preset, w[0], w[1], nil)
			r := rand.New(rand.NewPCG(31, 32))
			img := randomImage(r, m, 1, 8, 12)
			ids := sequence(r, m, 40, []ImageEmbedding{{First: 5, GridT: 1, GridH: 8, GridW: 12}})
			run := func(tier kernels.Tier) (rows, e []float32) {
				if err := kernels.Use(tier); err != nil {
					t.Fatal(err)
				}
				out, err := m.EncodeImages([]ImageInput{img})
				if err != nil {
					t.Fatal(err)
				}
				h, err := m.Forward(ids, []ImageEmbedding{{Rows: out[0], First: 5, GridT: 1, GridH: 8, GridW: 12}})
				if err != nil {
					t.Fatal(err)
				}
				e = heads.MeanPool(h, m.Info().Hidden, 0, len(ids))
				heads.Normalize(e)
				return out[0], e
			}
			f32Rows, f32 := run(modeltest.Float32Tier())
			for _, tier := range bfTiers {
				bfRows, bf := run(tier)
				name := fmt.Sprintf("%s LM %s mmproj %s on %s", preset, w[0], w[1], tier)
				worst, _ := rowStats(t, bfRows, f32Rows, m.Info().Hidden)
				cos := fixtures.Cosine(bf, f32)
				t.Logf("%s: cos(bf16, f32) %.8f, tower rows worst %.8f", name, cos, worst)
				if cos < bf16MinCos || worst < bf16MinCos {
					t.Errorf("%s: cos(bf16, f32) = %.8f, worst tower row %.8f; want >= %v", name, cos, worst, bf16MinCos)
				}
				if slices.Equal(bfRows, f32Rows) {
					t.Errorf("%s: the bfloat16 tier computed the tower's float32 bits", name)
				}
			}
		}
	}
}
