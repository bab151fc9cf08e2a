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

// JinaV4 is jina-embeddings-v4 (and other Qwen2/2.5-VL embedders that
// follow its conventions). Rules, from the project's DECISIONS:
//   - Prompts: text-only inputs get the task prefix ("Query: "/"Passage: ");
//     image-only inputs the reference image prompt; interleaved inputs the
//     task prefix and the parts in order, each image wrapped in
//     <|vision_start|>…<|vision_end|>.
//   - Pooling is decided by the input's structure, never by scanning ids:
//     image-only inputs mean-pool from the first <|vision_start|> to the
//     last <|vision_end|> inclusive; inputs with text mean-pool all tokens.
//   - Default task: retrieval, with the query prompt for text-only inputs
//     and the passage prompt for inputs with images; an adapter name alone
//     ("retrieval", "code") picks its side the same way. The task selects
//     the prompt only: the adapter is whichever one the GGUF has merged.
//   - Dimensions: a model 2048 wide accepts its trained Matryoshka sizes
//     128, 256, 512, 1024, 2048; other widths accept any size.
//   - Images: the model's preprocessing metadata, with jina-v4's values
//     (patch 14, merge 2, CLIP mean/std, 3136..602112 pixels) for whatever
//     the metadata leaves out.
//   - Tower LoRA: adapters saved with transformers 4.52+ module names
//     (model.visual.*) carry pairs on the vision tower too, which vembed
//     convert merges into one mmproj per task; the LM and the mmproj then
//     name their task (VisionAdapterKey) and must agree.
type JinaV4 struct{}

// VisionAdapterKey names a task adapter that adapts the vision tower: in
// a language model, the task whose mmproj it needs (its adapter has LoRA
// pairs on the tower); in an mmproj, the task whose tower LoRA is merged
// into it. Absent in both when the tower runs as the base's.
const VisionAdapterKey = "vembed.vision_adapter"

// CheckVisionAdapter refuses an mmproj that is not its language model's:
// one with another task's tower LoRA, one with a task's when the LM's
// adapter leaves the tower alone, or the base tower when the LM's adapter
// adapts it. Either would embed images with a tower the model never ran.
func CheckVisionAdapter(lm, mmproj *gguf.File) error {
	task := func(f *gguf.File) (string, error) {
		v, err := f.String(VisionAdapterKey)
		if errors.Is(err, gguf.ErrKeyNotFound) {
			return "", nil
		}
		return v, err
	}
	want, err := task(lm)
	if err != nil {
		return fmt.Errorf("the language model's %s: %w", VisionAdapterKey, err)
	}
	got, err := task(mmproj)
	if err != nil {
		return fmt.Errorf("the mmproj's %s: %w", VisionAdapterKey, err)
	}
	switch {
	case want == got:
		return nil
	case got == "":
		return fmt.Errorf("the language model's task adapter %q adapts the vision tower too, but this mmproj has no task's tower LoRA merged: load the mmproj converted for task %q with it", want, want)
	case want == "":
		return fmt.Errorf("this mmproj has task %q's tower LoRA merged, but the language model's adapter leaves the tower alone: load the mmproj converted with this language model", got)
	}
	return fmt.Errorf("this mmproj has task %q's tower LoRA merged, the language model is task %q's: load the mmproj converted for task %q", got, want, want)
}

var jinaTasks = []string{"retrieval.query", "retrieval.passage", "text-matching", "code.query", "code.passage"}

// jinaDims are jina-embeddings-v4's trained Matryoshka sizes.
var jinaDims = []int{128, 256, 512, 1024, 2048}

// Name implements Recipe.
func (JinaV4) Name() string { return "jina-embeddings-v4" }

// Version implements Recipe.
func (JinaV4) Version() string { return "jina-v4/1" }

// Tasks implements Recipe.
func (JinaV4) Tasks() []string { return jinaTasks }

// Task implements Recipe.
func (JinaV4) Task(name string) (Task, error) {
	switch name {
	case "", "retrieval":
		return Task{Name: "retrieval", adapter: "retrieval"}, nil
	case "code":
		return Task{Name: "code", adapter: "code"}, nil
	}
	t, err := tokenizer.ParseTask(name)
	if err != nil {
		return Task{}, fmt.Errorf("unknown task %q (want one of %s)", name, strings.Join(jinaTasks, ", "))
	}
	return Task{Name: name, fixed: t}, nil
}

// Prompt implements Recipe.
func (JinaV4) Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error) {
	hasImage := false
	for _, p := range parts {
		hasImage = hasImage || p.ImageTokens > 0
	}
	return tok.JinaV4Prompt(task.For(hasImage), parts)
}

// Pooling implements Recipe.
func (JinaV4) Pooling(p *tokenizer.Prompt) Pooling {
	if p.Kind == tokenizer.ImageOnly && len(p.Images) > 0 {
		return Pooling{Kind: Mean, Lo: p.Images[0].VisionStart, Hi: p.Images[len(p.Images)-1].VisionEnd + 1}
	}
	return Pooling{Kind: Mean, Lo: 0, Hi: len(p.IDs)}
}

// Dimensions implements Recipe.
func (JinaV4) Dimensions(hidden int) []int {
	if hidden == 2048 {
		return jinaDims
	}
	return nil
}

// Image implements Recipe.
func (JinaV4) Image(mi model.Info) imageproc.Config { return qwenImage(mi) }

// qwenImage is the preprocessing the model's metadata describes, with
// jina-embeddings-v4's values for whatever the metadata leaves out.
func qwenImage(mi model.Info) imageproc.Config { return withInfo(imageproc.JinaV4Config(), mi) }

// withInfo sets what the model's metadata gives over a family's defaults
// c: patch and merge sizes, normalization, and the pixel budget
// (clip.vision.image_min_pixels / image_max_pixels).
func withInfo(c imageproc.Config, mi model.Info) imageproc.Config {
	if mi.PatchSize > 0 {
		c.PatchSize = mi.PatchSize
	}
	if mi.MergeSize > 0 {
		c.MergeSize = mi.MergeSize
	}
	if mi.TemporalPatchSize > 0 {
		c.TemporalPatchSize = mi.TemporalPatchSize
	}
	if mi.ImageStd != [3]float32{} {
		c.Mean, c.Std = mi.ImageMean, mi.ImageStd
	}
	if mi.MinPixels > 0 {
		c.MinPixels = mi.MinPixels
	}
	if mi.MaxPixels > 0 {
		c.MaxPixels = mi.MaxPixels
	}
	return c
}
