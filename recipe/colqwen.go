package recipe

import (
	"fmt"
	"strings"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
)

// ColQwen is colpali-engine's ColQwen2 / ColQwen2.5 (late interaction: one
// custom_text_proj vector per token, compared by MaxSim). Its processor's
// prompts, tokenized with special tokens parsed as the processor does:
//   - a query (text): "Query: " + text + ten <|endoftext|> (the query
//     augmentation tokens);
//   - an image: "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>
//     Describe the image.<|im_end|><|endoftext|>";
//   - several images or text with images (not in the reference): the same
//     user turn with the parts in order and no "Describe the image.".
//
// ColQwen has no single vector; a pooled one is the mean of every token's
// final hidden state (non-reference). Tasks: "retrieval" only, queries
// being texts and documents images.
type ColQwen struct{}

// colqwenAugmentation is the processor's query suffix.
var colqwenAugmentation = strings.Repeat("<|endoftext|>", 10)

// Name implements Recipe.
func (ColQwen) Name() string { return "colqwen2" }

// Version implements Recipe.
func (ColQwen) Version() string { return "colqwen2/1" }

// Tasks implements Recipe.
func (ColQwen) Tasks() []string { return []string{"retrieval"} }

// Task implements Recipe.
func (ColQwen) Task(name string) (Task, error) {
	switch name {
	case "", "retrieval", "retrieval.query", "retrieval.passage":
		return Task{Name: "retrieval"}, nil
	}
	return Task{}, fmt.Errorf("unknown task %q (ColQwen has one: retrieval)", name)
}

// Prompt implements Recipe.
func (ColQwen) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	var text strings.Builder
	var images []int
	for _, p := range parts {
		if p.ImageTokens > 0 {
			images = append(images, p.ImageTokens)
			text.WriteString("<|vision_start|><|image_pad|><|vision_end|>")
		} else {
			text.WriteString(p.Text)
		}
	}
	if len(images) == 0 {
		return tok.RawPrompt("Query: "+text.String()+colqwenAugmentation, nil)
	}
	body := text.String()
	if len(images) == 1 && len(parts) == 1 {
		body += "Describe the image."
	}
	return tok.RawPrompt("<|im_start|>user\n"+body+"<|im_end|><|endoftext|>", images)
}

// Pooling implements Recipe.
func (ColQwen) Pooling(p *tokenizer.Prompt) Pooling {
	return Pooling{Kind: Mean, Lo: 0, Hi: len(p.IDs)}
}

// Dimensions implements Recipe.
func (ColQwen) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (ColQwen) Image(mi model.Info) imageproc.Config { return qwenImage(mi) }
