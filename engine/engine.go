// Package engine turns embedding requests into model calls: it validates a
// request, preprocesses its images, builds the model's prompts, runs the
// vision encoder once for all images of the request and the language model
// once per input, and pools the hidden states into embeddings.
//
// Rules (jina-embeddings-v4, see the project's DECISIONS):
//   - Prompts: text-only inputs get the task prefix ("Query: "/"Passage: ");
//     image-only inputs the reference image prompt; interleaved inputs the
//     task prefix and the parts in order.
//   - An input with a Template (expert mode) uses it verbatim, each
//     <|vision_start|><|image_pad|><|vision_end|> standing for the next
//     image part, and pools like an image input when it has images.
//   - Pooling is decided by the input's structure, never by scanning ids:
//     image-only inputs mean-pool from the first <|vision_start|> to the
//     last <|vision_end|> inclusive; inputs with text mean-pool all tokens.
//   - Default task: retrieval, with the query prompt for text-only inputs and
//     the passage prompt for inputs with images. An adapter name alone
//     ("retrieval", "code") picks its side the same way.
//   - Dimensions: a model 2048 wide (jina-embeddings-v4) accepts its trained
//     Matryoshka sizes 128, 256, 512, 1024, 2048; other models accept any
//     size from 1 to their width. Truncated vectors are re-normalized.
//   - Prompts longer than the limit (the model's context length unless
//     Config.MaxTokens lowers it) are refused before any pixel is decoded:
//     image token counts come from the image headers.
package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/qwenvl"
	"github.com/vembed/vembed/tokenizer"
)

// Config says which model files to load and how to limit requests.
type Config struct {
	Model  string // LM GGUF
	MMProj string // vision tower GGUF; empty for a text-only engine
	// MVProj is the multi-vector projector GGUF. When empty the LM GGUF is
	// searched for the projector tensors; without them multi-vector requests
	// are refused.
	MVProj string
	// Name is reported to clients; default: the LM's general.name, else its
	// file name.
	Name string
	// MaxTokens caps the prompt length; 0 means the model's context length.
	MaxTokens int
	// MaxPixels lowers the model's image budget (resized pixels per image)
	// for every request; 0 keeps the model's.
	MaxPixels int
	// MaxImages caps the images of one request (default 32): all of them go
	// through the vision encoder in one pass, so this bounds its memory.
	MaxImages int
	// Decode bounds image files and dimensions (zero: imageproc defaults).
	Decode imageproc.DecodeOptions
	// Tokenizer options (NFC normalization etc.).
	Tokenizer tokenizer.Options
	// RandomWeights labels a synthetic demonstration model.
	RandomWeights bool
}

const defaultMaxImages = 32

// jinaDims are jina-embeddings-v4's trained Matryoshka sizes.
var jinaDims = []int{128, 256, 512, 1024, 2048}

var taskNames = []string{"retrieval.query", "retrieval.passage", "text-matching", "code.query", "code.passage"}

// Engine embeds requests with one loaded model. Its methods are safe for
// concurrent use.
type Engine struct {
	cfg    Config
	lmFile *gguf.File
	model  *qwenvl.Model
	tok    *tokenizer.Tokenizer
	mv     *heads.MultiVector
	img    imageproc.Config
	info   Info
	exec   *executor
}

