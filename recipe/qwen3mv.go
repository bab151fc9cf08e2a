package recipe

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

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
//
// nemotron's processor also bounds its prompts, which the recipe copies
// (NemotronTruncation): a query is cut to its first q_max_length (512)
// tokens, a page to its first p_max_length (4096) less its image tokens
// less reserve_tokens_for_images (100), image tokens included, whatever
// the request's truncate says; the chat template's end (<|im_end|>, the
// assistant header) is then cut with the text, as the reference's
// tokenizer cuts it. A page whose images leave no room, or whose cut
// would reach into an image, is refused, as the reference refuses it.
type Qwen3MultiVector struct {
	family mvFamily
	trunc  NemotronTruncation // nemotron's; zero: no cut of the recipe's own
	query  string             // the Qwen3.5 retrievers' query template (qwen35.go)
	// imageRows keeps a page's image-token rows only (qwen35.go).
	imageRows bool
}

// NemotronTruncation is nemotron-colembed-vl-v2's processor's prompt
// bounds (processor_config.json's q_max_length, p_max_length,
// reserve_tokens_for_images).
type NemotronTruncation struct {
	QueryMax, PassageMax, ImageReserve int
}

// DefaultNemotronTruncation is the processor's defaults (and the
// published processor_config.json's values).
var DefaultNemotronTruncation = NemotronTruncation{QueryMax: 512, PassageMax: 4096, ImageReserve: 100}

// Keys of nemotron's truncation in its LM file (vembed convert writes
// them from processor_config.json; absent, the defaults apply).
const (
	QueryMaxTokensKey     = "vembed.truncation.query_max_tokens"     // q_max_length
	PassageMaxTokensKey   = "vembed.truncation.passage_max_tokens"   // p_max_length
	ImageReserveTokensKey = "vembed.truncation.image_reserve_tokens" // reserve_tokens_for_images
)

// Check reports bounds no prompt could meet, or beyond any prompt.
func (t NemotronTruncation) Check() error {
	switch {
	case t.QueryMax < 1 || t.QueryMax > tokenizer.MaxPromptTokens:
		return fmt.Errorf("query max length %d: want 1..%d tokens", t.QueryMax, tokenizer.MaxPromptTokens)
	case t.PassageMax < 1 || t.PassageMax > tokenizer.MaxPromptTokens:
		return fmt.Errorf("passage max length %d: want 1..%d tokens", t.PassageMax, tokenizer.MaxPromptTokens)
	case t.ImageReserve < 0 || t.ImageReserve >= t.PassageMax:
		return fmt.Errorf("reserve for images %d: want 0 up to below the passage max length %d", t.ImageReserve, t.PassageMax)
	}
	return nil
}

type mvFamily int

const (
	familyColQwen3 mvFamily = iota
	familyOpsColQwen3
	familyNemotron
	familyColQwen35
	familyColVec
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
	Register(ColQwen3Name, fixed(Qwen3MultiVector{family: familyColQwen3}))
	Register(OpsColQwen3Name, fixed(Qwen3MultiVector{family: familyOpsColQwen3}))
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
	t := DefaultNemotronTruncation
	for _, k := range []struct {
		key string
		dst *int
	}{{QueryMaxTokensKey, &t.QueryMax}, {PassageMaxTokensKey, &t.PassageMax}, {ImageReserveTokensKey, &t.ImageReserve}} {
		v, err := f.Uint(k.key)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
		case err != nil:
			return nil, fmt.Errorf("recipe %s: %s: %w", NemotronName, k.key, err)
		case v > tokenizer.MaxPromptTokens:
			return nil, fmt.Errorf("recipe %s: %s = %d is beyond any prompt", NemotronName, k.key, v)
		default:
			*k.dst = int(v)
		}
	}
	if err := t.Check(); err != nil {
		return nil, fmt.Errorf("recipe %s: the file's truncation: %w", NemotronName, err)
	}
	return Qwen3MultiVector{family: familyNemotron, trunc: t}, nil
}

// Name implements Recipe.
func (r Qwen3MultiVector) Name() string {
	return [...]string{ColQwen3Name, OpsColQwen3Name, NemotronName, ColQwen35Name, ColVecName}[r.family]
}

