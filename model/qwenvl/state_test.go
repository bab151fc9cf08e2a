package qwenvl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// TestServingInvariance checks the promises the serving engine builds on:
// an image's encoding and a sequence's hidden states are bit for bit the
// same alone, batched with others, computed by a vision pass stepped a
// stage at a time, or cut into chunks spread over passes shared with
// other sequences; for every kernel tier and for float and quantized
// weights.
func TestServingInvariance(t *testing.T) {
	modeltest.EachWeightsAndTier(t, modeltest.InvarianceWeights, func(w modeltest.Weights) *Model {
		return loadSynth(t, "tiny", w.LM, w.MMProj, quantConfig)
	}, servingInvariance)
}

func servingInvariance(t *testing.T, m *Model) {
	r := rand.New(rand.NewPCG(5, 6))
	grids := [][3]int{{1, 4, 4}, {1, 12, 16}, {1, 2, 2}, {2, 4, 8}}
	var imgs []ImageInput
	for _, g := range grids {
		imgs = append(imgs, randomImage(r, m, g[0], g[1], g[2]))
	}
	enc := modeltest.VisionInvariance(t, m, imgs)
	all, err := m.EncodeImages(imgs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range imgs {
		modeltest.SameBits(t, fmt.Sprintf("image %d EncodeImages vs vision pass", i), all[i], enc[i].Rows)
	}

	type spec struct {
		n    int
		imgs []ImageEmbedding
	}
	specs := []spec{
		{7, nil},
		{150, []ImageEmbedding{{Rows: all[1], First: 4, GridT: 1, GridH: 12, GridW: 16}, {Rows: all[0], First: 100, GridT: 1, GridH: 4, GridW: 4}}},
		{1, nil},
		{9, []ImageEmbedding{{Rows: all[0], First: 0, GridT: 1, GridH: 4, GridW: 4}}},
		{300, nil},
		{60, []ImageEmbedding{{Rows: all[3], First: 30, GridT: 2, GridH: 4, GridW: 8}}},
	}
	var seqs []Sequence
	for _, s := range specs {
		seqs = append(seqs, Sequence{IDs: sequence(r, m, s.n, s.imgs), Images: s.imgs})
	}
	alone := modeltest.SequenceInvariance(t, m, seqs)
	batched, err := m.ForwardBatch(seqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, sq := range seqs {
		one, err := m.Forward(sq.IDs, sq.Images)
		if err != nil {
			t.Fatal(err)
		}
		modeltest.SameBits(t, fmt.Sprintf("sequence %d Forward vs one pass", i), one, alone[i])
		modeltest.SameBits(t, fmt.Sprintf("sequence %d ForwardBatch vs one pass", i), batched[i], alone[i])
	}
}

func TestForwardChunksErrors(t *testing.T) {
	m := loadSynth(t, "tiny", "F32", "F32", nil)
	r := rand.New(rand.NewPCG(1, 1))
	st, err := m.NewState(Sequence{IDs: sequence(r, m, 10, nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]model.Chunk{
		{{State: st, N: 0}},
		{{State: st, N: 11}},
		{{State: st, N: 2}, {State: st, N: 2}},
		{{State: nil, N: 1}},
	} {
		if _, err := m.ForwardChunks(c); err == nil {
			t.Errorf("%v: no error", c)
		}
	}
	if st.Done() != 0 {
		t.Errorf("a refused pass advanced the sequence to %d", st.Done())
	}
}
