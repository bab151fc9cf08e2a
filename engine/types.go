package engine

import (
	"errors"
	"fmt"
	"image"
)

// Part is one piece of an input: either text, an encoded image file (PNG,
// JPEG, GIF, BMP, TIFF, WebP) or an image already decoded. Build parts with
// Text, Image and Pixels.
type Part struct {
	Text  string
	Image []byte
	// Pixels is an opaque image already in memory (a rendered PDF page):
	// it is resized and patched as the same pixels read from a PNG file
	// would be, bit for bit, without encoding and decoding a file.
	Pixels *image.RGBA
	// Plain reads Text as data: special-token strings in it, such as
	// <|vision_start|> in a document about these models, are plain text
	// (the reading of vembed tokenize --special=false). Without it a
	// text's special tokens are parsed, as the reference processors do,
	// and vision tokens refused: a request writes images as image parts.
	Plain bool

	isImage bool
}

// Text returns a text part.
func Text(s string) Part { return Part{Text: s} }

// PlainText returns a text part read as data (Part.Plain): a document's
// text, which may quote any markup.
func PlainText(s string) Part { return Part{Text: s, Plain: true} }

// Image returns an image part holding the encoded file bytes.
func Image(data []byte) Part { return Part{Image: data, isImage: true} }

// Pixels returns an image part holding decoded pixels, which must be
// opaque (every alpha 255; a page rendered on white is): the engine drops
// the alpha channel, as decoding an opaque PNG does.
func Pixels(img *image.RGBA) Part { return Part{Pixels: img, isImage: true} }

// IsImage reports whether p is an image part.
func (p Part) IsImage() bool { return p.isImage }

// Input is one item to embed: an ordered list of parts. One text part is a
// text input, only image parts an image input (one image, or a multi-image
// document), and a mix of both an interleaved document.
type Input struct {
	Parts []Part

	// Template, when set, replaces the model's prompt: it is tokenized with
	// special tokens parsed, and each <|vision_start|><|image_pad|>
	// <|vision_end|> in it (written without spaces) stands for the next
	// part, which must all be images. Inputs with images are then pooled
	// over the vision spans, as the reference pools any image prompt.
	Template string

	// pairQuery, when positive, makes the input a (query, document) pair
	// for a reranker: its first pairQuery parts are the query, the rest
	// the document.
	pairQuery int
}

// TextInput is an input made of a single text.
func TextInput(s string) Input { return Input{Parts: []Part{Text(s)}} }

// ImageInput is an input made of a single encoded image.
func ImageInput(data []byte) Input { return Input{Parts: []Part{Image(data)}} }

// Request asks for the embeddings of several inputs with shared options.
// The zero value of every option means the model's default.
type Request struct {
	Inputs []Input

	// Task is one of retrieval.query, retrieval.passage, text-matching,
	// code.query, code.passage. Empty means retrieval, with the query prompt
	// for text-only inputs and the passage prompt for inputs with images;
	// "retrieval" and "code" alone pick their side the same way. The task
	// only selects the prompt: the task's adapter is whichever one is
	// merged into the loaded model file.
	Task string

	// Instruction replaces the default instruction of models whose prompts
	// take one (Info.Instruction; Qwen3-VL-Embedding: a system message such
	// as "Retrieve images or text relevant to the user's query."). Models
	// that take a task refuse it.
	Instruction string

	// InputType says what the inputs are for in the words of Cohere's
	// input_type (recipe.InputTypes: search_query, search_document,
	// classification, clustering, image); the model's recipe maps it onto
	// a task or an instruction, or refuses it. It replaces Task and
	// Instruction, which must then be empty.
	InputType string

	// MaxTokens, when positive, lowers the token limit of each input's
	// prompt for this request (Cohere's max_tokens): a longer input is
	// refused, or cut to it with Truncate.
	MaxTokens int

	// Dimensions truncates single vectors (Matryoshka); 0 keeps all. See
	// Info.Dimensions for the allowed values. Multi-vector requests refuse
	// it: their width is fixed by the projector.
	Dimensions int

	// Multivector returns one projected vector per token instead of a
	// pooled vector (late interaction); needs a multi-vector projector.
	Multivector bool

	// PerSpan additionally returns, for inputs with images, one pooled
	// vector per image span (<|vision_start|> … <|vision_end|>).
	PerSpan bool

	// MinPixels and MaxPixels bound the resized image area (0: the
	// model's). Each must lie within the model's own bounds (Info's
	// MinPixels..MaxPixels), and MinPixels may not exceed MaxPixels.
	MinPixels, MaxPixels int

	// Truncate cuts a text-only input whose prompt is over the token limit
	// to the limit (its end is dropped) instead of refusing it. Inputs with
	// images are never cut.
	Truncate bool

	// TruncateStart, with Truncate, drops the first tokens of the input's
	// text instead of the end of its prompt (Cohere's truncate START): the
	// recipe's prompt parts around the text (a task prefix, a chat
	// template) are kept whole. It applies to inputs of one text.
	TruncateStart bool

	// Unnormalized skips the L2 normalization of single vectors (Matryoshka
	// truncation then only cuts). Multi-vectors follow the projector.
	Unnormalized bool

	// Trace, when set, receives intermediate tensors for parity debugging.
	Trace Tracer
}

