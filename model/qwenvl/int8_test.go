package qwenvl

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/synth"
)

// int8MinCos is the cosine the avx2-int8 tier's embeddings must keep to
// the float32 path's (the figure the tier was specified with). Quantizing a
// product's activations per 32 values perturbs it by about
// RMS(x−d·q)/RMS(x) = (d/√12)/σ ≈ 2.5/(127·√12) ≈ 0.6% (d = amax/127,
// amax ≈ 2.5σ over 32 Gaussian values). The M products on a token's path
// add such errors in quadrature; pooling T tokens divides them by √T if
// they are uncorrelated across tokens, not at all if attention makes them
// agree: 1−cos ≈ (0.006²·M/T)/2 to (0.006²·M)/2, 1.6e-5 to 2.7e-4 for the
// 2-layer fixture model (M = 15, T ≈ 17). Measured over the twelve
// fixture types: 1.9e-5 to 5.4e-5 (IQ4_NL the worst), closer to the
// fixture's reference than llama.cpp's quantized activations (Q8_K per
// 256 for the K-quants) for the K-quants, Q8_0, Q5_1 and IQ4_XS, and
// within 3e-6 of it for Q4_0, Q4_1, Q5_0 and IQ4_NL (TestInt8Fixtures
// logs both).
const int8MinCos = 0.9999

// needInt8 skips a test on CPUs without an integer tier and otherwise
// lets the tier multiply products of any height in integers (the small
// inputs here are below its default row threshold); it returns a function
// that restores the active tier and the threshold.
func needInt8(t *testing.T) func() {
	t.Helper()
	if len(int8Tiers()) == 0 {
		t.Skip("no integer tier on this CPU (avx2-int8, neon-dotprod)")
	}
	saved := kernels.Active()
	rows := kernels.SetInt8MinRows(0)
	return func() {
		kernels.Use(saved)
		kernels.SetInt8MinRows(rows)
	}
}

// int8Tiers lists the integer tiers this CPU has: avx2-int8 and the VNNI
// tiers, whose results equal its bit for bit, or on arm64 neon-dotprod and
// i8mm, whose results are avx2-int8's too (TestEmbeddingHashes).
func int8Tiers() []kernels.Tier {
	var out []kernels.Tier
	for _, t := range []kernels.Tier{kernels.TierAVX2Int8, kernels.TierAVX512VNNI, kernels.TierAVXVNNI,
		kernels.TierNEONDotProd, kernels.TierI8MM} {
		if slices.Contains(kernels.Available(), t) {
			out = append(out, t)
		}
	}
	return out
}

