package qwenvl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
)

// sameBits fails unless got and want are equal bit for bit.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// eachServingTier runs f under every fast tier and the reference.
func eachServingTier(t *testing.T, f func(t *testing.T)) {
	saved := kernels.Active()
	defer kernels.Use(saved)
	for _, tier := range kernels.Available() {
		if err := kernels.Use(tier); err != nil {
			t.Fatal(err)
		}
		t.Run(string(tier), f)
	}
}

// TestServingInvariance checks the promises the serving engine builds on:
// an image's encoding and a sequence's hidden states are bit for bit the
// same alone, batched with others, computed by a vision pass stepped a
// stage at a time, or cut into chunks spread over passes shared with
// other sequences; for every kernel tier and for float and quantized
// weights.
func TestServingInvariance(t *testing.T) {
	for _, typ := range []struct{ lm, mm string }{{"F32", "F32"}, {"Q4_K_M", "F16"}, {"Q8_0", "Q8_0"}} {
		m := loadSynth(t, "tiny", typ.lm, typ.mm, quantConfig)
		t.Run(typ.lm+"+"+typ.mm, func(t *testing.T) {
			eachServingTier(t, func(t *testing.T) {
				if kernels.Active() == kernels.TierReference && typ.lm != "F32" {
					t.Skip("the reference tier is exercised on the float32 model")
				}
				servingInvariance(t, m)
			})
		})
	}
}

func servingInvariance(t *testing.T, m *Model) {
	r := rand.New(rand.NewPCG(5, 6))
	D := m.Info().Hidden
	grids := [][3]int{{1, 4, 4}, {1, 12, 16}, {1, 2, 2}, {2, 4, 8}}
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
		sameBits(t, fmt.Sprintf("image %d batched vs alone", i), all[i], one[0])
	}
	p, err := m.NewVisionPass(imgs[1:], false)
	if err != nil {
		t.Fatal(err)
	}
	for steps := 0; !p.Done(); steps++ {
		if steps > p.Stages() {
			t.Fatal("vision pass does not finish")
		}
		if err := p.Step(1); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range p.Result() {
		sameBits(t, fmt.Sprintf("image %d stepped pass", i+1), e.Rows, all[i+1])
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
	alone := make([][]float32, len(seqs))
	for i, sq := range seqs {
		if alone[i], err = m.Forward(sq.IDs, sq.Images); err != nil {
			t.Fatal(err)
		}
	}
	batched, err := m.ForwardBatch(seqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range seqs {
		sameBits(t, fmt.Sprintf("sequence %d batched vs alone", i), batched[i], alone[i])
	}
	for _, chunk := range []int{1, 13, 64, 100} {
		states := make([]model.State, len(seqs))
		got := make([][]float32, len(seqs))
		for i, sq := range seqs {
			if states[i], err = m.NewState(sq); err != nil {
				t.Fatal(err)
			}
		}
		for pass := 0; ; pass++ {
			// Each pass takes a chunk of a varying subset of the sequences.
			var chunks []model.Chunk
			var which []int
			for i, st := range states {
				if st.Done() < st.Len() && (i+pass)%3 != 0 {
					n := min(chunk+(i*7+pass)%5, st.Len()-st.Done())
					chunks = append(chunks, model.Chunk{State: st, N: n})
					which = append(which, i)
				}
			}
			if len(chunks) == 0 {
				if pass > 0 && allDone(states) {
					break
				}
				continue
			}
			out, err := m.ForwardChunks(chunks)
			if err != nil {
				t.Fatal(err)
			}
			for k, i := range which {
				got[i] = append(got[i], out[k]...)
			}
		}
		for i := range seqs {
			if len(got[i]) != len(alone[i]) || len(alone[i]) != specs[i].n*D {
				t.Fatalf("chunk %d: sequence %d: %d values, want %d", chunk, i, len(got[i]), specs[i].n*D)
			}
			sameBits(t, fmt.Sprintf("chunk %d: sequence %d chunked vs one pass", chunk, i), got[i], alone[i])
		}
	}
}

func allDone(states []model.State) bool {
	for _, st := range states {
		if st.Done() < st.Len() {
			return false
		}
	}
	return true
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
