package qwenvl

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/model/heads"
)

// fixtureCase is the part of a model fixture's case.json the tests use.
type fixtureCase struct {
	ID               string       `json:"id"`
	Kind             string       `json:"kind"`
	TokenIDs         []int32      `json:"token_ids"`
	MropePositions   [3][]int     `json:"mrope_positions"`
	VisionSpans      [][2]int     `json:"vision_spans"`
	ImageTokenRanges [][2]int     `json:"image_token_ranges"`
	Images           []fixImage   `json:"images"`
	Hidden           fixtures.Raw `json:"hidden_states"`
	Embedding        []float32    `json:"embedding"`
	Alternatives     struct {
		TextRule []float32 `json:"text_rule_all_tokens"`
	} `json:"embedding_alternatives"`
	Matryoshka  map[string][]float32 `json:"matryoshka"`
	MultiVector fixtures.Raw         `json:"multivector"`
}

type fixImage struct {
	GridTHW   [3]int       `json:"grid_thw"`
	Patches   fixtures.Raw `json:"patches"`
	VitOut    fixtures.Raw `json:"vit_out"`
	MergerOut fixtures.Raw `json:"merger_out"`
}

type fixtureIndex struct {
	LM     string `json:"lm"`
	MMProj string `json:"mmproj"`
	MVProj string `json:"mvproj"`
	Cases  []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
		Dir  string `json:"dir"`
	} `json:"cases"`
}

// modelFixtures returns the model fixture directory and its index.
func modelFixtures(t testing.TB) (string, *fixtureIndex) {
	dir := fixtures.Dir(t, "model")
	ix := &fixtureIndex{}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), ix)
	return dir, ix
}

// relErr returns ‖a−b‖/‖b‖.
func relErr(a, b []float32) float64 {
	var d, n float64
	for i := range a {
		e := float64(a[i]) - float64(b[i])
		d += e * e
		n += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(d / n)
}

// rowStats compares got and want row by row (rows of dim) and returns the
// worst row cosine and the worst row relative error.
func rowStats(t testing.TB, got, want []float32, dim int) (worstCos, worstRel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	worstCos = 1
	for r := 0; r+dim <= len(want); r += dim {
		worstCos = math.Min(worstCos, fixtures.Cosine(got[r:r+dim], want[r:r+dim]))
		worstRel = math.Max(worstRel, relErr(got[r:r+dim], want[r:r+dim]))
	}
	return worstCos, worstRel
}

// caseResult is what the model computes for one fixture case.
type caseResult struct {
	vit, merger [][]float32
	hidden      []float32
}

// runCase feeds a case's token ids and patches (so it is independent of the
// tokenizer and image preprocessing) through the model.
func runCase(t testing.TB, m *Model, dir string, c *fixtureCase) caseResult {
	t.Helper()
	var res caseResult
	var embs []ImageEmbedding
	if len(c.Images) > 0 {
		inputs := make([]ImageInput, len(c.Images))
		for k, im := range c.Images {
			inputs[k] = ImageInput{Patches: fixtures.ReadF32(t, dir, im.Patches), GridT: im.GridTHW[0], GridH: im.GridTHW[1], GridW: im.GridTHW[2]}
		}
		rows, tr, err := m.EncodeImagesTrace(inputs)
		if err != nil {
			t.Fatalf("%s: EncodeImages: %v", c.ID, err)
		}
		res.vit, res.merger = tr.VitOut, rows
		for k, im := range c.Images {
			embs = append(embs, ImageEmbedding{Rows: rows[k], First: c.ImageTokenRanges[k][0], GridT: im.GridTHW[0], GridH: im.GridTHW[1], GridW: im.GridTHW[2]})
		}
	}
	h, err := m.Forward(c.TokenIDs, embs)
	if err != nil {
		t.Fatalf("%s: Forward: %v", c.ID, err)
	}
	res.hidden = h
	return res
}

// pooled applies DECISIONS.md's pooling: image-only inputs average from the
// first <|vision_start|> to the last <|vision_end|>; any input with text
// averages all tokens.
func pooled(c *fixtureCase, hidden []float32, dim int) []float32 {
	lo, hi := 0, len(c.TokenIDs)
	if c.Kind == "image" || c.Kind == "multi_image" {
		lo, hi = c.VisionSpans[0][0], c.VisionSpans[len(c.VisionSpans)-1][1]+1
	}
	v := heads.MeanPool(hidden, dim, lo, hi)
	heads.Normalize(v)
	return v
}
