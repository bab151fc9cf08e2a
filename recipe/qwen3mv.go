package recipe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
)

// The late-interaction retrievers on a Qwen3-VL backbone: one vector per
// token (every token of the prompt, chat-template and augmentation tokens
// included), each L2-normalized, compared by MaxSim. They share the rules
// below and differ in their prompts and image budgets:
//
//   - ColQwen3 (TomoroAI tomoro-colqwen3-embed): a query is its text,
//     stripped, then ten <|endoftext|> (the augmentation); a page image is
//     "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe
//     the image.<|im_end|><|endoftext|>"; images of 65,536 to 1,310,720
//     pixels (the processor's max_num_visual_tokens = 1280 whatever the
//     checkpoint's preprocessor says).
//   - Ops-ColQwen3 (OpenSearch-AI): a query is its raw text (no prefix, no
//     augmentation); a page image is the same user turn followed by
//     "<|im_start|>assistant\n<|endoftext|>"; the checkpoint's budget.
//   - nemotron-colembed-vl-v2 (NVIDIA): the chat template with the
//     generation prompt, a query's user turn being "Query: query: " + text
//     and a page's its images then "passage: " + its text ("" for a page
//     image); the checkpoint's budget. Its decoder is bidirectional and
//     its rows are the hidden states before the final norm, which its file
//     must say (model.KeyCausal, model.KeyOutputNorm false): the recipe
//     refuses a file that does not.
//
// The head (a projection in the mvproj side-car for the two ColQwen3, none
// for nemotron) belongs to the model files, not to the recipe. Queries are
// texts and pages are images: task "retrieval" (the default) gives a text
// the query prompt and an input with images the page prompt;
// "retrieval.query" and "retrieval.passage" choose one (a text page). The
// page prompt of text with images (not in the references) puts the parts
// in order in the user turn (nemotron: the images first, as its processor
// does), without "Describe the image.". A pooled single vector is the mean
// of every token's hidden state (no reference has one). Images follow
// transformers' Qwen2-VL image processor: factor 32, alpha dropped, mean =
// std = 0.5, the budget of the mmproj's clip.vision.image_min_pixels /
// image_max_pixels (vembed convert writes each family's), else the
// family's defaults.
type Qwen3MultiVector struct {
	family mvFamily
}

type mvFamily int

const (
	familyColQwen3 mvFamily = iota
	familyOpsColQwen3
	familyNemotron
)

// Recipe names of the three families (vembed.recipe).
const (
	ColQwen3Name    = "colqwen3"
	OpsColQwen3Name = "ops-colqwen3"
	NemotronName    = "nemotron-colembed-vl"
)

// Each family's default image budget, used when the mmproj states none.
const (
	mvMinPixels = 65536       // size.shortest_edge of the Qwen3-VL preprocessors
	mvMaxPixels = 1280 * 1024 // ColQwen3Processor's max_num_visual_tokens = 1280, 32² pixels a token
)

func init() {
	Register(ColQwen3Name, fixed(Qwen3MultiVector{familyColQwen3}))
	Register(OpsColQwen3Name, fixed(Qwen3MultiVector{familyOpsColQwen3}))
	Register(NemotronName, nemotronFrom)
}

// nemotronFrom refuses a file that would run nemotron with the causal mask
// or the final norm: its vectors would be another model's.
func nemotronFrom(f *gguf.File) (Recipe, error) {
	for _, key := range []string{model.KeyCausal, model.KeyOutputNorm} {
		v, err := f.Bool(key)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
			return nil, fmt.Errorf("recipe %s: the file lacks %s = false: nemotron-colembed-vl-v2 is bidirectional and reads its rows before the final norm (convert the checkpoint with vembed convert)", NemotronName, key)
		case err != nil:
			return nil, fmt.Errorf("recipe %s: %s: %w", NemotronName, key, err)
		case v:
			return nil, fmt.Errorf("recipe %s: the file says %s = true: nemotron-colembed-vl-v2 is bidirectional and reads its rows before the final norm", NemotronName, key)
		}
	}
	return Qwen3MultiVector{familyNemotron}, nil
}

// Name implements Recipe.
func (r Qwen3MultiVector) Name() string {
	return [...]string{ColQwen3Name, OpsColQwen3Name, NemotronName}[r.family]
}

// Version implements Recipe.
func (r Qwen3MultiVector) Version() string { return r.Name() + "/1" }

// Tasks implements Recipe.
func (Qwen3MultiVector) Tasks() []string {
	return []string{"retrieval", "retrieval.query", "retrieval.passage"}
}

// Task implements Recipe.
func (r Qwen3MultiVector) Task(name string) (Task, error) {
	switch name {
	case "":
		return Task{Name: "retrieval"}, nil
	case "retrieval", "retrieval.query", "retrieval.passage":
		return Task{Name: name}, nil
	}
	return Task{}, fmt.Errorf("unknown task %q (%s has retrieval, retrieval.query and retrieval.passage)", name, r.Name())
}

const imageSpan = "<|vision_start|><|image_pad|><|vision_end|>"

// Prompt implements Recipe.
func (r Qwen3MultiVector) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	var text strings.Builder
	var images []int
	for _, p := range parts {
		if p.ImageTokens > 0 {
			images = append(images, p.ImageTokens)
		} else {
			text.WriteString(p.Text)
		}
	}
	query := task.Name == "retrieval.query" || task.Name != "retrieval.passage" && len(images) == 0
	if query {
		if len(images) > 0 {
			return nil, fmt.Errorf("task %s: a query is text; images make a page (task retrieval or retrieval.passage)", task.Name)
		}
		q := text.String()
		switch r.family {
		case familyColQwen3:
			return tok.RawPrompt(strings.TrimSpace(q)+colqwenAugmentation, nil)
		case familyOpsColQwen3:
			return tok.RawPrompt(q, nil)
		default:
			return tok.RawPrompt("<|im_start|>user\nQuery: query: "+q+"<|im_end|>\n<|im_start|>assistant\n", nil)
		}
	}
	if r.family == familyNemotron {
		return tok.RawPrompt("<|im_start|>user\n"+strings.Repeat(imageSpan, len(images))+"passage: "+text.String()+"<|im_end|>\n<|im_start|>assistant\n", images)
	}
	var body strings.Builder
	for _, p := range parts {
		if p.ImageTokens > 0 {
			body.WriteString(imageSpan)
		} else {
			body.WriteString(p.Text)
		}
	}
	if len(images) == 1 && len(parts) == 1 {
		body.WriteString("Describe the image.")
	}
	end := "<|im_end|><|endoftext|>"
	if r.family == familyOpsColQwen3 {
		end = "<|im_end|><|im_start|>assistant\n<|endoftext|>"
	}
	return tok.RawPrompt("<|im_start|>user\n"+body.String()+end, images)
}

// Pooling implements Recipe.
func (Qwen3MultiVector) Pooling(p *tokenizer.Prompt) Pooling {
	return Pooling{Kind: Mean, Lo: 0, Hi: len(p.IDs)}
}

// Dimensions implements Recipe.
func (Qwen3MultiVector) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (Qwen3MultiVector) Image(mi model.Info) imageproc.Config {
	c := imageproc.JinaV4Config()
	c.PatchSize, c.MinPixels, c.MaxPixels = 16, mvMinPixels, mvMaxPixels
	c.Mean, c.Std = [3]float32{0.5, 0.5, 0.5}, [3]float32{0.5, 0.5, 0.5}
	return withInfo(c, mi)
}
