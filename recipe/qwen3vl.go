package recipe

import (
	"fmt"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
)

// Qwen3VLEmbedding is Qwen3-VL-Embedding (2B, 8B), following its official
// code:
//   - Prompts: the chat template with the instruction as system message
//     (Request.Instruction; default "Represent the user's input.", stripped
//     and ended with "." unless it ends in punctuation), the input's images
//     before its texts, and the generation prompt.
//   - Tasks: none; a request gives an instruction instead.
//   - Pooling: the last token's final hidden state (after the output norm).
//   - Dimensions: any size from 1 to hidden (Matryoshka, trained for 64 and
//     up).
//   - Images: qwen-vl-utils' preprocessing (RGBA on white, factor 32,
//     4,096..1,843,200 pixels, mean = std = 0.5), from the model's metadata.
type Qwen3VLEmbedding struct{}

// Name implements Recipe.
func (Qwen3VLEmbedding) Name() string { return "qwen3-vl-embedding" }

// Version implements Recipe.
func (Qwen3VLEmbedding) Version() string { return "qwen3-vl-embedding/1" }

// Tasks implements Recipe.
func (Qwen3VLEmbedding) Tasks() []string { return nil }

// Task implements Recipe.
func (Qwen3VLEmbedding) Task(name string) (Task, error) { return qwen3Task(name) }

func qwen3Task(name string) (Task, error) {
	if name != "" {
		return Task{}, fmt.Errorf("task %q: this model takes no task; give an instruction instead (the instruction field, vembed --instruction)", name)
	}
	return Task{}, nil
}

// Instructed implements Instructed.
func (Qwen3VLEmbedding) Instructed() {}

// Prompt implements Recipe.
func (Qwen3VLEmbedding) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	return tok.Qwen3VLEmbedPrompt(task.Instruction, parts)
}

// Pooling implements Recipe.
func (Qwen3VLEmbedding) Pooling(p *tokenizer.Prompt) Pooling { return Pooling{Kind: Last} }

// Dimensions implements Recipe.
func (Qwen3VLEmbedding) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (Qwen3VLEmbedding) Image(mi model.Info) imageproc.Config { return qwen3Image(mi) }

// qwen3Image is Qwen3-VL's preprocessing: the model's metadata over
// qwen-vl-utils' defaults (patch 16, 4,096..1,843,200 pixels).
func qwen3Image(mi model.Info) imageproc.Config {
	c := imageproc.JinaV4Config()
	c.PatchSize, c.MinPixels, c.MaxPixels = 16, 4*32*32, 1800*32*32
	c = withInfo(c, mi)
	c.QwenVLUtils = true
	return c
}

// Qwen3VLReranker is Qwen3-VL-Reranker in llama.cpp's reranker form: a
// (query, document) pair becomes one prompt (the official judge system
// message, "<Instruct>: …<Query>:…\n<Document>:…" with images before texts
// and NULL for an empty side, then the generation prompt) and its score is
// read from the last token's hidden state by the file's rank head. It has
// no embeddings: Prompt refuses single inputs.
type Qwen3VLReranker struct{}

// Name implements Recipe.
func (Qwen3VLReranker) Name() string { return "qwen3-vl-reranker" }

// Version implements Recipe.
func (Qwen3VLReranker) Version() string { return "qwen3-vl-reranker/1" }

// Tasks implements Recipe.
func (Qwen3VLReranker) Tasks() []string { return nil }

// Task implements Recipe.
func (Qwen3VLReranker) Task(name string) (Task, error) { return qwen3Task(name) }

// Instructed implements Instructed.
func (Qwen3VLReranker) Instructed() {}

// Prompt implements Recipe: a reranker scores pairs (PairPrompt) and makes
// no embeddings.
func (Qwen3VLReranker) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	return nil, fmt.Errorf("this model is a reranker: it scores (query, document) pairs and makes no embeddings")
}

// PairPrompt implements Pairs.
func (Qwen3VLReranker) PairPrompt(tok *tokenizer.Tokenizer, task Task, query, doc []tokenizer.Part) (*tokenizer.Prompt, error) {
	return tok.Qwen3VLRerankPrompt(task.Instruction, query, doc)
}

// Pooling implements Recipe.
func (Qwen3VLReranker) Pooling(p *tokenizer.Prompt) Pooling { return Pooling{Kind: Last} }

// Dimensions implements Recipe.
func (Qwen3VLReranker) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (Qwen3VLReranker) Image(mi model.Info) imageproc.Config { return qwen3Image(mi) }
