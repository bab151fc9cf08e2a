package recipe

import (
	"fmt"
	"strings"

	"github.com/vembed/vembed/gguf"
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
// The query prefix is a setting of the file (QueryPrefixKey): "Query: ",
// what colpali-engine v0.3.9 to v0.3.12 used and the public checkpoints
// were trained with, unless the file says otherwise (v0.3.13 and later use
// none).
//
// ColQwen has no single vector; a pooled one is the mean of every token's
// final hidden state (non-reference). Tasks: "retrieval" only, queries
// being texts and documents images.
type ColQwen struct {
	// QueryPrefix precedes a query's text.
	QueryPrefix string
}

// QueryPrefixKey is the LM metadata key holding ColQwen's query prefix
// (absent: DefaultQueryPrefix).
const QueryPrefixKey = "vembed.query_prefix"

// DefaultQueryPrefix is the public ColQwen checkpoints' query prefix.
const DefaultQueryPrefix = "Query: "

const colqwenName = "colqwen2"

// colqwenFrom reads ColQwen's settings from a file.
func colqwenFrom(f *gguf.File) (Recipe, error) {
	r := ColQwen{QueryPrefix: DefaultQueryPrefix}
	if _, ok := f.Lookup(QueryPrefixKey); ok {
		p, err := f.String(QueryPrefixKey)
		if err != nil {
			return nil, fmt.Errorf("recipe: %s: %w", QueryPrefixKey, err)
		}
		r.QueryPrefix = p
	}
	return r, nil
}

// colqwenAugmentation is the processor's query suffix.
var colqwenAugmentation = strings.Repeat("<|endoftext|>", 10)

// Name implements Recipe.
func (ColQwen) Name() string { return colqwenName }

// Version implements Recipe.
func (c ColQwen) Version() string {
	if c.QueryPrefix == DefaultQueryPrefix {
		return "colqwen2/1"
	}
	return fmt.Sprintf("colqwen2/1 prefix %q", c.QueryPrefix)
}

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
func (c ColQwen) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	var images []int
	for _, p := range parts {
		if p.ImageTokens > 0 {
			images = append(images, p.ImageTokens)
		}
	}
	var tm tokenizer.Template
	if len(images) == 0 {
		tm.Markup(c.QueryPrefix)
	} else {
		tm.Markup("<|im_start|>user\n")
	}
	for _, p := range parts {
		if p.ImageTokens > 0 {
			tm.Markup("<|vision_start|><|image_pad|><|vision_end|>")
		} else {
			tm.Text(p)
		}
	}
	if len(images) == 0 {
		tm.Markup(colqwenAugmentation)
		return tok.TemplatePrompt(&tm, nil)
	}
	if len(images) == 1 && len(parts) == 1 {
		tm.Markup("Describe the image.")
	}
	tm.Markup("<|im_end|><|endoftext|>")
	return tok.TemplatePrompt(&tm, images)
}

// Pooling implements Recipe.
func (ColQwen) Pooling(p *tokenizer.Prompt) Pooling {
	return Pooling{Kind: Mean, Lo: 0, Hi: len(p.IDs)}
}

// Dimensions implements Recipe.
func (ColQwen) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (ColQwen) Image(mi model.Info) imageproc.Config { return qwenImage(mi) }
