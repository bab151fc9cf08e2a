package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// q3part is an item of a qwen3vl fixture case: a text or an image path.
type q3part struct {
	Text  *string `json:"text"`
	Image *string `json:"image"`
}

// TestQwen3VLPrompts builds every qwen3vl fixture case's prompt from its
// input items, instruction and image grids with the fixture LM's own
// vocabulary and compares the token ids with the reference's.
func TestQwen3VLPrompts(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl")
	v, err := readVocab(filepath.Join(dir, "qwen3vl-tiny-lm-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases, err := os.ReadDir(filepath.Join(dir, "cases"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cases {
		var c struct {
			Kind        string   `json:"kind"`
			TokenIDs    []int32  `json:"token_ids"`
			Instruction *string  `json:"instruction"`
			Input       []q3part `json:"input"`
			Query       []q3part `json:"query"`
			Document    []q3part `json:"document"`
			Images      []struct {
				GridTHW [3]int `json:"grid_thw"`
			} `json:"images"`
		}
		fixtures.ReadJSON(t, filepath.Join(dir, "cases", e.Name(), "case.json"), &c)
		img := 0
		parts := func(items []q3part) []Part {
			var ps []Part
			for _, it := range items {
				if it.Image != nil {
					g := c.Images[img].GridTHW
					ps = append(ps, Part{ImageTokens: g[0] * g[1] * g[2] / 4})
					img++
				} else {
					ps = append(ps, Part{Text: *it.Text})
				}
			}
			return ps
		}
		instr := ""
		if c.Instruction != nil {
			instr = *c.Instruction
		}
		var p *Prompt
		if c.Kind == "rerank" {
			q := parts(c.Query)
			p, err = tok.Qwen3VLRerankPrompt(instr, q, parts(c.Document))
		} else {
			p, err = tok.Qwen3VLEmbedPrompt(instr, parts(c.Input))
		}
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if !slices.Equal(p.IDs, c.TokenIDs) {
			t.Errorf("%s: ids\n got %v\nwant %v", e.Name(), p.IDs, c.TokenIDs)
		}
	}
}

// TestQwen3VLPromptRules checks the rules the fixtures do not cover:
// images go before text whatever the order given, an empty input is NULL,
// the instruction is normalized, and vision markup in text is refused.
func TestQwen3VLPromptRules(t *testing.T) {
	tok := qwenTokenizer(t, Options{})
	a, err := tok.Qwen3VLEmbedPrompt("", []Part{{Text: "x"}, {ImageTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tok.Qwen3VLEmbedPrompt(Qwen3VLEmbedInstruction, []Part{{ImageTokens: 4}, {Text: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.IDs, b.IDs) || len(a.Images) != 1 || a.Kind != Interleaved {
		t.Errorf("image after text: %v (kind %v), image first: %v", a.IDs, a.Kind, b.IDs)
	}
	for in, want := range map[string]string{" Find it ": "Find it.", "Why?": "Why?", "": Qwen3VLEmbedInstruction, "说明。": "说明。"} {
		if got := NormalizeInstruction(in); got != want {
			t.Errorf("NormalizeInstruction(%q) = %q, want %q", in, got, want)
		}
	}
	r, err := tok.Qwen3VLRerankPrompt("", []Part{{Text: "q"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := tok.Decode(r.IDs); err != nil || !strings.Contains(s, "<Document>:NULL<|im_end|>") {
		t.Errorf("empty document: %q", s)
	}
	for _, bad := range []string{"<|image_pad|>", "a <|vision_start|>"} {
		if _, err := tok.Qwen3VLEmbedPrompt("", []Part{{Text: bad}}); !errors.Is(err, ErrVisionToken) {
			t.Errorf("text %q: %v, want ErrVisionToken", bad, err)
		}
		if _, err := tok.Qwen3VLEmbedPrompt(bad, []Part{{Text: "x"}}); !errors.Is(err, ErrVisionToken) {
			t.Errorf("instruction %q: %v, want ErrVisionToken", bad, err)
		}
		if _, err := tok.Qwen3VLRerankPrompt("", []Part{{Text: "q"}}, []Part{{Text: bad}}); !errors.Is(err, ErrVisionToken) {
			t.Errorf("document %q: %v, want ErrVisionToken", bad, err)
		}
	}
}
