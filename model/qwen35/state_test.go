package qwen35

import (
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/synth"
)

// tinyColVec shrinks the colvec1.1-4b preset to the fixtures' sizes (LM 64
// wide, 4 layers of which the last is full attention, DeltaNet 2 key / 4
// value heads of 16; ViT 32 wide, 4 blocks), keeping it a causal model
// unless bidirectional.
func tinyColVec(bidirectional bool) func(*synth.Config) {
	return func(c *synth.Config) {
		c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN, c.LM.HeadDim = 64, 4, 4, 2, 128, 32
		c.LM.MRoPE = [4]int32{2, 1, 1, 0}
		c.LM.DeltaNet = qwenlayout.DeltaNetConfig{Interval: 4, KeyHeads: 2, ValueHeads: 4, KeyDim: 16, ValueDim: 16, ConvKernel: 4, RopeDims: 8}
		c.LM.Vocab = 512
		c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 32, 4, 2, 64
		c.MVProj.OutputDim = 32
		c.LM.Extra = []qwenlayout.KV{{Key: qwenlayout.Qwen35CausalKey, Value: !bidirectional}}
	}
}

// quantWide widens the tiny model so that K types are stored as such.
func quantWide(c *synth.Config) {
	c.LM.Hidden, c.LM.FFN, c.LM.HeadDim = 256, 256, 64
	c.LM.MRoPE = [4]int32{4, 6, 6, 0}
	c.LM.DeltaNet.RopeDims = 32
	c.Vision.Width, c.Vision.FFN = 64, 256
}

func loadSynth(t testing.TB, w modeltest.Weights, edit func(*synth.Config)) *Model {
	t.Helper()
	m, err := Load(modeltest.SynthPair(t, "colvec1.1-4b", w.LM, w.MMProj, edit))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestServingInvariance checks the promises the serving engine builds on
// for Qwen3.5: an image's encoding and a sequence's hidden states are bit
// for bit the same alone, batched with others, or cut into chunks spread
// over passes shared with other sequences (chunk edges inside the delta
// rule's blocks and inside images), for every kernel tier and for float
// and quantized weights; a bidirectional model's sequences alone and
// packed.
func TestServingInvariance(t *testing.T) {
	modeltest.EachWeightsAndTier(t, modeltest.InvarianceWeights, func(w modeltest.Weights) *Model {
		edit := tinyColVec(false)
		if w.LM == "Q4_K_M" {
			edit = func(c *synth.Config) { tinyColVec(false)(c); quantWide(c) }
		}
		return loadSynth(t, w, edit)
	}, func(t *testing.T, m *Model) {
		r := rand.New(rand.NewPCG(5, 6))
		info := m.Info()
		var imgs []model.ImageInput
		for _, g := range [][3]int{{1, 4, 4}, {1, 12, 16}, {1, 2, 2}} {
			imgs = append(imgs, modeltest.RandomImage(r, info.PatchValues, g[0], g[1], g[2]))
		}
		enc := modeltest.VisionInvariance(t, m, imgs)
		place := func(i, first int) model.ImageEmbedding { return modeltest.Place(enc[i], imgs[i], first) }
		var seqs []model.Sequence
		for _, s := range []struct {
			n    int
			imgs []model.ImageEmbedding
		}{
			{7, nil},
			{150, []model.ImageEmbedding{place(1, 4), place(0, 100)}},
			{1, nil},
			{300, nil},
			{70, []model.ImageEmbedding{place(2, 62)}},
		} {
			seqs = append(seqs, modeltest.Sequence(r, s.n, m.LM.ImagePad, info.MergeSize, s.imgs))
		}
		modeltest.SequenceInvariance(t, m, seqs)
	})
}

// TestBidirectionalPacking: a bidirectional model runs each sequence
// whole; packed with others it gives its rows alone, bit for bit, and a
// sequence's first rows change when later tokens do (they attend to
// them), which a causal model's do not.
func TestBidirectionalPacking(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	bi := loadSynth(t, modeltest.Weights{LM: "F32", MMProj: "F32"}, tinyColVec(true))
	ca := loadSynth(t, modeltest.Weights{LM: "F32", MMProj: "F32"}, tinyColVec(false))
	if !bi.Info().Bidirectional || ca.Info().Bidirectional {
		t.Fatal("the synthetic files' qwen35.attention.causal is not what the models say")
	}
	seqs := []model.Sequence{modeltest.Sequence(r, 90, -1, 2, nil), modeltest.Sequence(r, 5, -1, 2, nil)}
	packed := modeltest.Forward(t, bi, seqs)
	for i, sq := range seqs {
		modeltest.SameBits(t, "packed vs alone", packed[i], modeltest.Forward(t, bi, []model.Sequence{sq})[0])
	}
	if _, err := bi.ForwardChunks([]model.Chunk{{State: mustState(t, bi, seqs[0]), N: 10}}); err == nil {
		t.Error("a bidirectional model ran part of a sequence")
	}
	changed := model.Sequence{IDs: append([]int32(nil), seqs[0].IDs...)}
	changed.IDs[80] = (changed.IDs[80] + 1) % 256
	D := bi.Info().Hidden
	for _, c := range []struct {
		m    *Model
		same bool
	}{{bi, false}, {ca, true}} {
		a := modeltest.Forward(t, c.m, []model.Sequence{seqs[0]})[0][:D]
		b := modeltest.Forward(t, c.m, []model.Sequence{changed})[0][:D]
		same := true
		for i := range a {
			same = same && a[i] == b[i]
		}
		if same != c.same {
			t.Errorf("bidirectional %v: first row unchanged by token 80 is %v", c.m.Info().Bidirectional, same)
		}
	}
}

func mustState(t *testing.T, m *Model, sq model.Sequence) model.State {
	t.Helper()
	st, err := m.NewState(sq)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