// Version implements Recipe.
func (r Qwen3MultiVector) Version() string {
	v := r.Name() + "/1"
	if r.query != "" && r.query != DefaultQueryTemplate {
		v += fmt.Sprintf(" query %q", r.query)
	}
	if r.imageRows {
		v += " image rows"
	}
	return v
}

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
	var images []int
	var texts []tokenizer.Part
	for _, p := range parts {
		if p.ImageTokens > 0 {
			images = append(images, p.ImageTokens)
		} else {
			texts = append(texts, p)
		}
	}
	// around writes markup, the texts, markup.
	around := func(before, after string, texts []tokenizer.Part) *tokenizer.Template {
		var tm tokenizer.Template
		tm.Markup(before)
		for _, p := range texts {
			tm.Text(p)
		}
		tm.Markup(after)
		return &tm
	}
	query := task.Name == "retrieval.query" || task.Name != "retrieval.passage" && len(images) == 0
	if query {
		if len(images) > 0 {
			return nil, fmt.Errorf("task %s: a query is text; images make a page (task retrieval or retrieval.passage)", task.Name)
		}
		switch r.family {
		case familyColQwen3:
			return tok.TemplatePrompt(around("", colqwenAugmentation, trimSpace(texts)), nil)
		case familyOpsColQwen3:
			return tok.TemplatePrompt(around("", "", texts), nil)
		case familyColQwen35, familyColVec:
			before, after, _ := strings.Cut(r.query, "{query}")
			return tok.TemplatePrompt(around(before, after, texts), nil)
		default:
			p, err := tok.TemplatePrompt(around("<|im_start|>user\nQuery: query: ", "<|im_end|>\n<|im_start|>assistant\n", texts), nil)
			if err == nil && r.trunc.QueryMax > 0 && len(p.IDs) > r.trunc.QueryMax {
				// processor(truncation=True, max_length=q_max_length): the
				// first tokens, the template's end cut with the text.
				p.IDs = p.IDs[:r.trunc.QueryMax:r.trunc.QueryMax]
			}
			return p, err
		}
	}
	if r.family == familyNemotron {
		p, err := tok.TemplatePrompt(around("<|im_start|>user\n"+strings.Repeat(imageSpan, len(images))+"passage: ", "<|im_end|>\n<|im_start|>assistant\n", texts), images)
		if err != nil {
			return nil, err
		}
		return r.cutPage(p, images)
	}
	var tm tokenizer.Template
	tm.Markup("<|im_start|>user\n")
	for _, p := range parts {
		if p.ImageTokens > 0 {
			tm.Markup(imageSpan)
		} else {
			tm.Text(p)
		}
	}
	if len(images) == 1 && len(parts) == 1 {
		tm.Markup("Describe the image.")
	}
	if r.family == familyOpsColQwen3 {
		tm.Markup("<|im_end|><|im_start|>assistant\n<|endoftext|>")
	} else {
		tm.Markup("<|im_end|><|endoftext|>")
	}
	return tok.TemplatePrompt(&tm, images)
}

// trimSpace is strings.TrimSpace of the texts joined, cutting each part.
func trimSpace(texts []tokenizer.Part) []tokenizer.Part {
	out := slices.Clone(texts)
	for i := range out {
		if out[i].Text = strings.TrimLeftFunc(out[i].Text, unicode.IsSpace); out[i].Text != "" {
			break
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Text = strings.TrimRightFunc(out[i].Text, unicode.IsSpace); out[i].Text != "" {
			break
		}
	}
	return out
}

// cutPage applies nemotron's page bound: the processor tokenizes the
// page (image tokens expanded) with max_length = p_max_length - the
// batch's most image tokens - reserve_tokens_for_images; one input is its
// own batch, and its image tokens all count (the reference has one image
// a page). The reference asserts that the bound leaves room, and fails
// when the tokenizer's cut reaches an image's tokens (it then finds fewer
// image tokens in the ids than in the text); a cut of the last image's
// <|vision_end|> alone, which the reference keeps, is refused too (a
// span without its end marker).
func (r Qwen3MultiVector) cutPage(p *tokenizer.Prompt, images []int) (*tokenizer.Prompt, error) {
	t := r.trunc
	if t.PassageMax == 0 {
		return p, nil
	}
	n := 0
	for _, k := range images {
		n += k
	}
	limit := t.PassageMax - n - t.ImageReserve
	if limit <= 0 {
		return nil, fmt.Errorf("the page's %d image tokens and the %d reserved leave no room in its %d-token bound (p_max_length): lower the image budget (max_pixels)", n, t.ImageReserve, t.PassageMax)
	}
	if len(p.IDs) <= limit {
		return p, nil
	}
	if k := len(p.Images); k > 0 && limit <= p.Images[k-1].VisionEnd {
		return nil, fmt.Errorf("the page's bound of %d tokens (p_max_length %d - %d image tokens - %d reserved) would cut into its images, which end at token %d: lower the image budget (max_pixels)", limit, t.PassageMax, n, t.ImageReserve, p.Images[k-1].VisionEnd+1)
	}
	p.IDs = p.IDs[:limit:limit]
	return p, nil
}

// Pooling implements Recipe.
func (Qwen3MultiVector) Pooling(p *tokenizer.Prompt) Pooling {
	return Pooling{Kind: Mean, Lo: 0, Hi: len(p.IDs)}
}

// Dimensions implements Recipe.
func (Qwen3MultiVector) Dimensions(hidden int) []int { return nil }

// Image implements Recipe.
func (r Qwen3MultiVector) Image(mi model.Info) imageproc.Config {
	c := imageproc.JinaV4Config()
	c.PatchSize, c.MinPixels, c.MaxPixels = 16, mvMinPixels, mvMaxPixels
	if r.family == familyColVec {
		c.MaxPixels = colvecMaxPixels
	}
	c.Mean, c.Std = [3]float32{0.5, 0.5, 0.5}, [3]float32{0.5, 0.5, 0.5}
	return withInfo(c, mi)
}
