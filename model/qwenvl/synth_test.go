package qwenvl

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/synth"
)

// loadSynth writes a synthetic pair of the preset in the given weight types
// and loads it.
func loadSynth(t testing.TB, preset, lmType, mmType string, edit func(*synth.Config)) *Model {
	t.Helper()
	m, err := Load(modeltest.SynthPair(t, preset, lmType, mmType, edit))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// randomImage returns an image input of the grid with values like
// normalized pixels.
func randomImage(r *rand.Rand, m *Model, gt, gh, gw int) ImageInput {
	return modeltest.RandomImage(r, m.Vision.patchVals, gt, gh, gw)
}

// batchTol bounds the per-row relative difference between encoding images
// together and one by one: the rows see the same math and differ at most in
// float32 summation order inside the kernels (~1e-7 per op, a few ops per
// block), so 1e-5 is tight yet robust.
const batchTol = 1e-5

func TestBatchingInvariance(t *testing.T) {
	for _, preset := range []string{"tiny", "tiny-qwen2vl"} {
		t.Run(preset, func(t *testing.T) {
			m := loadSynth(t, preset, "F32", "F32", nil)
			r := rand.New(rand.NewPCG(1, 2))
			grids := [][3]int{{1, 4, 4}, {1, 12, 18}, {1, 2, 2}, {1, 10, 6}, {2, 4, 8}, {1, 18, 10}, {1, 8, 8}}
			var imgs []ImageInput
			for _, g := range grids {
				imgs = append(imgs, randomImage(r, m, g[0], g[1], g[2]))
			}
			all, err := m.EncodeImages(imgs)
			if err != nil {
				t.Fatal(err)
			}
			for i, im := range imgs {
				one, err := m.EncodeImages([]ImageInput{im})
				if err != nil {
					t.Fatal(err)
				}
				if len(all[i]) != grids[i][0]*grids[i][1]*grids[i][2]/4*m.Info().Hidden {
					t.Fatalf("image %d: %d values", i, len(all[i]))
				}
				if c, rel := rowStats(t, all[i], one[0], m.Info().Hidden); rel > batchTol {
					t.Errorf("image %d %v: batched vs alone worst row cos %.9f rel %.3g", i, grids[i], c, rel)
				}
			}
			// Reordering the batch changes nothing either.
			rev := slices.Clone(imgs)
			slices.Reverse(rev)
			back, err := m.EncodeImages(rev)
			if err != nil {
				t.Fatal(err)
			}
			for i := range imgs {
				if _, rel := rowStats(t, back[len(imgs)-1-i], all[i], m.Info().Hidden); rel > batchTol {
					t.Errorf("image %d: reversed batch rel %.3g", i, rel)
				}
			}
		})
	}
}

// sequence builds token ids: text tokens drawn from the ordinary
// vocabulary, and per image a run of <|image_pad|> at the given position.
func sequence(r *rand.Rand, m *Model, n int, imgs []ImageEmbedding) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(r.IntN(256))
	}
	for _, im := range imgs {
		for j := 0; j < im.GridT*im.GridH*im.GridW/4; j++ {
			ids[im.First+j] = m.LM.ImagePad
		}
	}
	return ids
}

