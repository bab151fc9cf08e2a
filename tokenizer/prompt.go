package tokenizer

import (
	"errors"
	"fmt"
	"strings"
)

// Task selects a jina-embeddings-v4 adapter and, for text, the prompt
// prefix.
type Task string

// The tasks of jina-embeddings-v4. Text-matching is symmetric: its inputs
// always take the query prefix.
const (
	TaskRetrievalQuery   Task = "retrieval.query"
	TaskRetrievalPassage Task = "retrieval.passage"
	TaskTextMatching     Task = "text-matching"
	TaskCodeQuery        Task = "code.query"
	TaskCodePassage      Task = "code.passage"
)

// ParseTask parses a task name. Besides the five Task values it accepts the
// adapter names alone ("retrieval", "code", defaulting to the query side, as
// the reference's encode_text does, and "" for "retrieval") and
// "text-matching.query" / "text-matching.passage".
func ParseTask(s string) (Task, error) {
	switch s {
	case "", "retrieval":
		return TaskRetrievalQuery, nil
	case "code":
		return TaskCodeQuery, nil
	case "text-matching.query", "text-matching.passage":
		return TaskTextMatching, nil
	}
	switch t := Task(s); t {
	case TaskRetrievalQuery, TaskRetrievalPassage, TaskTextMatching, TaskCodeQuery, TaskCodePassage:
		return t, nil
	}
	return "", fmt.Errorf("tokenizer: %w: unknown task %q (want retrieval.query, retrieval.passage, text-matching, code.query or code.passage)", ErrPrompt, s)
}

// Adapter returns the name of the task's adapter: "retrieval",
// "text-matching" or "code".
func (t Task) Adapter() string {
	a, _, _ := strings.Cut(string(t), ".")
	return a
}

// Prefix returns the text that precedes the input in text prompts.
func (t Task) Prefix() string {
	if strings.HasSuffix(string(t), ".passage") {
		return "Passage: "
	}
	return "Query: "
}

// PromptKind is the structure of an input, which decides how its hidden
// states are pooled.
type PromptKind int

const (
	// TextOnly: text without images; pooled over all tokens.
	TextOnly PromptKind = iota
	// ImageOnly: one or more images; pooled from the first <|vision_start|>
	// to the last <|vision_end|>.
	ImageOnly
	// Interleaved: text and images; pooled over all tokens.
	Interleaved
)

func (k PromptKind) String() string {
	switch k {
	case TextOnly:
		return "text"
	case ImageOnly:
		return "image"
	case Interleaved:
		return "interleaved"
	}
	return fmt.Sprintf("PromptKind(%d)", int(k))
}

// Part is one piece of an input: text, or an image.
type Part struct {
	Text        string // a text span, used when ImageTokens == 0
	ImageTokens int    // > 0: this part is an image with that many merged tokens (grid_t*gh*gw/4)
	// Plain reads Text as data: special-token strings in it (such as
	// <|vision_start|> in a page about these models) are plain text, as
	// Encode without parseSpecial reads them, where a request's text has
	// its special tokens parsed and vision tokens refused.
	Plain bool
}

// Template is a prompt's text assembled from a model's markup, whose
// special tokens are parsed, and an input's texts, read as their parts
// say (Part.Plain). The zero value is empty.
type Template struct {
	s     string
	plain []span
}

// Markup appends model markup.
func (t *Template) Markup(s string) { t.s += s }

// Text appends a part's text.
func (t *Template) Text(p Part) {
	start := len(t.s)
	t.s += p.Text
	if !p.Plain || len(p.Text) == 0 {
		return
	}
	if n := len(t.plain); n > 0 && t.plain[n-1].end == start {
		t.plain[n-1].end = len(t.s)
		return
	}
	t.plain = append(t.plain, span{start, len(t.s)})
}

// String returns the template's text.
func (t *Template) String() string { return t.s }

// ImageSpan locates one image in a prompt's ids.
type ImageSpan struct {
	VisionStart int // index of <|vision_start|>
	First, End  int // the image's <|image_pad|> tokens are ids[First:End]
	VisionEnd   int // index of <|vision_end|>
}

// Prompt is a model input: token ids with every image placeholder expanded
// to the image's number of tokens.
type Prompt struct {
	IDs    []int32
	Images []ImageSpan // in input order
	Kind   PromptKind  // decides the pooling rule (never scanning ids)
}

// MaxPromptTokens bounds the length of a prompt, so that an image token
// count from a request cannot size an allocation. It is far above the
// models' context (jina-embeddings-v4: 32768).
const MaxPromptTokens = 1 << 20

