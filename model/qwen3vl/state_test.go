package qwen3vl

import (
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/synth"
)

// loadSynth writes a pair of the tiny-qwen3vl preset in the given weight
// types, edited by edit, and loads it.
func loadSynth(t testing.TB, lmType, mmType string, edit func(*synth.Config)) *Model {
	t.Helper()
	m, err := Load(modeltest.SynthPair(t, "tiny-qwen3vl", lmType, mmType, edit))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// quantWide widens the tiny preset so that every matrix row is a whole
// number of 256-value blocks and K types are stored as such rather than
// as their fallbacks.
func quantWide(c *synth.Config) {
	c.LM.Hidden, c.LM.FFN, c.LM.HeadDim = 256, 256, 64
	c.LM.MRoPE = [4]int32{12, 10, 10, 0}
	c.Vision.Width, c.Vision.FFN = 64, 256
}

// TestServingInvariance checks the promises the serving engine builds on
// for Qwen3-VL, DeepStack rows included: an image's encoding and a
// sequence's hidden states are bit for bit the same alone, batched with
// others, computed by a vision pass stepped a stage at a time, or cut into
// chunks spread over passes shared with other sequences (chunk edges
// falling inside images, whose DeepStack rows are then added piecewise);
// for every kernel tier and for float and quantized weights.
func TestServingInvariance(t *testing.T) {
	modeltest.EachWeightsAndTier(t, modeltest.InvarianceWeights, func(w modeltest.Weights) *Model {
		var edit func(*synth.Config)
		if w.LM == "Q4_K_M" {
			edit = quantWide
		}
		return loadSynth(t, w.LM, w.MMProj, edit)
	}, servingInvariance)
}

func servingInvariance(t *testing.T, m *Model) {
	r := rand.New(rand.NewPCG(5, 6))
	info := m.Info()
	var imgs []model.ImageInput
	for _, g := range [][3]int{{1, 4, 4}, {1, 12, 16}, {1, 2, 2}, {2, 4, 8}} {
		imgs = append(imgs, modeltest.RandomImage(r, info.PatchValues, g[0], g[1], g[2]))
	}
	enc := modeltest.VisionInvariance(t, m, imgs)
	if len(enc[0].Deep) != m.LM.DeepStack || m.LM.DeepStack == 0 {
		t.Fatalf("%d DeepStack sets per image, the LM adds %d", len(enc[0].Deep), m.LM.DeepStack)
	}
	place := func(i, first int) model.ImageEmbedding { return modeltest.Place(enc[i], imgs[i], first) }
	var seqs []model.Sequence
	for _, s := range []struct {
		n    int
		imgs []model.ImageEmbedding
	}{
		{7, nil},
		{150, []model.ImageEmbedding{place(1, 4), place(0, 100)}},
		{1, nil},
		{9, []model.ImageEmbedding{place(0, 0)}},
		{300, nil},
		{60, []model.ImageEmbedding{place(3, 30)}},
	} {
		seqs = append(seqs, modeltest.Sequence(r, s.n, m.LM.ImagePad, info.MergeSize, s.imgs))
	}
	modeltest.SequenceInvariance(t, m, seqs)
}
