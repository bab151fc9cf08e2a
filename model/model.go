// Package model is the contract between the serving engine and a model
// family (package model/qwenvl for Qwen2-VL and Qwen2.5-VL, and the
// others beside it): what a runner needs to encode images a few layers at a
// time and to run the language model over chunks of many sequences in one
// pass. Rules of prompts, pooling and preprocessing live in package
// recipe; a model only computes.
package model

// Info describes a loaded model for the layers above (preprocessing limits,
// output width).
type Info struct {
	Arch      string // LM architecture, e.g. "qwen2vl"
	Projector string // e.g. "qwen2.5vl_merger"; "" without vision

	Hidden        int // LM hidden width = embedding width
	Layers        int
	ContextLength int
	Vocab         int
	VisionWidth   int
	VisionLayers  int

	PatchSize, MergeSize, TemporalPatchSize int
	ImageMean, ImageStd                     [3]float32
	// MinPixels and MaxPixels are the image budget the vision file states
	// (clip.vision.image_min_pixels / image_max_pixels), 0 when it states
	// none: the family's recipe has the defaults.
	MinPixels, MaxPixels int

	HasVision bool

	// Bidirectional is set for a language model whose tokens attend to
	// every token of their sequence (no causal mask): such a sequence must
	// run in one chunk, since no cache of earlier chunks can stand for
	// keys that come later. OutputNorm is false for a model whose hidden
	// states are read before the final norm.
	Bidirectional bool
	OutputNorm    bool

	// Cost estimates for scheduling: multiply-adds ×2 of the weight
	// products per language-model token, and per vision patch and stage
	// (patch embedding, blocks and merger averaged over the pass's
	// stages). Attention is not counted.
	FlopsPerToken      int64
	FlopsPerPatchStage int64
	PatchValues        int // values per patch row of ImageInput
}

// ImageInput is one preprocessed image: GridT·GridH·GridW patch rows in
// the order the model's vision tower takes them (transformers'
// pixel_values order), grid sides in patches.
type ImageInput struct {
	Patches             []float32
	GridT, GridH, GridW int
}

// EncodedImage is what the vision tower makes of one image: the merger
// rows that replace its placeholder tokens, in raster order of the merged
// grid, Hidden values each, and for models that feed vision features into
// several decoder layers (DeepStack) one more set of rows per tap.
type EncodedImage struct {
	Rows []float32
	Deep [][]float32
}

// Bytes is the memory the image's rows hold, for cache accounting.
func (e EncodedImage) Bytes() int64 {
	n := len(e.Rows)
	for _, d := range e.Deep {
		n += len(d)
	}
	return int64(n) * 4
}

// ImageEmbedding places one encoded image into a token sequence.
type ImageEmbedding struct {
	// Rows and Deep are the image's EncodedImage.
	Rows []float32
	Deep [][]float32
	// First is the index in the ids of the image's first placeholder; the
	// following rows-many ids must all be the placeholder token.
	First int
	// GridT, GridH, GridW are the image's grid in patches (not merged units).
	GridT, GridH, GridW int
}

// GGUF keys in vembed's namespace for what llama.cpp's keys cannot say of a
// decoder; a file without them is causal with its output norm applied.
const (
	// KeyCausal (BOOL, default true): false = no causal mask; every token
	// of one input attends to every token of that input.
	KeyCausal = "vembed.attention.causal"
	// KeyOutputNorm (BOOL, default true): false = the hidden states are
	// the last decoder layer's output, output_norm.weight not applied.
	KeyOutputNorm = "vembed.output_norm"
)

// Sequence is one input of the language model: token ids and the images
// placed in them.
type Sequence struct {
	IDs    []int32
	Images []ImageEmbedding
}

// VisionPass encodes a set of images in one packed pass that runs a few
// stages (the patch embedding, each block, the merger) at a time, so that
// a large batch of images never holds the model for long. Every image's
// result equals encoding it alone.
type VisionPass interface {
	// Stages is the number of steps of a whole pass.
	Stages() int
	// Done reports whether every stage has run.
	Done() bool
	// Step runs up to n more stages (at least one).
	Step(n int) error
	// Patches is the number of patch rows of the pass (its cost per stage).
	Patches() int
	// Result returns per image its encoding, once Done. With trace set at
	// creation, VitOut returns the tower's output before the merger.
	Result() []EncodedImage
	VitOut() [][]float32
}

// State is one sequence on its way through the language model: its
// positions, and the keys and values of the tokens already computed when
// the sequence is cut into chunks.
type State interface {
	Len() int  // tokens of the sequence
	Done() int // tokens computed so far
	// Release frees the cached keys and values early (a cancelled request).
	Release()
}

// Chunk asks for the next N tokens of a sequence.
type Chunk struct {
	State State
	N     int
}

// Model is one loaded model as the engine's runner drives it. Methods are
// called from one goroutine at a time, except Info.
type Model interface {
	Info() Info
	// NewVisionPass checks the images and prepares a pass over them; trace
	// keeps the tower's output for VitOut.
	NewVisionPass(imgs []ImageInput, trace bool) (VisionPass, error)
	// NewState checks a sequence (ids, image placement) and computes its
	// positions. No model work is done yet.
	NewState(seq Sequence) (State, error)
	// ForwardChunks runs one language-model pass over chunks of several
	// sequences and returns per chunk the final hidden states (after the
	// output norm, unless Info.OutputNorm is false) of its N tokens,
	// N×Hidden values. Each sequence advances by its chunk's N; a row's
	// values are bit for bit what one pass over the whole sequence alone
	// gives. With Info.Bidirectional every chunk must be a whole sequence.
	ForwardChunks(chunks []Chunk) ([][]float32, error)
	Close() error
}
