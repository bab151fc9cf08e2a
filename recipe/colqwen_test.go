package recipe

import (
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/tokenizer"
)

// TestColQwenPrompts builds colpali-engine's query and image prompts from
// the token ids the test assembles itself.
func TestColQwenPrompts(t *testing.T) {
	tok := smallTokenizer(t, "qwen2")
	id := func(s string) int32 {
		i, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	eot := id("<|endoftext|>")
	c := ColQwen{QueryPrefix: DefaultQueryPrefix}
	task, err := c.Task("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Task("code"); err == nil {
		t.Error("task code accepted")
	}

	q, err := c.Prompt(tok, task, []tokenizer.Part{{Text: "red cars"}})
	if err != nil {
		t.Fatal(err)
	}
	want := append(tok.Encode("Query: red cars", false), slices.Repeat([]int32{eot}, 10)...)
	if !slices.Equal(q.IDs, want) {
		t.Errorf("query prompt %v, want %v", q.IDs, want)
	}
	bare, err := ColQwen{}.Prompt(tok, task, []tokenizer.Part{{Text: "red cars"}})
	if want := append(tok.Encode("red cars", false), slices.Repeat([]int32{eot}, 10)...); err != nil || !slices.Equal(bare.IDs, want) {
		t.Errorf("query prompt without prefix %v (%v), want %v", bare.IDs, err, want)
	}
	if p := c.Pooling(q); p.Kind != Mean || p.Lo != 0 || p.Hi != len(q.IDs) {
		t.Errorf("pooling %+v", p)
	}

	img, err := c.Prompt(tok, task, []tokenizer.Part{{ImageTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	want = []int32{id("<|im_start|>")}
	want = append(want, tok.Encode("user\n", false)...)
	want = append(want, id("<|vision_start|>"))
	want = append(want, slices.Repeat([]int32{id("<|image_pad|>")}, 4)...)
	want = append(want, id("<|vision_end|>"))
	want = append(want, tok.Encode("Describe the image.", false)...)
	want = append(want, id("<|im_end|>"), eot)
	if !slices.Equal(img.IDs, want) || len(img.Images) != 1 {
		t.Errorf("image prompt %v, want %v", img.IDs, want)
	}
}

// TestGMEOneImage: GME's prompt has one image slot; an input with two
// images is refused naming the limit, one with one image and text is not.
func TestGMEOneImage(t *testing.T) {
	tok := smallTokenizer(t, "qwen2")
	g := GME{}
	task, err := g.Task("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Prompt(tok, task, []tokenizer.Part{{Text: "a caption"}, {ImageTokens: 4}}); err != nil {
		t.Errorf("one image and a text: %v", err)
	}
	_, err = g.Prompt(tok, task, []tokenizer.Part{{ImageTokens: 4}, {Text: "and"}, {ImageTokens: 4}})
	if err == nil || !strings.Contains(err.Error(), "at most 1 image per input") || !strings.Contains(err.Error(), "has 2") {
		t.Errorf("two images: %v; want an error naming the limit of one", err)
	}
}