// TestInterleaved runs images in the middle of text and two images in one
// input, and checks what the single causal mask implies: rows before an
// image equal the prefix run alone, and every image influences only the
// rows from its first token on.
func TestInterleaved(t *testing.T) {
	for _, preset := range []string{"tiny", "tiny-qwen2vl"} {
		t.Run(preset, func(t *testing.T) {
			m := loadSynth(t, preset, "F32", "F32", nil)
			D := m.Info().Hidden
			r := rand.New(rand.NewPCG(3, 4))
			rows, err := m.EncodeImages([]ImageInput{randomImage(r, m, 1, 4, 6), randomImage(r, m, 1, 8, 4)})
			if err != nil {
				t.Fatal(err)
			}
			// text(5) img0(6 tokens) text(3) img1(8 tokens) text(4)
			embs := []ImageEmbedding{
				{Rows: rows[0], First: 5, GridT: 1, GridH: 4, GridW: 6},
				{Rows: rows[1], First: 14, GridT: 1, GridH: 8, GridW: 4},
			}
			ids := sequence(r, m, 26, embs)
			full, err := m.Forward(ids, embs)
			if err != nil {
				t.Fatal(err)
			}
			prefix, err := m.Forward(ids[:5], nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, rel := rowStats(t, full[:5*D], prefix, D); rel > batchTol {
				t.Errorf("text before the first image depends on what follows: rel %.3g", rel)
			}
			one, err := m.Forward(ids[:14], embs[:1])
			if err != nil {
				t.Fatal(err)
			}
			if _, rel := rowStats(t, full[:14*D], one, D); rel > batchTol {
				t.Errorf("rows before the second image depend on it: rel %.3g", rel)
			}
			// Images listed out of order are placed by First.
			swapped, err := m.Forward(ids, []ImageEmbedding{embs[1], embs[0]})
			if err != nil {
				t.Fatal(err)
			}
			if _, rel := rowStats(t, swapped, full, D); rel > batchTol {
				t.Errorf("image order in the call changed the result: rel %.3g", rel)
			}
			// The second image's content reaches the text after it.
			other := slices.Clone(embs)
			other[1].Rows = make([]float32, len(rows[1]))
			for i, v := range rows[1] {
				other[1].Rows[i] = -v
			}
			changed, err := m.Forward(ids, other)
			if err != nil {
				t.Fatal(err)
			}
			if _, rel := rowStats(t, changed[:14*D], full[:14*D], D); rel > batchTol {
				t.Errorf("changing the second image changed earlier rows: rel %.3g", rel)
			}
			if _, rel := rowStats(t, changed[22*D:], full[22*D:], D); rel < 1e-3 {
				t.Errorf("changing the second image did not reach the text after it (rel %.3g)", rel)
			}
		})
	}
}

func TestForwardErrors(t *testing.T) {
	m := loadSynth(t, "tiny", "F32", "F32", nil)
	D := m.Info().Hidden
	r := rand.New(rand.NewPCG(5, 6))
	img := ImageEmbedding{Rows: make([]float32, 6*D), First: 2, GridT: 1, GridH: 4, GridW: 6}
	ids := sequence(r, m, 10, []ImageEmbedding{img})
	bad := func(name string, ids []int32, imgs []ImageEmbedding, want string) {
		t.Helper()
		_, err := m.Forward(ids, imgs)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, want)
		}
	}
	bad("empty", nil, nil, "empty")
	bad("uncovered placeholder", ids, nil, "no image covers")
	bad("vocabulary", []int32{1, 99999}, nil, "vocabulary")
	bad("negative id", []int32{-1}, nil, "vocabulary")
	bad("short rows", ids, []ImageEmbedding{{Rows: img.Rows[:D], First: 2, GridT: 1, GridH: 4, GridW: 6}}, "values")
	bad("outside", ids, []ImageEmbedding{{Rows: img.Rows, First: 7, GridT: 1, GridH: 4, GridW: 6}}, "outside")
	bad("not a placeholder", ids, []ImageEmbedding{{Rows: img.Rows, First: 1, GridT: 1, GridH: 4, GridW: 6}}, "not <|image_pad|>")
	bad("odd grid", ids, []ImageEmbedding{{Rows: img.Rows, First: 2, GridT: 1, GridH: 3, GridW: 8}}, "grid")
	bad("huge grid", ids, []ImageEmbedding{{Rows: img.Rows, First: 2, GridT: 1 << 40, GridH: 1 << 40, GridW: 1 << 40}}, "grid")
	bad("overlap", sequence(r, m, 20, []ImageEmbedding{img, {First: 8, GridT: 1, GridH: 4, GridW: 6}}),
		[]ImageEmbedding{img, {Rows: img.Rows, First: 5, GridT: 1, GridH: 4, GridW: 6}}, "overlap")
	bad("context", make([]int32, m.Info().ContextLength+1), nil, "context")

	_, err := m.EncodeImages([]ImageInput{{Patches: make([]float32, 1176*15), GridT: 1, GridH: 3, GridW: 5}})
	if err == nil || !strings.Contains(err.Error(), "grid") {
		t.Errorf("odd image grid: err = %v", err)
	}
	_, err = m.EncodeImages([]ImageInput{{Patches: make([]float32, 1176*16), GridT: 1, GridH: 4, GridW: 8}})
	if err == nil {
		t.Error("patches shorter than the grid: no error")
	}
	_, err = m.EncodeImages([]ImageInput{{Patches: make([]float32, 1176*4), GridT: -1, GridH: -2, GridW: 2}})
	if err == nil {
		t.Error("negative grid: no error")
	}
}

