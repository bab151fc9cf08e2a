package engine

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/synth"
)

// otherQwen3VL is a Qwen3-VL pair unlike the fixtures' and the released
// models' in every dimension the metadata carries: widths, layer and head
// counts, a key_length (24) that is not hidden/heads (8), 12 rotary pairs
// in sections [4,4,4], two DeepStack taps at blocks 1 and 4 of five, a
// 20×20 position table, patches of 14 pixels, an untied output head, and
// no pooling_type (as llama.cpp writes Qwen3-VL-Embedding).
func otherQwen3VL(t *testing.T) synth.Config {
	t.Helper()
	c, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	c.Name = "synthetic-qwen3-vl-other"
	c.LM.Hidden, c.LM.Layers, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 48, 4, 6, 3, 80
	c.LM.HeadDim = 24
	c.LM.MRoPE = [4]int32{4, 4, 4, 0}
	c.LM.Untied = true
	c.LM.Pooling = ""
	c.Vision.Width, c.Vision.Blocks, c.Vision.Heads, c.Vision.FFN = 48, 5, 3, 96
	c.Vision.DeepStack = []int{1, 4}
	c.Vision.PositionSide = 20
	c.Vision.PatchSize = 14
	c.Seed = 77
	return c
}

// TestQwen3VLOtherShape writes a Qwen3-VL pair of another shape with the
// generator and embeds text, an image and both through the engine, and
// scores pairs with the same LM written as a reranker: the family is read
// from the metadata alone.
func TestQwen3VLOtherShape(t *testing.T) {
	c := otherQwen3VL(t)
	dir := t.TempDir()
	lm, mm, err := synth.WritePair(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Model: lm, MMProj: mm})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if i := e.Info(); i.Arch != "qwen3vl" || i.Hidden != 48 || i.Recipe != "qwen3-vl-embedding" || !i.Instruction || i.Reranker {
		t.Fatalf("info %+v", i)
	}
	ctx := context.Background()
	img := testPNG(t, 90, 60, 3)
	inputs := []Input{
		TextInput("a red square on a white page"),
		ImageInput(img),
		{Parts: []Part{Text("figure 3"), Image(img)}},
	}
	resp, err := e.Embed(ctx, Request{Inputs: inputs, Instruction: "Find the page"})
	if err != nil {
		t.Fatal(err)
	}
	for i, emb := range resp.Embeddings {
		v := emb.Vector
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != 48 || math.IsNaN(n) || math.Abs(n-1) > 1e-5 {
			t.Fatalf("input %d: %d values of squared norm %v", i, len(v), n)
		}
		// Each input alone gives the same bits as in the batch.
		one, err := e.Embed(ctx, Request{Inputs: inputs[i : i+1], Instruction: "Find the page"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sameEmbedding(one.Embeddings[0], emb); err != nil {
			t.Errorf("input %d alone vs batched: %v", i, err)
		}
	}
	// 90×60 resizes to 84×56 (factor 28): 6×4 patches, 3×2 merged tokens,
	// between <|vision_start|> and <|vision_end|>.
	text, err := e.Embed(ctx, Request{Inputs: []Input{TextInput("figure 3")}, Instruction: "Find the page"})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Embeddings[2].Tokens - text.Embeddings[0].Tokens; d != 6+2 {
		t.Errorf("the image takes %d tokens, want 8", d)
	}
	if cs := fixtures.Cosine(resp.Embeddings[1].Vector, resp.Embeddings[2].Vector); cs > 0.999999 {
		t.Errorf("the text beside the image changes nothing (cosine %v)", cs)
	}
	cut, err := e.Embed(ctx, Request{Inputs: inputs[2:], Instruction: "Find the page", Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	if v := cut.Embeddings[0].Vector; len(v) != 16 || fixtures.Cosine(v, resp.Embeddings[2].Vector[:16]) < 0.99999 {
		t.Errorf("Matryoshka 16: %d values, cosine to the full vector's head %v", len(v), fixtures.Cosine(v, resp.Embeddings[2].Vector[:16]))
	}

	c.LM.Pooling, c.Name = "rank", c.Name+"-reranker"
	rrPath := filepath.Join(dir, c.LMFileName())
	if err := synth.WriteLM(rrPath, c); err != nil {
		t.Fatal(err)
	}
	rr, err := New(Config{Model: rrPath, MMProj: mm})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if !rr.Info().Reranker {
		t.Fatalf("reranker info %+v", rr.Info())
	}
	scores, _, err := rr.Rerank(ctx, TextInput("a red square"), []Input{TextInput("a blue circle"), ImageInput(img)}, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range scores {
		if !(s > 0 && s < 1) {
			t.Errorf("document %d: score %v", i, s)
		}
	}
}