// Tracer receives intermediate tensors of a request: patches, vision
// outputs, final hidden states. Shapes are row-major, outermost first. The
// data must not be retained after the call returns.
type Tracer interface {
	Tensor(name string, data []float32, shape ...int) error
}

// Response holds one Embedding per input, in input order.
type Response struct {
	Embeddings []Embedding

	// PromptTokens counts the language-model tokens of all inputs,
	// including the image placeholder tokens.
	PromptTokens int
}

// Embedding is the result for one input.
type Embedding struct {
	// Vector is the pooled single vector (nil for multi-vector requests).
	Vector []float32
	// Multi holds one vector per token for multi-vector requests. The rows
	// may be shared with the engine's cache: do not modify them.
	Multi [][]float32
	// Spans holds one pooled vector per image span when PerSpan was asked.
	Spans [][]float32
	// Tokens is the prompt length of this input.
	Tokens int
}

// Info describes the served model and what requests it accepts.
type Info struct {
	Name          string
	Arch          string
	Hidden        int
	ContextLength int // longest accepted prompt, in tokens
	// MaxTextBytes is the longest text that can fit in ContextLength
	// tokens (no token is longer than MaxTextBytes/ContextLength bytes):
	// a longer one is refused, or cut when the request truncates,
	// without being tokenized.
	MaxTextBytes int
	// Dimensions lists the accepted Matryoshka sizes; nil means any size
	// from 1 to Hidden.
	Dimensions     []int
	MultivectorDim int // 0 when no projector is loaded
	Tasks          []string
	Modalities     []string
	MinPixels      int
	MaxPixels      int
	// RandomWeights marks a synthetic demonstration model.
	RandomWeights bool
	// Recipe names the model family's rules (package recipe).
	Recipe string
	// Instruction reports that requests may give an instruction
	// (Request.Instruction) and no task.
	Instruction bool
	// Reranker reports a model that scores (query, document) pairs
	// (Engine.Rerank) and makes no embeddings.
	Reranker bool
}

// Codes of InputError, stable for API clients.
const (
	CodeInvalid       = "invalid_value"
	CodeEmpty         = "empty_input"
	CodeTooLong       = "context_length_exceeded"
	CodeImageTooLarge = "image_too_large"
	CodeBadImage      = "invalid_image"
	CodeUnsupported   = "unsupported"
)

// InputError reports a request the caller must fix; Param names the
// offending field ("task", "dimensions", "input[2]", "input[1].content[0]").
// Every other error of Embed is a failure of the engine itself.
type InputError struct {
	Param string
	Code  string
	Err   error
}

func (e *InputError) Error() string {
	if e.Param == "" {
		return e.Err.Error()
	}
	return e.Param + ": " + e.Err.Error()
}

func (e *InputError) Unwrap() error { return e.Err }

// TooLarge reports whether the input was refused for its size (an image
// over the decoder's limits), which HTTP maps to 413.
func (e *InputError) TooLarge() bool { return e.Code == CodeImageTooLarge }

func invalid(param, code, format string, args ...any) *InputError {
	return &InputError{Param: param, Code: code, Err: fmt.Errorf(format, args...)}
}

// AsInputError returns the InputError in err's chain, if any.
func AsInputError(err error) (*InputError, bool) {
	var ie *InputError
	ok := errors.As(err, &ie)
	return ie, ok
}
