package qwen3vl

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/synth"
)

// decoderMode returns an edit that writes the decoder-mode keys.
func decoderMode(causal, norm bool) func(*synth.Config) {
	return func(c *synth.Config) {
		c.LM.Extra = []qwenlayout.KV{{Key: model.KeyCausal, Value: causal}, {Key: model.KeyOutputNorm, Value: norm}}
	}
}

// TestBidirectional checks the decoder mode of nemotron-colembed-vl-v2's
// conversion: with model.KeyCausal false an early token sees later ones
// (under the causal mask it cannot), a chunk that is not a whole sequence
// is refused, a sequence's rows are the same bits alone and packed with
// others, and with model.KeyOutputNorm false the rows are the last layer's
// output, which the output norm maps onto the normed model's rows exactly.
func TestBidirectional(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	causal := loadSynth(t, "F32", "F32", decoderMode(true, true))
	bidi := loadSynth(t, "F32", "F32", decoderMode(false, true))
	raw := loadSynth(t, "F32", "F32", decoderMode(false, false))
	if causal.Info().Bidirectional || !bidi.Info().Bidirectional || !bidi.Info().OutputNorm || raw.Info().OutputNorm {
		t.Fatalf("Info: causal %+v bidi %+v raw %+v", causal.Info().Bidirectional, bidi.Info().Bidirectional, raw.Info().OutputNorm)
	}
	info := bidi.Info()
	var imgs []model.ImageInput
	for _, g := range [][3]int{{1, 4, 4}, {1, 12, 16}} {
		imgs = append(imgs, modeltest.RandomImage(r, info.PatchValues, g[0], g[1], g[2]))
	}
	enc := modeltest.VisionInvariance(t, bidi, imgs)
	place := func(i, first int) model.ImageEmbedding { return modeltest.Place(enc[i], imgs[i], first) }
	seqs := []model.Sequence{
		modeltest.Sequence(r, 7, bidi.LM.ImagePad, info.MergeSize, nil),
		modeltest.Sequence(r, 150, bidi.LM.ImagePad, info.MergeSize, []model.ImageEmbedding{place(1, 4), place(0, 100)}),
		modeltest.Sequence(r, 1, bidi.LM.ImagePad, info.MergeSize, nil),
		modeltest.Sequence(r, 300, bidi.LM.ImagePad, info.MergeSize, nil),
	}
	for _, m := range []*Model{bidi, raw} {
		D := m.Info().Hidden
		packed := modeltest.Forward(t, m, seqs)
		for i, sq := range seqs {
			alone := modeltest.Forward(t, m, []model.Sequence{sq})[0]
			modeltest.SameBits(t, "packed vs alone", packed[i], alone)
			if len(alone) != len(sq.IDs)*D {
				t.Fatalf("%d values for %d tokens", len(alone), len(sq.IDs))
			}
		}
		st, err := m.NewState(seqs[1])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.ForwardChunks([]model.Chunk{{State: st, N: 20}}); err == nil || !strings.Contains(err.Error(), "one chunk") {
			t.Fatalf("a partial chunk of a bidirectional sequence: err %v", err)
		}
	}

	// Changing the last token changes the first row only without the
	// causal mask.
	a := modeltest.Sequence(r, 12, bidi.LM.ImagePad, info.MergeSize, nil)
	b := model.Sequence{IDs: append([]int32(nil), a.IDs...)}
	b.IDs[11] = (a.IDs[11] + 1) % 200
	D := info.Hidden
	for _, c := range []struct {
		m    *Model
		same bool
	}{{causal, true}, {bidi, false}} {
		ra, rb := modeltest.Forward(t, c.m, []model.Sequence{a})[0], modeltest.Forward(t, c.m, []model.Sequence{b})[0]
		same := true
		for i := range D {
			same = same && ra[i] == rb[i]
		}
		if same != c.same {
			t.Errorf("bidirectional %v: first row unchanged by the last token: %v", c.m.Info().Bidirectional, same)
		}
	}

	// The raw rows, normed with output_norm, are the normed model's rows.
	want := modeltest.Forward(t, bidi, seqs)
	got := modeltest.Forward(t, raw, seqs)
	for i := range seqs {
		normed := make([]float32, len(got[i]))
		kernels.RMSNorm(normed, got[i], raw.LM.OutputNormWeight(), D, raw.LM.Eps())
		modeltest.SameBits(t, "output norm applied to the raw rows", normed, want[i])
		if slices.Equal(got[i], want[i]) {
			t.Fatal("rows without the output norm equal those with it")
		}
	}
}
