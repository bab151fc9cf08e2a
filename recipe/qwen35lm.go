package recipe

import (
	"fmt"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
)

// Qwen35LM is the rule for a plain Qwen3.5 language model (llama.cpp's
// qwen35 GGUF, no vembed.recipe): no embedder was trained on the base
// model, so it adds nothing to what the caller gives, as llama.cpp's
// llama-embedding reads such a file.
//   - Prompts: the input's parts in their order, texts as they are (their
//     special tokens parsed, as llama.cpp tokenizes with parse_special),
//     each image as <|vision_start|><|image_pad|>…<|vision_end|>; no chat
//     template, no BOS (Qwen's tokenizer adds none).
//   - Tasks: none, no instruction.
//   - Pooling: the last token's final hidden state, the summary a causal
//     decoder has (llama.cpp's LAST); every row's state is in the trace
//     (vembed embed --dump) as input<i>.hidden_states.
//   - Dimensions: any size from 1 to hidden.
//   - Images: Qwen3-VL's preprocessing (the tower is Qwen3-VL's), from the
//     mmproj's metadata.
type Qwen35LM struct{}

// qwen35Arch is llama.cpp's general.architecture of a Qwen3.5 LM.
const qwen35Arch = "qwen35"

// Name implements Recipe.
func (Qwen35LM) Name() string { return "qwen3.5-lm" }

// Version implements Recipe.
func (Qwen35LM) Version() string { return "qwen3.5-lm/1" }

// Tasks implements Recipe.
func (Qwen35LM) Tasks() []string { return nil }

// Task implements Recipe.
func (Qwen35LM) Task(name string) (Task, error) {
	if name != "" {
		return Task{}, fmt.Errorf("task %q: a plain Qwen3.5 language model takes no task (convert a retriever's release with vembed convert for one that does)", name)
	}
	return Task{}, nil
}

// Prompt implements Recipe.
func (Qwen35LM) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	var tm tokenizer.Template
	var images []int
	for _, p := range parts {
		if p.ImageTokens > 0 {
			tm.Markup(imageSpan)
			images = append(images, p.ImageTokens)
			continue
		}
		tm.Text(p)
	}
	if tm.String() == "" {
		return nil, fmt.Errorf("tokenizer: %w: an input with neither text nor images", tokenizer.ErrPrompt)
	}
	return tok.TemplatePrompt(&tm, images)
}

// Pooling implements Recipe.
func (Qwen35LM) Pooling(p *tokenizer.Prompt) Pooling { return Pooling{Kind: Last} }

// Dimensions implements Recipe.
func (Qwen35LM) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (Qwen35LM) Image(mi model.Info) imageproc.Config { return qwen3Image(mi) }
