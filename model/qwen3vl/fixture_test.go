package qwen3vl

import (
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// fixCase is the part of a qwen3vl fixture case.json the model tests use.
type fixCase struct {
	ID             string   `json:"id"`
	Kind           string   `json:"kind"`
	TokenIDs       []int32  `json:"token_ids"`
	MropePositions [3][]int `json:"mrope_positions"`
	Images         []struct {
		GridTHW [3]int       `json:"grid_thw"`
		Patches fixtures.Raw `json:"patches"`
	} `json:"images"`
	Vision struct {
		MergerOut fixtures.Raw   `json:"merger_out"`
		Deepstack []fixtures.Raw `json:"deepstack"`
	} `json:"vision"`
	Hidden     fixtures.Raw         `json:"hidden_states"`
	Embedding  []float32            `json:"embedding"`
	Matryoshka map[string][]float32 `json:"matryoshka"`
	Score      float64              `json:"score"`
}

type fixIndex struct {
	LM, MMProj, Reranker string
	Cases                []struct{ ID, Kind string }
}

func loadFixtures(t testing.TB) (string, fixIndex) {
	dir := fixtures.Dir(t, "qwen3vl")
	var ix fixIndex
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &ix)
	return dir, ix
}

// encodeCase runs the images of case c, stored in cdir, through m's tower
// in one pass.
func encodeCase(t *testing.T, m *Model, cdir string, c fixCase) []model.EncodedImage {
	t.Helper()
	var in []model.ImageInput
	for _, im := range c.Images {
		g := im.GridTHW
		in = append(in, model.ImageInput{Patches: fixtures.ReadF32(t, cdir, im.Patches), GridT: g[0], GridH: g[1], GridW: g[2]})
	}
	return modeltest.Encode(t, m, in)
}

// imageSpans finds the runs of <|image_pad|> in ids.
func imageSpans(ids []int32, pad int32) (first []int) {
	for i, id := range ids {
		if id == pad && (i == 0 || ids[i-1] != pad) {
			first = append(first, i)
		}
	}
	return first
}

// TestFixtures runs every case of the qwen3vl fixtures from its token ids
// and patches: the merger and DeepStack rows, the M-RoPE positions, every
// final hidden state, the last-token embedding and its Matryoshka cuts,
// and the reranker's score.
func TestFixtures(t *testing.T) {
	dir, ix := loadFixtures(t)
	emb, err := Load(filepath.Join(dir, ix.LM), filepath.Join(dir, ix.MMProj))
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	rr, err := Load(filepath.Join(dir, ix.Reranker), filepath.Join(dir, ix.MMProj))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	rf, err := gguf.Open(filepath.Join(dir, ix.Reranker))
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	ranker, err := heads.RankerFrom(rf)
	if err != nil {
		t.Fatal(err)
	}
	const minCos = 0.99999
	for _, ic := range ix.Cases {
		t.Run(ic.ID, func(t *testing.T) {
			cdir := filepath.Join(dir, "cases", ic.ID)
			var c fixCase
			fixtures.ReadJSON(t, filepath.Join(cdir, "case.json"), &c)
			m := emb
			if c.Kind == "rerank" {
				m = rr
			}
			D := m.Info().Hidden
			seq := model.Sequence{IDs: c.TokenIDs}
			if len(c.Images) > 0 {
				enc := encodeCase(t, m, cdir, c)
				if len(enc) != 1 {
					t.Fatalf("%d encoded images, the fixture cases have one", len(enc))
				}
				if cs := fixtures.WorstRowCosine(enc[0].Rows, fixtures.ReadF32(t, cdir, c.Vision.MergerOut), D); cs < minCos {
					t.Errorf("merger rows: worst cosine %.8f", cs)
				}
				for k, ds := range c.Vision.Deepstack {
					if cs := fixtures.WorstRowCosine(enc[0].Deep[k], fixtures.ReadF32(t, cdir, ds), D); cs < minCos {
						t.Errorf("DeepStack %d rows: worst cosine %.8f", k, cs)
					}
				}
				firsts := imageSpans(c.TokenIDs, m.LM.ImagePad)
				g := c.Images[0].GridTHW
				seq.Images = []model.ImageEmbedding{{Rows: enc[0].Rows, Deep: enc[0].Deep, First: firsts[0], GridT: g[0], GridH: g[1], GridW: g[2]}}
				imgs, err := m.LM.PlaceImages(seq.IDs, seq.Images)
				if err != nil {
					t.Fatal(err)
				}
				checkPositions(t, c, imgs, m)
			}
			h, err := m.Forward(seq)
			if err != nil {
				t.Fatal(err)
			}
			cs := fixtures.WorstRowCosine(h, fixtures.ReadF32(t, cdir, c.Hidden), D)
			if cs < minCos {
				t.Errorf("hidden states: worst row cosine %.8f", cs)
			}
			t.Logf("hidden states: worst row cosine %.9f", cs)
			last := append([]float32(nil), h[len(h)-D:]...)
			if c.Kind == "rerank" {
				s, err := ranker.Score(last)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(s-c.Score) > 1e-4 {
					t.Errorf("score %.7f, want %.7f", s, c.Score)
				}
				t.Logf("score %.7f, reference %.7f", s, c.Score)
				return
			}
			heads.Normalize(last)
			if cs := fixtures.Cosine(last, c.Embedding); cs < minCos {
				t.Errorf("embedding cosine %.8f", cs)
			}
			for k, want := range c.Matryoshka {
				n, _ := strconv.Atoi(k)
				got, err := heads.Truncate(last, n)
				if err != nil {
					t.Fatal(err)
				}
				if cs := fixtures.Cosine(got, want); cs < minCos {
					t.Errorf("matryoshka %d: cosine %.8f", n, cs)
				}
			}
		})
	}
}

func checkPositions(t *testing.T, c fixCase, imgs []vlmPlaced, m *Model) {
	t.Helper()
	pos := positions(m, c.TokenIDs, imgs)
	for i, p := range pos {
		for a := 0; a < 3; a++ {
			if p[a] != c.MropePositions[a][i] {
				t.Fatalf("token %d: position %v, want (%d, %d, %d)", i, p, c.MropePositions[0][i], c.MropePositions[1][i], c.MropePositions[2][i])
			}
		}
	}
}