// New loads the model, its tokenizer (from the LM GGUF), the image
// preprocessing configuration (from the model's metadata) and the
// multi-vector projector when there is one.
func New(cfg Config) (*Engine, error) {
	if cfg.MaxImages <= 0 {
		cfg.MaxImages = defaultMaxImages
	}
	model, err := qwenvl.Load(cfg.Model, cfg.MMProj)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{cfg: cfg, model: model}
	if err := e.init(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) init() error {
	cfg := e.cfg
	f, err := gguf.Open(cfg.Model)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.lmFile = f
	if e.tok, err = tokenizer.FromGGUF(f, cfg.Tokenizer); err != nil {
		return fmt.Errorf("engine: tokenizer of %s: %w", cfg.Model, err)
	}
	switch {
	case cfg.MVProj != "":
		if e.mv, err = heads.LoadMultiVector(cfg.MVProj); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	case heads.HasMultiVector(f):
		if e.mv, err = heads.MultiVectorFrom(f); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	mi := e.model.Info()
	if e.mv != nil && e.mv.InputDim != mi.Hidden {
		return fmt.Errorf("engine: multi-vector projector takes %d inputs, the model is %d wide", e.mv.InputDim, mi.Hidden)
	}
	e.img = imageConfig(mi)
	if cfg.MaxPixels > 0 && cfg.MaxPixels < e.img.MaxPixels {
		if f := e.img.Factor(); cfg.MaxPixels < f*f {
			return fmt.Errorf("engine: max pixels %d is below one merged patch (%d pixels)", cfg.MaxPixels, f*f)
		}
		e.img.MaxPixels = cfg.MaxPixels
		e.img.MinPixels = min(e.img.MinPixels, e.img.MaxPixels)
	}
	e.info = Info{
		Name:          cfg.Name,
		Arch:          mi.Arch,
		Hidden:        mi.Hidden,
		ContextLength: mi.ContextLength,
		Tasks:         taskNames,
		Modalities:    []string{"text"},
		RandomWeights: cfg.RandomWeights,
	}
	if cfg.MaxTokens > 0 && (cfg.MaxTokens < mi.ContextLength || mi.ContextLength <= 0) {
		e.info.ContextLength = cfg.MaxTokens
	}
	if e.info.ContextLength <= 0 {
		return fmt.Errorf("engine: %s declares no context length; set a token limit", cfg.Model)
	}
	if mi.HasVision {
		e.info.Modalities = append(e.info.Modalities, "image")
		e.info.MinPixels, e.info.MaxPixels = e.img.MinPixels, e.img.MaxPixels
	}
	if mi.Hidden == 2048 {
		e.info.Dimensions = jinaDims
	}
	if e.mv != nil {
		e.info.MultivectorDim = e.mv.OutputDim
	}
	if e.info.Name == "" {
		e.info.Name = modelName(f, cfg.Model)
	}
	e.exec = newExecutor(e.model)
	return nil
}

// imageConfig is the preprocessing the model's metadata describes, with
// jina-embeddings-v4's values for whatever the metadata leaves out.
func imageConfig(mi qwenvl.Info) imageproc.Config {
	c := imageproc.JinaV4Config()
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

func modelName(f *gguf.File, path string) string {
	if s, err := f.String("general.name"); err == nil && s != "" {
		return s
	}
	return strings.TrimSuffix(filepath.Base(path), ".gguf")
}

// Info describes the loaded model and what requests it accepts.
func (e *Engine) Info() Info { return e.info }

// Close releases the model files.
func (e *Engine) Close() error {
	var errs []error
	if e.mv != nil {
		errs = append(errs, e.mv.Close())
	}
	if e.lmFile != nil {
		errs = append(errs, e.lmFile.Close())
	}
	if e.model != nil {
		errs = append(errs, e.model.Close())
	}
	return errors.Join(errs...)
}

// options are a request's validated options.
type options struct {
	task       tokenizer.Task // fixed task, or
	adapter    string         // an adapter whose side follows the input
	dims       int
	img        imageproc.Config
	multi      bool
	perSpan    bool
	normalized bool
}

func (e *Engine) options(req *Request) (options, error) {
	o := options{dims: req.Dimensions, img: e.img, multi: req.Multivector, perSpan: req.PerSpan, normalized: !req.Unnormalized}
	switch req.Task {
	case "", "retrieval":
		o.adapter = "retrieval"
	case "code":
		o.adapter = "code"
	default:
		t, err := tokenizer.ParseTask(req.Task)
		if err != nil {
			return o, invalid("task", CodeInvalid, "unknown task %q (want one of %s)", req.Task, strings.Join(taskNames, ", "))
		}
		o.task = t
	}
	if o.multi && e.mv == nil {
		return o, invalid("return_multivector", CodeUnsupported, "this model has no multi-vector projector")
	}
	if d := req.Dimensions; d != 0 && !o.multi {
		if err := e.checkDims(d); err != nil {
			return o, err
		}
	}
	if req.MaxPixels != 0 {
		if req.MaxPixels > e.img.MaxPixels {
			return o, invalid("max_pixels", CodeInvalid, "max_pixels %d is above the model's limit %d (it may only be lowered)", req.MaxPixels, e.img.MaxPixels)
		}
		if f := e.img.Factor(); req.MaxPixels < f*f {
			return o, invalid("max_pixels", CodeInvalid, "max_pixels %d is below one merged patch (%d pixels)", req.MaxPixels, f*f)
		}
		o.img.MaxPixels = req.MaxPixels
	}
	if req.MinPixels != 0 {
		if req.MinPixels < 0 || req.MinPixels > o.img.MaxPixels {
			return o, invalid("min_pixels", CodeInvalid, "min_pixels %d must be between 1 and max_pixels %d", req.MinPixels, o.img.MaxPixels)
		}
		o.img.MinPixels = req.MinPixels
	}
	if o.img.MinPixels > o.img.MaxPixels {
		o.img.MinPixels = o.img.MaxPixels
	}
	return o, nil
}

func (e *Engine) checkDims(d int) error {
	if e.info.Dimensions == nil {
		if d < 1 || d > e.info.Hidden {
			return invalid("dimensions", CodeInvalid, "dimensions %d out of range 1..%d", d, e.info.Hidden)
		}
		return nil
	}
	for _, ok := range e.info.Dimensions {
		if d == ok {
			return nil
		}
	}
	return invalid("dimensions", CodeInvalid, "dimensions %d not supported (the model was trained for %v)", d, e.info.Dimensions)
}

// job is one input on its way through the pipeline.
type job struct {
	param  string
	hasImg bool
	prompt *tokenizer.Prompt
	images []int // indices into the request's image list
}

// Embed computes the embeddings of req. Errors the caller must fix are
// *InputError; the context is checked between stages and between packed
// decoder passes.
func (e *Engine) Embed(ctx context.Context, req Request) (*Response, error) {
	o, err := e.options(&req)
	if err != nil {
		return nil, err
	}
	if len(req.Inputs) == 0 {
		return nil, invalid("input", CodeEmpty, "no inputs")
	}
	jobs := make([]job, len(req.Inputs))
	var imgs []imageRef
	for i, in := range req.Inputs {
		j, refs, err := e.plan(i, in, o, len(imgs))
		if err != nil {
			return nil, err
		}
		jobs[i] = j
		imgs = append(imgs, refs...)
		if len(imgs) > e.cfg.MaxImages {
			return nil, invalid("input", CodeInvalid, "too many images: more than %d in one request", e.cfg.MaxImages)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inputs, err := e.preprocess(ctx, imgs, o, req.Trace)
	if err != nil {
		return nil, err
	}
	rows, err := e.exec.encode(ctx, inputs, e.traceVision(req.Trace, imgs))
	if err != nil {
		return nil, err
	}
	resp := &Response{Embeddings: make([]Embedding, len(jobs))}
	for lo, hi := range batches(jobs) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seqs := make([]qwenvl.Sequence, hi-lo)
		for k := range seqs {
			if seqs[k], err = sequence(&jobs[lo+k], imgs, inputs, rows); err != nil {
				return nil, err
			}
		}
		hidden, err := e.exec.forwardBatch(ctx, seqs)
		if err != nil {
			return nil, err
		}
		for k, h := range hidden {
			i := lo + k
			emb, err := e.pool(i, &jobs[i], h, o, req.Trace)
			if err != nil {
				return nil, err
			}
			resp.Embeddings[i] = emb
			resp.PromptTokens += emb.Tokens
		}
	}
	return resp, nil
}

// batchTokens bounds the tokens of one packed decoder pass. Packing a
// request's inputs raises the row count of every matrix product, which is
// what makes them efficient on CPU, while the pass's activations (a few
// hidden-size rows per token, plus one attention score row per token of
// the longest sequence) stay around what one context-length input needs.
// An input longer than the budget runs alone.
const batchTokens = 8192

// batches splits jobs, in order, into runs [lo, hi) of at most
// max(longest input, batchTokens) prompt tokens, filled greedily.
func batches(jobs []job) func(yield func(lo, hi int) bool) {
	return func(yield func(lo, hi int) bool) {
		for lo := 0; lo < len(jobs); {
			hi, n := lo+1, len(jobs[lo].prompt.IDs)
			for hi < len(jobs) && n+len(jobs[hi].prompt.IDs) <= batchTokens {
				n += len(jobs[hi].prompt.IDs)
				hi++
			}
			if !yield(lo, hi) {
				return
			}
			lo = hi
		}
	}
}

// imageRef is one image of a request, in request order.
type imageRef struct {
	param  string
	input  int // input index
	index  int // image index within the input
	data   []byte
	tokens int // merged tokens, from the header
}

// plan validates an input and builds its prompt from the image headers, so
// that an over-long input is refused before any pixel is decoded.
func (e *Engine) plan(i int, in Input, o options, firstImage int) (job, []imageRef, error) {
	j := job{param: fmt.Sprintf("input[%d]", i)}
	if len(in.Parts) == 0 && in.Template == "" {
		return j, nil, invalid(j.param, CodeEmpty, "input has no parts")
	}
	var refs []imageRef
	tparts := make([]tokenizer.Part, len(in.Parts))
	for k, p := range in.Parts {
		param := j.param
		if len(in.Parts) > 1 || in.Template != "" {
			param = fmt.Sprintf("%s.content[%d]", j.param, k)
		}
		if !p.IsImage() {
			if in.Template != "" {
				return j, nil, invalid(param, CodeInvalid, "an input with a template takes its text from the template; its parts must be images")
			}
			if err := checkText(param, p.Text); err != nil {
				return j, nil, err
			}
			tparts[k] = tokenizer.Part{Text: p.Text}
			continue
		}
		if !e.model.Info().HasVision {
			return j, nil, invalid(param, CodeUnsupported, "this model has no vision encoder; send text")
		}
		if len(p.Image) == 0 {
			return j, nil, invalid(param, CodeEmpty, "empty image")
		}
		n, err := e.imageTokens(p.Image, o)
		if err != nil {
			return j, nil, imageError(param, err)
		}
		j.hasImg = true
		j.images = append(j.images, firstImage+len(refs))
		refs = append(refs, imageRef{param: param, input: i, index: len(refs), data: p.Image, tokens: n})
		tparts[k] = tokenizer.Part{ImageTokens: n}
	}
	prompt, err := e.prompt(in.Template, tparts, j.hasImg, o, j.param)
	if err != nil {
		return j, nil, err
	}
	if n := len(prompt.IDs); n > e.info.ContextLength {
		return j, nil, invalid(j.param, CodeTooLong, "input is %d tokens, over the limit of %d tokens (truncation is not supported)", n, e.info.ContextLength)
	}
	if len(prompt.Images) != len(refs) {
		return j, nil, fmt.Errorf("engine: prompt has %d image spans for %d images", len(prompt.Images), len(refs))
	}
	j.prompt = prompt
	return j, refs, nil
}

func checkText(param, text string) error {
	if text == "" {
		return invalid(param, CodeEmpty, "empty text")
	}
	if !utf8.ValidString(text) {
		return invalid(param, CodeInvalid, "text is not valid UTF-8")
	}
	return nil
}

// prompt builds the jina-v4 prompt of the parts, or fills the template of a
// raw input with the image token counts.
func (e *Engine) prompt(template string, parts []tokenizer.Part, hasImg bool, o options, param string) (*tokenizer.Prompt, error) {
	var (
		p   *tokenizer.Prompt
		err error
	)
	if template != "" {
		if err := checkText(param+".template", template); err != nil {
			return nil, err
		}
		counts := make([]int, len(parts))
		for k, tp := range parts {
			counts[k] = tp.ImageTokens
		}
		if p, err = e.tok.RawPrompt(template, counts); err != nil {
			return nil, &InputError{Param: param + ".template", Code: CodeInvalid, Err: err}
		}
		return p, nil
	}
	task := o.task
	if o.adapter != "" {
		// Text alone is a query; a document with images is a passage.
		side := ".query"
		if hasImg {
			side = ".passage"
		}
		task = tokenizer.Task(o.adapter + side)
	}
	if p, err = e.tok.JinaV4Prompt(task, parts); err != nil {
		return nil, &InputError{Param: param, Code: CodeInvalid, Err: err}
	}
	return p, nil
}

// imageTokens is the number of placeholder tokens an image becomes, from
// its header alone.
func (e *Engine) imageTokens(data []byte, o options) (int, error) {
	_, w, h, err := imageproc.DecodeConfig(data)
	if err != nil {
		return 0, err
	}
	rw, rh, err := o.img.TargetSize(w, h)
	if err != nil {
		return 0, err
	}
	f := o.img.Factor()
	return (rw / f) * (rh / f), nil
}

func imageError(param string, err error) *InputError {
	code := CodeBadImage
	if errors.Is(err, imageproc.ErrTooLarge) {
		code = CodeImageTooLarge
	}
	return &InputError{Param: param, Code: code, Err: err}
}

// preprocess decodes and patches every image of the request.
func (e *Engine) preprocess(ctx context.Context, imgs []imageRef, o options, tr Tracer) ([]qwenvl.ImageInput, error) {
	out := make([]qwenvl.ImageInput, len(imgs))
	for k, im := range imgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := imageproc.Preprocess(im.data, o.img, e.cfg.Decode)
		if err != nil {
			return nil, imageError(im.param, err)
		}
		if n := p.MergedTokens(); n != im.tokens {
			return nil, invalid(im.param, CodeBadImage, "image data disagrees with its header (%d tokens, header says %d)", n, im.tokens)
		}
		out[k] = qwenvl.ImageInput{Patches: p.Data, GridT: p.GridT, GridH: p.GridH, GridW: p.GridW}
		if tr != nil {
			rows := p.GridT * p.GridH * p.GridW
			if err := tr.Tensor(imageName(im, "patches"), p.Data, rows, len(p.Data)/max(rows, 1)); err != nil {
				return nil, fmt.Errorf("engine: trace: %w", err)
			}
		}
	}
	return out, nil
}

func imageName(im imageRef, what string) string {
	return fmt.Sprintf("input%d.image%d.%s", im.input, im.index, what)
}

// visionTrace forwards the vision encoder's intermediates to a Tracer.
type visionTrace func(vitOut, mergerOut [][]float32) error

func (e *Engine) traceVision(tr Tracer, imgs []imageRef) visionTrace {
	if tr == nil {
		return nil
	}
	mi := e.model.Info()
	return func(vitOut, mergerOut [][]float32) error {
		for k, im := range imgs {
			for _, t := range []struct {
				name  string
				data  [][]float32
				width int
			}{{"vit_out", vitOut, mi.VisionWidth}, {"merger_out", mergerOut, mi.Hidden}} {
				if k >= len(t.data) || t.width <= 0 {
					continue
				}
				if err := tr.Tensor(imageName(im, t.name), t.data[k], len(t.data[k])/t.width, t.width); err != nil {
					return fmt.Errorf("engine: trace: %w", err)
				}
			}
		}
		return nil
	}
}

// sequence places an input's image rows at its placeholders.
func sequence(j *job, imgs []imageRef, inputs []qwenvl.ImageInput, rows [][]float32) (qwenvl.Sequence, error) {
	p := j.prompt
	embs := make([]qwenvl.ImageEmbedding, len(j.images))
	for k, gi := range j.images {
		span := p.Images[k]
		in := inputs[gi]
		if span.End-span.First != imgs[gi].tokens {
			return qwenvl.Sequence{}, fmt.Errorf("engine: %s: prompt holds %d placeholders for %d image rows", j.param, span.End-span.First, imgs[gi].tokens)
		}
		embs[k] = qwenvl.ImageEmbedding{Rows: rows[gi], First: span.First, GridT: in.GridT, GridH: in.GridH, GridW: in.GridW}
	}
	return qwenvl.Sequence{IDs: p.IDs, Images: embs}, nil
}

// pool turns input i's hidden states into its embedding.
func (e *Engine) pool(i int, j *job, hidden []float32, o options, tr Tracer) (Embedding, error) {
	p := j.prompt
	var err error
	n, dim := len(p.IDs), e.info.Hidden
	if len(hidden) != n*dim {
		return Embedding{}, fmt.Errorf("engine: %s: %d hidden values for %d tokens of %d", j.param, len(hidden), n, dim)
	}
	if tr != nil {
		if err := tr.Tensor(fmt.Sprintf("input%d.hidden_states", i), hidden, n, dim); err != nil {
			return Embedding{}, fmt.Errorf("engine: trace: %w", err)
		}
	}
	emb := Embedding{Tokens: n}
	if o.multi {
		emb.Multi = e.mv.Project(hidden, n)
		return emb, nil
	}
	lo, hi := 0, n
	if p.Kind == tokenizer.ImageOnly && len(p.Images) > 0 {
		lo, hi = p.Images[0].VisionStart, p.Images[len(p.Images)-1].VisionEnd+1
	}
	if emb.Vector, err = o.finish(heads.MeanPool(hidden, dim, lo, hi)); err != nil {
		return Embedding{}, err
	}
	if o.perSpan && j.hasImg {
		for _, s := range p.Images {
			v, err := o.finish(heads.MeanPool(hidden, dim, s.VisionStart, s.VisionEnd+1))
			if err != nil {
				return Embedding{}, err
			}
			emb.Spans = append(emb.Spans, v)
		}
	}
	return emb, nil
}

// finish normalizes and truncates a pooled vector as the request asks.
func (o options) finish(v []float32) ([]float32, error) {
	if o.normalized {
		heads.Normalize(v)
	}
	if o.dims == 0 || o.dims >= len(v) {
		return v, nil
	}
	if !o.normalized {
		return v[:o.dims:o.dims], nil
	}
	return heads.Truncate(v, o.dims)
}