// embedText returns the mean-pooled, normalized embedding of ids on tier.
func embedText(t *testing.T, m *Model, tier kernels.Tier, ids []int32) []float32 {
	t.Helper()
	if err := kernels.Use(tier); err != nil {
		t.Fatal(err)
	}
	h, err := m.Forward(ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := heads.MeanPool(h, m.Info().Hidden, 0, len(ids))
	heads.Normalize(e)
	return e
}

// TestInt8Fixtures runs the llama.cpp-quantized fixture models of every
// type the integer tiers multiply on those tiers and on the float32 path.
func TestInt8Fixtures(t *testing.T) {
	defer needInt8(t)()
	dir := fixtures.Dir(t, "quant")
	for _, typ := range []string{"Q8_0", "Q6_K", "Q5_K", "Q5_1", "Q5_0", "Q4_K", "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K", "Q2_K"} {
		var ref struct {
			Cases []struct {
				IDs       []int32   `json:"ids"`
				Reference []float32 `json:"embedding_reference"`
				LlamaCpp  []float32 `json:"embedding_llamacpp"`
			} `json:"cases"`
		}
		fixtures.ReadJSON(t, filepath.Join(dir, "q256-"+typ+".embeddings.json"), &ref)
		m, err := Load(filepath.Join(dir, "q256-"+typ+".gguf"), "")
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range ref.Cases {
			f32 := embedText(t, m, modeltest.Float32Tier(), c.IDs)
			// Tiers of one arithmetic name (kernels.Arithmetic: the VNNI
			// tiers, neon-dotprod and i8mm avx2-int8's) must agree bit for
			// bit on the whole model, not only on the products.
			byName := map[string][]float32{}
			for _, tier := range int8Tiers() {
				i8 := embedText(t, m, tier, c.IDs)
				name := kernels.Arithmetic()
				if prev, ok := byName[name]; ok && !slices.Equal(prev, i8) {
					t.Errorf("%s case %d %s: other bits than the earlier tier of arithmetic %s", typ, i, tier, name)
				}
				byName[name] = i8
				cos := fixtures.Cosine(i8, f32)
				t.Logf("%s case %d %s: cos(int8, f32) %.7f; vs reference: int8 %.7f f32 %.7f; llama.cpp vs reference %.7f",
					typ, i, tier, cos, fixtures.Cosine(i8, c.Reference), fixtures.Cosine(f32, c.Reference), fixtures.Cosine(c.LlamaCpp, c.Reference))
				if cos < int8MinCos {
					t.Errorf("%s case %d %s: cos(int8, f32) = %.7f < %v", typ, i, tier, cos, int8MinCos)
				}
			}
		}
		m.Close()
	}
}

// TestInt8Synthetic runs synthetic models with 256-wide matrices, so the
// K types apply, through the vision tower and an interleaved LM pass on
// both tiers.
func TestInt8Synthetic(t *testing.T) {
	defer needInt8(t)()
	for _, typ := range []string{"Q8_0", "Q4_K", "Q6_K"} {
		m := loadSynth(t, "tiny", typ, typ, func(c *synth.Config) { quantConfig(c) })
		r := rand.New(rand.NewPCG(21, 22))
		img := randomImage(r, m, 1, 8, 12)
		ids := sequence(r, m, 40, []ImageEmbedding{{First: 5, GridT: 1, GridH: 8, GridW: 12}})
		run := func(tier kernels.Tier) []float32 {
			if err := kernels.Use(tier); err != nil {
				t.Fatal(err)
			}
			rows, err := m.EncodeImages([]ImageInput{img})
			if err != nil {
				t.Fatal(err)
			}
			h, err := m.Forward(ids, []ImageEmbedding{{Rows: rows[0], First: 5, GridT: 1, GridH: 8, GridW: 12}})
			if err != nil {
				t.Fatal(err)
			}
			e := heads.MeanPool(h, m.Info().Hidden, 0, len(ids))
			heads.Normalize(e)
			return e
		}
		f32 := run(modeltest.Float32Tier())
		for _, tier := range int8Tiers() {
			cos := fixtures.Cosine(run(tier), f32)
			t.Logf("%s %s: cos(int8, f32) %.7f", typ, tier, cos)
			if cos < int8MinCos {
				t.Errorf("%s %s: cos(int8, f32) = %.7f < %v", typ, tier, cos, int8MinCos)
			}
		}
	}
}

// int8ActError bounds the relative RMS error that quantizing activations
// adds to each product when the active tier does so for a weight type of
// the given files (else 0). Per block of 32 values the step is
// d = amax/127 and the rounding error is uniform in ±d/2, RMS d/√12; since
// amax ≤ √32·RMS of the block, the relative RMS error is at most
// √32/(127·√12) ≈ 0.0129, whatever the activations.
func int8ActError(t *testing.T, paths ...string) float64 {
	t.Helper()
	for _, p := range paths {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		quantized := false
		for _, tr := range f.Tensors {
			if len(tr.Dims) >= 2 && kernels.QuantizesActivations(tr.Type) {
				quantized = true
			}
		}
		f.Close()
		if quantized {
			return math.Sqrt(32) / (127 * math.Sqrt(12))
		}
	}
	return 0
}