// TestTiersAgree checks every fast kernel tier against the reference tier
// on whole forward passes of both tower variants, each held to the bound
// of its rounding (kernels.TierRounding): float32 tiers compute the same
// math in a different summation order, so rows agree to float32 rounding
// (the F32 model has no quantized weights, so the integer tiers do too);
// the bfloat16 tiers round the tower MLPs' products to bfloat16, so their
// rows and hidden states must keep bf16MinCos, the bound TestBF16Fixtures
// and TestBF16Synthetic hold them to against the float32 path.
func TestTiersAgree(t *testing.T) {
	var fast []kernels.Tier
	for _, tier := range kernels.Available() {
		if _, ok := kernels.TierRounding(tier); !ok {
			t.Errorf("tier %s has no stated rounding: no bound to hold it to", tier)
			continue
		}
		if tier != kernels.TierReference {
			fast = append(fast, tier)
		}
	}
	if len(fast) == 0 {
		t.Skip("this build and CPU have only the reference kernels")
	}
	def := kernels.Active()
	defer kernels.Use(def)
	for _, preset := range []string{"tiny", "tiny-qwen2vl"} {
		m := loadSynth(t, preset, "F32", "F32", nil)
		run := func(tier kernels.Tier) ([]float32, []float32) {
			if err := kernels.Use(tier); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, 8))
			rows, err := m.EncodeImages([]ImageInput{randomImage(r, m, 1, 8, 12), randomImage(r, m, 1, 6, 4)})
			if err != nil {
				t.Fatal(err)
			}
			embs := []ImageEmbedding{{Rows: rows[0], First: 3, GridT: 1, GridH: 8, GridW: 12}}
			h, err := m.Forward(sequence(r, m, 40, embs), embs)
			if err != nil {
				t.Fatal(err)
			}
			return rows[1], h
		}
		refRows, refHidden := run(kernels.TierReference)
		for _, tier := range fast {
			rows, hidden := run(tier)
			check := func(what string, got, want []float32) {
				c, rel := rowStats(t, got, want, m.Info().Hidden)
				if r, _ := kernels.TierRounding(tier); r.BF16 {
					if c < bf16MinCos {
						t.Errorf("%s %s: %s vs reference: cos %.9f < %v (the bfloat16 bound)", preset, tier, what, c, bf16MinCos)
					}
					return
				}
				if rel > batchTol {
					t.Errorf("%s %s: %s vs reference: cos %.9f rel %.3g", preset, tier, what, c, rel)
				}
			}
			check("merger rows", rows, refRows)
			check("hidden states", hidden, refHidden)
		}
	}
}

// TestForwardBatch checks that packing sequences into one pass gives each
// the result it has alone: the mask keeps them apart and positions restart.
func TestForwardBatch(t *testing.T) {
	m := loadSynth(t, "tiny", "F32", "F32", nil)
	D := m.Info().Hidden
	r := rand.New(rand.NewPCG(11, 12))
	rows, err := m.EncodeImages([]ImageInput{randomImage(r, m, 1, 4, 4), randomImage(r, m, 1, 6, 8)})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []Sequence
	for _, s := range []struct {
		n    int
		imgs []ImageEmbedding
	}{
		{7, nil},
		{20, []ImageEmbedding{{Rows: rows[1], First: 4, GridT: 1, GridH: 6, GridW: 8}}},
		{1, nil},
		{9, []ImageEmbedding{{Rows: rows[0], First: 0, GridT: 1, GridH: 4, GridW: 4}}},
		{33, nil},
	} {
		seqs = append(seqs, Sequence{IDs: sequence(r, m, s.n, s.imgs), Images: s.imgs})
	}
	got, err := m.ForwardBatch(seqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, sq := range seqs {
		want, err := m.Forward(sq.IDs, sq.Images)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[i]) != len(sq.IDs)*D {
			t.Fatalf("sequence %d: %d values", i, len(got[i]))
		}
		if c, rel := rowStats(t, got[i], want, D); rel > batchTol {
			t.Errorf("sequence %d: batched vs alone cos %.9f rel %.3g", i, c, rel)
		}
	}
	seqs[2].IDs = nil
	if _, err := m.ForwardBatch(seqs); err == nil || !strings.Contains(err.Error(), "sequence 2") {
		t.Errorf("empty sequence in a batch: err = %v", err)
	}
}
