package engine

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// q3Item is an input item of a qwen3vl fixture case.
type q3Item struct {
	Text  *string `json:"text"`
	Image *string `json:"image"`
}

func q3Input(t *testing.T, dir string, items []q3Item) Input {
	var in Input
	for _, it := range items {
		if it.Image != nil {
			b, err := os.ReadFile(filepath.Join(dir, *it.Image))
			if err != nil {
				t.Fatal(err)
			}
			in.Parts = append(in.Parts, Image(b))
		} else {
			in.Parts = append(in.Parts, Text(*it.Text))
		}
	}
	return in
}

// q3Engines opens the qwen3vl fixture pair as an embedder and as a
// reranker.
func q3Engines(t *testing.T) (dir string, emb, rr *Engine) {
	dir = fixtures.Dir(t, "qwen3vl")
	var err error
	if emb, err = New(Config{Model: filepath.Join(dir, "qwen3vl-tiny-lm-F32.gguf"), MMProj: filepath.Join(dir, "mmproj-qwen3vl-tiny-F32.gguf")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	if rr, err = New(Config{Model: filepath.Join(dir, "qwen3vl-tiny-reranker-F32.gguf"), MMProj: filepath.Join(dir, "mmproj-qwen3vl-tiny-F32.gguf")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.Close() })
	return dir, emb, rr
}

// TestQwen3VLFixtures runs every qwen3vl case through the engine from its
// request (instruction, text, image files): the embedding and its
// Matryoshka cuts, or the reranker's score.
func TestQwen3VLFixtures(t *testing.T) {
	dir, emb, rr := q3Engines(t)
	if i := emb.Info(); i.Recipe != "qwen3-vl-embedding" || !i.Instruction || i.Reranker || rr.Info().Recipe != "qwen3-vl-reranker" || !rr.Info().Reranker {
		t.Fatalf("infos: %+v / %+v", i, rr.Info())
	}
	cases, _ := filepath.Glob(filepath.Join(dir, "cases", "*", "case.json"))
	ctx := context.Background()
	for _, path := range cases {
		cdir := filepath.Dir(path)
		var c struct {
			Kind        string               `json:"kind"`
			NTokens     int                  `json:"n_tokens"`
			Instruction *string              `json:"instruction"`
			Input       []q3Item             `json:"input"`
			Query       []q3Item             `json:"query"`
			Document    []q3Item             `json:"document"`
			Embedding   []float32            `json:"embedding"`
			Matryoshka  map[string][]float32 `json:"matryoshka"`
			Score       float64              `json:"score"`
		}
		fixtures.ReadJSON(t, path, &c)
		instr := ""
		if c.Instruction != nil {
			instr = *c.Instruction
		}
		name := filepath.Base(cdir)
		if c.Kind == "rerank" {
			scores, tokens, err := rr.Rerank(ctx, q3Input(t, cdir, c.Query), []Input{q3Input(t, cdir, c.Document)}, instr)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if math.Abs(scores[0]-c.Score) > 1e-4 || tokens != c.NTokens {
				t.Errorf("%s: score %.7f over %d tokens, want %.7f over %d", name, scores[0], tokens, c.Score, c.NTokens)
			}
			continue
		}
		resp, err := emb.Embed(ctx, Request{Inputs: []Input{q3Input(t, cdir, c.Input)}, Instruction: instr})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cs := fixtures.Cosine(resp.Embeddings[0].Vector, c.Embedding); cs < 0.99999 || resp.PromptTokens != c.NTokens {
			t.Errorf("%s: embedding cosine %.8f over %d tokens (want %d)", name, cs, resp.PromptTokens, c.NTokens)
		}
		for k, want := range c.Matryoshka {
			d, _ := strconv.Atoi(k)
			resp, err := emb.Embed(ctx, Request{Inputs: []Input{q3Input(t, cdir, c.Input)}, Instruction: instr, Dimensions: d})
			if err != nil {
				t.Fatal(err)
			}
			if cs := fixtures.Cosine(resp.Embeddings[0].Vector, want); cs < 0.99999 {
				t.Errorf("%s: matryoshka %d cosine %.8f", name, d, cs)
			}
		}
	}
}

// TestQwen3VLRefusals checks that misuse gets an InputError (or
// ErrNotReranker) that says what to do.
func TestQwen3VLRefusals(t *testing.T) {
	dir, emb, rr := q3Engines(t)
	ctx := context.Background()
	text := TextInput("a cat")
	inputErr := func(what string, err error, want string) {
		t.Helper()
		ie, ok := AsInputError(err)
		if !ok || !strings.Contains(ie.Error(), want) {
			t.Errorf("%s: %v, want an input error saying %q", what, err, want)
		}
	}
	_, err := rr.Embed(ctx, Request{Inputs: []Input{text}})
	inputErr("embed with a reranker", err, "reranker")
	if _, _, err := emb.Rerank(ctx, text, []Input{text}, ""); !errors.Is(err, ErrNotReranker) {
		t.Errorf("rerank with an embedder: %v", err)
	}
	_, err = emb.Embed(ctx, Request{Inputs: []Input{text}, Task: "retrieval.query"})
	inputErr("a task", err, "instruction")
	_, err = emb.Embed(ctx, Request{Inputs: []Input{TextInput("see <|image_pad|>")}})
	inputErr("image pad in text", err, "<|image_pad|>")
	_, err = emb.Embed(ctx, Request{Inputs: []Input{text}, Instruction: strings.Repeat("word ", 9000)})
	inputErr("long instruction", err, "limit")
	_, _, err = rr.Rerank(ctx, text, nil, "")
	inputErr("no documents", err, "no documents")
	_, _, err = rr.Rerank(ctx, text, make([]Input, 10000), "")
	inputErr("10,000 documents", err, "limit")
	_, _, err = rr.Rerank(ctx, text, []Input{TextInput(strings.Repeat("long ", 9000))}, "")
	inputErr("long document", err, "limit")

	textOnly, err := New(Config{Model: filepath.Join(dir, "qwen3vl-tiny-lm-F32.gguf")})
	if err != nil {
		t.Fatal(err)
	}
	defer textOnly.Close()
	png, err := os.ReadFile(filepath.Join(dir, "images", "red_square_160x160.png"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = textOnly.Embed(ctx, Request{Inputs: []Input{ImageInput(png)}})
	inputErr("image without mmproj", err, "no vision encoder")
}
