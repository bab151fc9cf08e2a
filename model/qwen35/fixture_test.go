package qwen35

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/tokenizer"
)

// fixCase is a case.json of the qwen35 fixtures.
type fixCase struct {
	ID           string  `json:"id"`
	Kind         string  `json:"kind"`
	Text         string  `json:"text"`
	Prompt       string  `json:"prompt"`
	IDs          []int32 `json:"ids"`
	Causal       bool    `json:"causal"`
	NTokens      int     `json:"n_tokens"`
	Grid         [3]int  `json:"grid"`
	ImageRows    []int   `json:"image_rows"`
	HiddenShape  []int   `json:"hidden_shape"`
	PatchesShape []int   `json:"patches_shape"`
}

type fixIndex struct {
	LM, MMProj string
	Cases      []struct {
		ID     string
		Causal bool
	}
}

// loadFixturePair loads the fixtures' pair, causal and (the same LM with
// qwen35.attention.causal = false) bidirectional.
func loadFixturePair(t *testing.T) (dir string, ix fixIndex, causal, bidir *Model) {
	dir = fixtures.Dir(t, "qwen35")
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &ix)
	lm, mm := filepath.Join(dir, ix.LM), filepath.Join(dir, ix.MMProj)
	bi := modeltest.RewriteGGUF(t, lm, map[string]any{"qwen35.attention.causal": false}, nil)
	var err error
	if causal, err = Load(lm, mm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { causal.Close() })
	if bidir, err = Load(bi, mm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bidir.Close() })
	if causal.Info().Bidirectional || !bidir.Info().Bidirectional {
		t.Fatalf("Bidirectional is %v for the causal file and %v for the other", causal.Info().Bidirectional, bidir.Info().Bidirectional)
	}
	return dir, ix, causal, bidir
}

// TestFixtures runs every case of the qwen35 fixtures from its ids (and
// patches), after checking the ids against the LM's tokenizer: every final
// hidden row within cosine 0.99999 of the goldens for
// text and 0.9999 for images, the merger rows and the M-RoPE positions,
// causal and bidirectional. It runs on the float32 tier: on a bfloat16
// tier the tower's MLPs multiply in bfloat16 (vlm.Binder.NarrowMatrix),
// which moves the merger rows by about 1e-5 (1−cos), and this tiny random
// decoder amplifies that to 2e-2 in its hidden rows (the fixture's rows fed
// in instead give 1 − 1e-9).
func TestFixtures(t *testing.T) {
	saved := kernels.Active()
	if err := kernels.Use(kernels.Float32Default()); err != nil {
		t.Fatal(err)
	}
	defer kernels.Use(saved)
	dir, ix, causal, bidir := loadFixturePair(t)
	tok := fixtureTokenizer(t, filepath.Join(dir, ix.LM))
	for _, ic := range ix.Cases {
		t.Run(ic.ID, func(t *testing.T) {
			cdir := filepath.Join(dir, "cases", ic.ID)
			var c fixCase
			fixtures.ReadJSON(t, filepath.Join(cdir, "case.json"), &c)
			m := causal
			if !c.Causal {
				m = bidir
			}
			checkIDs(t, tok, c)
			D := m.Info().Hidden
			seq := model.Sequence{IDs: c.IDs}
			minCos := 0.99999
			if c.Kind == "image" {
				minCos = 0.9999
				g := c.Grid
				in := model.ImageInput{Patches: fixtures.ReadF32(t, cdir, fixtures.Raw{File: "patches.f32", Shape: c.PatchesShape}), GridT: g[0], GridH: g[1], GridW: g[2]}
				rows := modeltest.Encode(t, m, []model.ImageInput{in})[0].Rows
				want := fixtures.ReadF32(t, cdir, fixtures.Raw{File: "merger_out.f32", Shape: []int{len(c.ImageRows), D}})
				if cs := fixtures.WorstRowCosine(rows, want, D); cs < 0.99999 {
					t.Errorf("merger rows: worst cosine %.8f", cs)
				}
				for i, r := range c.ImageRows {
					if r != c.ImageRows[0]+i || c.IDs[r] != m.LM.ImagePad {
						t.Fatalf("image row %d is token %d (id %d): not a run of <|image_pad|>", i, r, c.IDs[r])
					}
				}
				seq.Images = []model.ImageEmbedding{{Rows: rows, First: c.ImageRows[0], GridT: g[0], GridH: g[1], GridW: g[2]}}
				checkPositions(t, m, seq, filepath.Join(cdir, "positions.i32"))
			}
			got, err := m.Forward(seq)
			if err != nil {
				t.Fatal(err)
			}
			want := fixtures.ReadF32(t, cdir, fixtures.Raw{File: "hidden.f32", Shape: c.HiddenShape})
			cs := fixtures.WorstRowCosine(got, want, D)
			if cs < minCos {
				t.Errorf("hidden rows: worst cosine %.8f, want >= %g", cs, minCos)
			}
			t.Logf("%d tokens: worst hidden row 1 - cos = %.2g", c.NTokens, 1-cs)
		})
	}
}

// fixtureTokenizer loads the LM's tokenizer as llama.cpp applies it (the
// fixtures' ids are llama.cpp's; their texts are NFC already).
func fixtureTokenizer(t *testing.T, lm string) *tokenizer.Tokenizer {
	f, err := gguf.Open(lm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{DisableNFC: true})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// checkIDs wants the case's ids from its text (special tokens parsed), or
// from its prompt with the image's pads expanded.
func checkIDs(t *testing.T, tok *tokenizer.Tokenizer, c fixCase) {
	t.Helper()
	var got []int32
	if c.Kind == "image" {
		p, err := tok.RawPrompt(c.Prompt, []int{len(c.ImageRows)})
		if err != nil {
			t.Fatal(err)
		}
		got = p.IDs
	} else {
		got = tok.Encode(c.Text, true)
	}
	if !slices.Equal(got, c.IDs) {
		t.Fatalf("ids %v, the fixture's %v", got, c.IDs)
	}
}

// checkPositions compares the M-RoPE positions of seq with the fixture's
// [3, n] int32 array.
func checkPositions(t *testing.T, m *Model, seq model.Sequence, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.NewState(seq)
	if err != nil {
		t.Fatal(err)
	}
	n := len(seq.IDs)
	if len(b) != 3*n*4 {
		t.Fatalf("positions: %d bytes for %d tokens", len(b), n)
	}
	got := st.(*seqState).pos
	for c := range 3 {
		for i := range n {
			want := int(int32(binary.LittleEndian.Uint32(b[4*(c*n+i):])))
			if got[i][c] != want {
				t.Fatalf("token %d: position component %d is %d, want %d", i, c, got[i][c], want)
			}
		}
	}
}

// TestFixturesChunked cuts the longest causal text case into chunks of a
// few tokens, across the delta rule's blocks, and wants the rows of one
// whole pass bit for bit.
func TestFixturesChunked(t *testing.T) {
	dir, _, causal, _ := loadFixturePair(t)
	var c fixCase
	fixtures.ReadJSON(t, filepath.Join(dir, "cases", "text02-causal", "case.json"), &c)
	// Long enough that blocks of chunkLen end inside chunks.
	ids := slices.Concat(c.IDs, c.IDs)
	seqs := []model.Sequence{{IDs: ids}, {IDs: c.IDs}}
	whole := modeltest.Forward(t, causal, seqs)
	for _, chunk := range []int{1, 7, 50, chunkLen, 100} {
		got := modeltest.Chunked(t, causal, seqs, chunk)
		for i := range seqs {
			modeltest.SameBits(t, "chunked sequence", got[i], whole[i])
		}
	}
}
