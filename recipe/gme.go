package recipe

import (
	"fmt"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
)

// GME is GME-Qwen2-VL (gme-Qwen2-VL-2B / -7B-Instruct) as its authors run
// it (gme_inference.py):
//   - Prompts: the chat template with the instruction as system message
//     (Task.Instruction verbatim; default "You are a helpful assistant."),
//     the user turn with the input's image before its text, the generation
//     prompt and a trailing <|endoftext|>.
//   - Queries and documents: GME gives the caller's instruction to queries
//     and the default to documents; here a request with an instruction is
//     a query, one without is a document (or a query without instruction,
//     which GME embeds the same way).
//   - Tasks: none; a request gives an instruction instead.
//   - Pooling: the final <|endoftext|>'s hidden state (after the output
//     norm), L2-normalized; Matryoshka truncation to any size.
//   - Images: at most one per input (gmeMaxImages); two resizes, fetch_image's (factor 28, 3,136..12,845,056
//     pixels, aspect clamped at 200) then the processor's with GME's
//     256..1280 image tokens (200,704..1,003,520 pixels; the mmproj's
//     clip.vision.image_min_pixels / image_max_pixels when set).
type GME struct{}

// GME's processor bounds: GmeQwen2VL(min_image_tokens=256,
// max_image_tokens=1280), 28×28 pixels a token.
const (
	gmeMinPixels = 256 * 28 * 28
	gmeMaxPixels = 1280 * 28 * 28
)

// Name implements Recipe.
func (GME) Name() string { return "gme" }

// Version implements Recipe.
func (GME) Version() string { return "gme/2" }

// Tasks implements Recipe.
func (GME) Tasks() []string { return nil }

// Task implements Recipe.
func (GME) Task(name string) (Task, error) { return qwen3Task(name) }

// Instructed implements Instructed.
func (GME) Instructed() {}

// Prompt implements Recipe.
// GME embeds at most one image per input, as gme_inference.py does (its
// prompt has one image slot, filled before the text); more would be a
// prompt the model never saw, so they are refused rather than guessed at.
func (GME) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	n := 0
	for _, p := range parts {
		if p.ImageTokens > 0 {
			n++
		}
	}
	if n > gmeMaxImages {
		return nil, fmt.Errorf("GME takes at most %d image per input, as its reference does; this input has %d: send each image as its own input", gmeMaxImages, n)
	}
	return tok.GMEPrompt(task.Instruction, parts)
}

// gmeMaxImages is the number of images GME embeds in one input.
const gmeMaxImages = 1

// Pooling implements Recipe.
func (GME) Pooling(p *tokenizer.Prompt) Pooling { return Pooling{Kind: Last} }

// Dimensions implements Recipe.
func (GME) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (GME) Image(mi model.Info) imageproc.Config {
	c := imageproc.JinaV4Config()
	c.MinPixels, c.MaxPixels = gmeMinPixels, gmeMaxPixels
	c = withInfo(c, mi)
	c.Fetch = imageproc.GMEFetch()
	return c
}