// ErrPrompt is wrapped by errors in the structure of a prompt request (no
// parts, a negative image size, a template whose markers do not match its
// images, a prompt beyond MaxPromptTokens).
var ErrPrompt = errors.New("invalid prompt")

// Token texts of the Qwen2-VL chat and vision markup.
const (
	imStart     = "<|im_start|>"
	imEnd       = "<|im_end|>"
	visionStart = "<|vision_start|>"
	visionEnd   = "<|vision_end|>"
	imagePad    = "<|image_pad|>"
	videoPad    = "<|video_pad|>"
	endOfText   = "<|endoftext|>"
)

// JinaV4Prompt builds the jina-embeddings-v4 input for parts:
//   - text only: the task prefix and the text, no chat wrapper (the texts of
//     several parts are joined);
//   - images only: the reference image prompt, for one image
//     "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe
//     the image.<|im_end|>\n", for several the multi-image chat turn
//     "<|im_start|>user\n" + k × vision span + "<|im_end|>\n";
//   - text and images: the task prefix, then the parts in order, each image
//     as <|vision_start|><|image_pad|>…<|vision_end|> (an extension of the
//     reference, which has no interleaved input).
//
// Special tokens written in the text are parsed, as the reference does,
// except the vision tokens, which give an error wrapping ErrVisionToken.
// Empty text parts are ignored.
func (t *Tokenizer) JinaV4Prompt(task Task, parts []Part) (*Prompt, error) {
	task, err := ParseTask(string(task))
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("tokenizer: %w: no input parts", ErrPrompt)
	}
	// Join adjacent texts: the reference tokenizes one string, and words
	// must not be cut where the caller happened to split the text.
	total, images, _, err := partCounts(parts)
	if err != nil {
		return nil, err
	}
	type seg struct {
		imageTokens int
		text        Template // the texts between images, the prefix first
	}
	var segs []seg
	for _, p := range parts {
		switch {
		case p.ImageTokens > 0:
			segs = append(segs, seg{imageTokens: p.ImageTokens})
		case p.Text == "":
		case len(segs) > 0 && segs[len(segs)-1].imageTokens == 0:
			segs[len(segs)-1].text.Text(p)
		default:
			s := seg{}
			if len(segs) == 0 {
				s.text.Markup(task.Prefix())
			}
			s.text.Text(p)
			segs = append(segs, s)
		}
	}
	b := t.newBuilder(total)
	switch {
	case images == 0:
		b.kind = TextOnly
		tm := &Template{s: task.Prefix()}
		if len(segs) > 0 {
			tm = &segs[0].text
		}
		b.template(tm, true)
	case images == len(segs):
		b.kind = ImageOnly
		b.special(imStart)
		b.text("user\n", false)
		for _, s := range segs {
			b.image(s.imageTokens)
		}
		if images == 1 {
			b.text("Describe the image.", false)
		}
		b.special(imEnd)
		b.text("\n", false)
	default:
		b.kind = Interleaved
		for i, s := range segs {
			switch {
			case s.imageTokens > 0:
				if i == 0 {
					b.text(task.Prefix(), false)
				}
				b.image(s.imageTokens)
			default:
				b.template(&s.text, true)
			}
		}
	}
	return b.prompt()
}

// RawPrompt tokenizes an expert-written template: special tokens are
// parsed, and each image is written as
// <|vision_start|><|image_pad|><|vision_end|>, its <|image_pad|> expanded to
// imageTokens[k] copies for the k-th image. A template with images is pooled
// like an image input (the reference pools the vision span whenever images
// are present), one without like text.
func (t *Tokenizer) RawPrompt(template string, imageTokens []int) (*Prompt, error) {
	return t.TemplatePrompt(&Template{s: template}, imageTokens)
}

