package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// TestPlainText: a plain part's special-token strings, vision markup
// included, are read as Encode without parseSpecial reads them, in every
// prompt form; the same part not plain is refused; and a plain part
// without such strings gives the prompt it gave before (the markup around
// it unchanged, words merging across the seams as in one string).
func TestPlainText(t *testing.T) {
	tok, _ := smallVocabTokenizer(t)
	special := map[int32]bool{}
	for _, sp := range tok.specials {
		special[sp.id] = true
	}
	countSpecial := func(ids []int32) int {
		n := 0
		for _, id := range ids {
			if special[id] {
				n++
			}
		}
		return n
	}
	markup := "a page about <|vision_start|><|image_pad|><|vision_end|> spans, <|im_start|>user and <|endoftext|>"
	colqwen := func(parts []Part) (*Prompt, error) {
		var tm Template
		tm.Markup("<|im_start|>user\n")
		var images []int
		for _, p := range parts {
			if p.ImageTokens > 0 {
				tm.Markup("<|vision_start|><|image_pad|><|vision_end|>")
				images = append(images, p.ImageTokens)
			} else {
				tm.Text(p)
			}
		}
		tm.Markup("<|im_end|><|endoftext|>")
		return tok.TemplatePrompt(&tm, images)
	}
	forms := map[string]func([]Part) (*Prompt, error){
		"jina query":    func(p []Part) (*Prompt, error) { return tok.JinaV4Prompt(TaskRetrievalQuery, p) },
		"jina passage":  func(p []Part) (*Prompt, error) { return tok.JinaV4Prompt(TaskRetrievalPassage, p) },
		"qwen3-vl":      func(p []Part) (*Prompt, error) { return tok.Qwen3VLEmbedPrompt("", p) },
		"gme":           func(p []Part) (*Prompt, error) { return tok.GMEPrompt("", p) },
		"template":      colqwen,
		"qwen3-vl pair": func(p []Part) (*Prompt, error) { return tok.Qwen3VLRerankPrompt("", []Part{{Text: "q"}}, p) },
	}
	for name, form := range forms {
		for _, withImage := range []bool{false, true} {
			var img []Part
			if withImage {
				img = []Part{{ImageTokens: 4}}
			}
			with := func(parts ...Part) []Part { return append(slices.Clone(img), parts...) }
			got, err := form(with(Part{Text: markup, Plain: true}))
			if err != nil {
				t.Errorf("%s (image %v): plain markup: %v", name, withImage, err)
				continue
			}
			ref, err := form(with(Part{Text: "x", Plain: true}))
			if err != nil {
				t.Fatal(err)
			}
			if a, b := countSpecial(got.IDs), countSpecial(ref.IDs); a != b {
				t.Errorf("%s (image %v): %d special tokens, the prompt's own are %d", name, withImage, a, b)
			}
			if len(got.Images) != len(img) {
				t.Errorf("%s (image %v): %d images", name, withImage, len(got.Images))
			}
			if s, err := tok.Decode(got.IDs); err != nil || !strings.Contains(s, markup) {
				t.Errorf("%s (image %v): decodes to %q (%v)", name, withImage, s, err)
			}
			if _, err := form(with(Part{Text: markup})); err == nil {
				t.Errorf("%s (image %v): markup not plain was accepted", name, withImage)
			}
			// Split across parts, plain and not: still plain text.
			if _, err := form(with(Part{Text: "one <|vision_", Plain: true}, Part{Text: "start|> two", Plain: true})); err != nil {
				t.Errorf("%s (image %v): plain markup across parts: %v", name, withImage, err)
			}
			words := "Some words, and more: 12 of them."
			a, err := form(with(Part{Text: words, Plain: true}, Part{Text: " then", Plain: true}))
			if err != nil {
				t.Fatal(err)
			}
			b, err := form(with(Part{Text: words}, Part{Text: " then"}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.IDs, b.IDs) {
				t.Errorf("%s (image %v): plain text without markup tokenized differently:\n%v\n%v", name, withImage, a.IDs, b.IDs)
			}
		}
	}
	// The text part of a query reads as Encode(.., false) does.
	p, err := tok.JinaV4Prompt(TaskRetrievalQuery, []Part{{Text: markup, Plain: true}})
	if err != nil {
		t.Fatal(err)
	}
	if want := tok.Encode(TaskRetrievalQuery.Prefix()+markup, false); !slices.Equal(p.IDs, want) {
		t.Errorf("jina query ids %v, want %v", p.IDs, want)
	}
}
