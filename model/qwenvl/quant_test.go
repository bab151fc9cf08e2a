package qwenvl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/synth"
)

// quantConfig widens the tiny preset so that every matrix input width is a
// multiple of 256 and the K and IQ4_XS types really apply (the tiny
// preset's 32- and 64-wide rows would fall back to 32-value block types).
func quantConfig(c *synth.Config) {
	c.LM.Hidden, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 256, 4, 2, 256
	c.LM.MRoPE = [4]int32{8, 12, 12, 0}
	c.Vision.Width, c.Vision.Heads, c.Vision.FFN = 256, 4, 256
}

// quantError returns the relative RMS difference between the matrices of
// two files with the same tensors: (Σ‖Wq−W‖² / Σ‖W‖²)^½ over every 2-D
// tensor, which is the weight perturbation the type introduces.
func quantError(t *testing.T, ref, q string) float64 {
	t.Helper()
	fr, err := gguf.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	fq, err := gguf.Open(q)
	if err != nil {
		t.Fatal(err)
	}
	defer fq.Close()
	var num, den float64
	for _, tr := range fr.Tensors {
		if len(tr.Dims) < 2 {
			continue
		}
		tq := fq.Tensor(tr.Name)
		if tq == nil {
			t.Fatalf("%s: tensor %s missing", q, tr.Name)
		}
		a, err1 := tr.Float32s()
		b, err2 := tq.Float32s()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for i := range a {
			d := float64(b[i]) - float64(a[i])
			num += d * d
			den += float64(a[i]) * float64(a[i])
		}
	}
	return math.Sqrt(num / den)
}

// TestWeightTypes runs the same synthetic model stored in every weight type
// vembed supports against its F32 original, through the vision tower and an
// interleaved LM pass.
//
// Tolerance: a weight perturbation of relative size ε changes each
// matrix product by about ε relative (uncorrelated rounding errors). The
// M products on a token's path add such errors roughly in quadrature, and
// norms and residual sums do not amplify them, so rows move by at most
// about ε·√M (ε measured from the two files; this model shows about a
// third of that), and the pooled embedding by 1−cos ≤ (ε√M)²/2. For the
// coarsest types that bound says little, so each embedding must also stay
// closer to the F32 one than the F32 embedding of a different input is.
func TestWeightTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and runs a model in 16 encodings")
	}
	dir := t.TempDir()
	write := func(typ string) (string, string) {
		cfg, err := synth.Preset("tiny")
		if err != nil {
			t.Fatal(err)
		}
		quantConfig(&cfg)
		cfg.LMType, cfg.MMProjType = typ, typ
		lm, mm, err := synth.WritePair(dir, cfg)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return lm, mm
	}
	refLM, refMM := write("F32")
	ref, err := Load(refLM, refMM)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	D := ref.Info().Hidden
	r := rand.New(rand.NewPCG(13, 14))
	img := randomImage(r, ref, 1, 8, 12)
	run := func(m *Model, ids []int32) ([]float32, []float32, []float32) {
		rows, err := m.EncodeImages([]ImageInput{img})
		if err != nil {
			t.Fatal(err)
		}
		embs := []ImageEmbedding{{Rows: rows[0], First: 5, GridT: 1, GridH: 8, GridW: 12}}
		h, err := m.Forward(ids, embs)
		if err != nil {
			t.Fatal(err)
		}
		e := heads.MeanPool(h, D, 0, len(ids))
		heads.Normalize(e)
		return rows[0], h, e
	}
	ids := sequence(r, ref, 40, []ImageEmbedding{{First: 5, GridT: 1, GridH: 8, GridW: 12}})
	refRows, refHidden, refEmb := run(ref, ids)
	otherIDs := sequence(r, ref, 40, []ImageEmbedding{{First: 5, GridT: 1, GridH: 8, GridW: 12}})
	_, _, otherEmb := run(ref, otherIDs)
	baseline := fixtures.Cosine(refEmb, otherEmb)

	// Products on the path to a hidden row: the token embedding, 7 per LM
	// layer; to a merger row: the patch embedding, 6 per ViT block, 2 in
	// the merger.
	lmInfo, vis := ref.Info(), ref.Vision
	mLM := float64(1 + 7*lmInfo.Layers)
	mVis := float64(1 + 6*len(vis.blocks) + 2)
	for _, typ := range []string{"F16", "BF16", "Q8_0", "Q6_K", "Q5_K", "Q5_1", "Q5_0", "Q4_K", "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K", "Q2_K", "Q4_K_M"} {
		lm, mm := write(typ)
		// The int8 tier's activation quantization perturbs every product
		// too; relative errors of a product add.
		eps := math.Max(quantError(t, refLM, lm), quantError(t, refMM, mm)) + int8ActError(t, lm, mm)
		m, err := Load(lm, mm)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		rows, hidden, emb := run(m, ids)
		m.Close()
		_, visRel := rowStats(t, rows, refRows, D)
		_, lmRel := rowStats(t, hidden, refHidden, D)
		ec := fixtures.Cosine(emb, refEmb)
		visTol, lmTol := eps*math.Sqrt(mVis), eps*math.Sqrt(mVis+mLM)
		embTol := 1 - lmTol*lmTol/2
		t.Logf("%-6s weight error %.2e: merger rows rel %.2e (bound %.2e), hidden rel %.2e (bound %.2e), embedding cos %.7f (bound %.7f, unrelated input %.4f)",
			typ, eps, visRel, visTol, lmRel, lmTol, ec, embTol, baseline)
		if eps == 0 {
			t.Errorf("%s: the file equals the F32 one; the type was not applied", typ)
		}
		if visRel > visTol || lmRel > lmTol || ec < embTol || ec <= baseline {
			t.Errorf("%s: outside the quantization bound", typ)
		}
	}
}