// TemplatePrompt is RawPrompt of a template whose plain texts are read as
// plain text: a vision token written in them is text, not an image.
func (t *Tokenizer) TemplatePrompt(tm *Template, imageTokens []int) (*Prompt, error) {
	total := 0
	for k, n := range imageTokens {
		if n <= 0 || n > MaxPromptTokens-total {
			return nil, fmt.Errorf("tokenizer: %w: image %d has %d tokens", ErrPrompt, k, n)
		}
		total += n
	}
	b := t.newBuilder(total)
	b.kind = TextOnly
	if len(imageTokens) > 0 {
		b.kind = ImageOnly
	}
	ids, _ := t.appendEncode(make([]int32, 0, len(tm.s)/3+1), tm.s, true, false, tm.plain...)
	vs, ve, ip, vp := t.ids[visionStart], t.ids[visionEnd], t.ids[imagePad], t.ids[videoPad]
	k := 0
	for i := 0; i < len(ids); i++ {
		id := ids[i]
		if !t.vision[id] {
			b.p.IDs = append(b.p.IDs, id)
			continue
		}
		if id == vp {
			return nil, fmt.Errorf("tokenizer: %w: %s (video) is not supported", ErrPrompt, videoPad)
		}
		if id != vs || i+2 >= len(ids) || ids[i+1] != ip || ids[i+2] != ve {
			return nil, fmt.Errorf("tokenizer: %w: %s at token %d is not part of a %s%s%s span", ErrPrompt, t.tokens[id], i, visionStart, imagePad, visionEnd)
		}
		if k == len(imageTokens) {
			return nil, fmt.Errorf("tokenizer: %w: the template has more images than the %d given", ErrPrompt, len(imageTokens))
		}
		b.image(imageTokens[k])
		k++
		i += 2
	}
	if k != len(imageTokens) {
		return nil, fmt.Errorf("tokenizer: %w: the template has %d images, %d were given", ErrPrompt, k, len(imageTokens))
	}
	return b.prompt()
}

// builder appends prompt pieces and keeps the first error.
type builder struct {
	t    *Tokenizer
	p    Prompt
	kind PromptKind
	err  error
}

func (t *Tokenizer) newBuilder(imageTokens int) *builder {
	return &builder{t: t, p: Prompt{IDs: make([]int32, 0, imageTokens+64)}}
}

func (b *builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// id returns the id of special token s, failing if the vocabulary lacks it.
func (b *builder) id(s string) int32 {
	id, ok := b.t.ids[s]
	if !ok {
		b.fail(fmt.Errorf("tokenizer: the vocabulary has no %s token", s))
	}
	return id
}

func (b *builder) special(s string) {
	b.p.IDs = append(b.p.IDs, b.id(s))
}

// text appends the tokens of s. User text (user = true) may contain special
// tokens but not vision tokens.
func (b *builder) text(s string, user bool) {
	b.template(&Template{s: s}, user)
}

// template appends the tokens of tm, whose texts are user text: they may
// contain special tokens but not vision tokens, and their plain texts are
// read as plain text.
func (b *builder) template(tm *Template, user bool) {
	if b.err != nil {
		return
	}
	b.p.IDs, b.err = b.t.appendEncode(b.p.IDs, tm.s, true, user, tm.plain...)
}

// image appends a vision span of n placeholder tokens.
func (b *builder) image(n int) {
	vs, pad, ve := b.id(visionStart), b.id(imagePad), b.id(visionEnd)
	if b.err != nil {
		return
	}
	sp := ImageSpan{VisionStart: len(b.p.IDs)}
	b.p.IDs = append(b.p.IDs, vs)
	sp.First = len(b.p.IDs)
	for range n {
		b.p.IDs = append(b.p.IDs, pad)
	}
	sp.End = len(b.p.IDs)
	sp.VisionEnd = sp.End
	b.p.IDs = append(b.p.IDs, ve)
	b.p.Images = append(b.p.Images, sp)
}

func (b *builder) prompt() (*Prompt, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.p.IDs) > MaxPromptTokens {
		return nil, fmt.Errorf("tokenizer: %w: %d tokens, more than %d", ErrPrompt, len(b.p.IDs), MaxPromptTokens)
	}
	b.p.Kind = b.kind
	return &b.p, nil
}

// partCounts checks parts (no negative image token counts, no part with
// both text and an image, images within MaxPromptTokens) and counts their
// image tokens, images and non-empty texts.
func partCounts(parts []Part) (imageTokens, images, texts int, err error) {
	for i, p := range parts {
		switch {
		case p.ImageTokens < 0:
			return 0, 0, 0, fmt.Errorf("tokenizer: %w: part %d has %d image tokens", ErrPrompt, i, p.ImageTokens)
		case p.ImageTokens > 0 && p.Text != "":
			return 0, 0, 0, fmt.Errorf("tokenizer: %w: part %d has both text and an image", ErrPrompt, i)
		case p.ImageTokens > 0:
			if p.ImageTokens > MaxPromptTokens-imageTokens {
				return 0, 0, 0, fmt.Errorf("tokenizer: %w: images need more than %d tokens", ErrPrompt, MaxPromptTokens)
			}
			imageTokens += p.ImageTokens
			images++
		case p.Text != "":
			texts++
		}
	}
	return imageTokens, images, texts, nil
}
