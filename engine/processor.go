package engine

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"runtime"
	"sync"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sync/semaphore"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/tokenizer"
)

// The processor is the CPU work beside the model: it validates a request,
// tokenizes it through the recipe's prompts, decodes and patches images in
// a bounded pool under a byte budget, computes content keys and looks the
// caches up, and hands the scheduler a self-contained prepared request.
// It runs on the caller's goroutine (plus the image pool), never inside a
// model step.

// prepared is a request after processing.
type prepared struct {
	o       options
	inputs  []*input
	results []*result // per input: from the embedding cache, or computed
	tokens  int       // prompt tokens of all inputs
	budget  int64     // image budget held for patches still to encode
}

// input is one input of a request on its way to an embedding.
type input struct {
	index  int
	param  string
	prompt *tokenizer.Prompt
	pool   recipe.Pooling
	keep   [][2]int // the token ranges whose rows a multi-vector output holds (nil: all)
	images []*imageItem
	key    Key // embedding cache key
}

// imageItem is one image of an input.
type imageItem struct {
	param      string
	data       []byte
	pixels     *image.RGBA // instead of data: an opaque decoded image
	w, h       int         // from the header
	tokens     int         // merged tokens, from the header
	cost       int64
	content    Key
	grid       [3]int
	patches    []float32          // set when it must be encoded
	enc        model.EncodedImage // set when the encoder cache had it
	cached     bool               // enc came from the encoder cache (pinned)
	budgetHeld int64
}

// imageMeta is what the image cache keeps per file: enough to find the
// encoder cache entry without decoding.
type imageMeta struct {
	content Key
	grid    [3]int
	tokens  int
}

type processor struct {
	e       *Engine
	workers chan struct{}
	budget  *semaphore.Weighted
	limit   int64
}

func newProcessor(e *Engine) *processor {
	w := e.cfg.PreprocessWorkers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return &processor{e: e, workers: make(chan struct{}, w), budget: semaphore.NewWeighted(e.cfg.ImageBudgetBytes), limit: e.cfg.ImageBudgetBytes}
}

// imageCost is the memory an image takes from decoding to encoding: the
// decoder's output (up to 8 bytes a pixel for 16-bit RGBA sources) beside
// its RGB conversion (3 more), the resized RGB and its float32 patches
// (3·T values per pixel). Measured: one 16384x4096 16-bit PNG peaks at 744
// MiB of RSS, 11 bytes a pixel.
func imageCost(w, h, rw, rh, temporal int) int64 {
	return int64(w)*int64(h)*11 + int64(rw)*int64(rh)*int64(3+12*temporal)
}

// prepare validates and processes req. On error nothing is held.
func (p *processor) prepare(ctx context.Context, req *Request, o options) (*prepared, error) {
	e := p.e
	pr := &prepared{o: o, inputs: make([]*input, len(req.Inputs)), results: make([]*result, len(req.Inputs))}
	nImages := 0
	for i, in := range req.Inputs {
		cut := cutNone
		switch {
		case req.Truncate && req.TruncateStart:
			cut = cutStart
		case req.Truncate:
			cut = cutEnd
		}
		it, err := p.plan(i, in, o, cut)
		if err != nil {
			return nil, err
		}
		pr.inputs[i] = it
		pr.tokens += len(it.prompt.IDs)
		if nImages += len(it.images); nImages > e.cfg.MaxImages {
			return nil, invalid("input", CodeInvalid, "too many images: more than %d in one request", e.cfg.MaxImages)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.images(ctx, pr, req.Trace); err != nil {
		pr.release(e)
		return nil, err
	}
	for _, it := range pr.inputs {
		it.key = e.embeddingKey(it, o)
		if req.Trace != nil {
			continue
		}
		if r, ok := e.lookupEmbedding(ctx, it.key); ok {
			pr.results[it.index] = r
			// Its images are not needed any more.
			for _, im := range it.images {
				pr.dropImage(e, im)
			}
		}
	}
	if req.Trace == nil {
		e.storedEncodings(ctx, pr)
		if e.remote != nil {
			p.remoteEncode(ctx, pr)
		}
	}
	return pr, nil
}

// dropImage releases what an image holds.
func (pr *prepared) dropImage(e *Engine, im *imageItem) {
	if im.cached {
		e.encoderCache.unpin(im.content)
		im.cached = false
	}
	e.freeBudget(im)
	im.patches = nil
}

// release drops everything the request still holds.
func (pr *prepared) release(e *Engine) {
	for _, it := range pr.inputs {
		if it == nil {
			continue
		}
		for _, im := range it.images {
			pr.dropImage(e, im)
		}
	}
}

// cutMode is how an input over the token limit is treated.
type cutMode int

const (
	cutNone  cutMode = iota // refused
	cutEnd                  // its prompt's end is dropped
	cutStart                // its text's first tokens are dropped
)

// plan validates an input and builds its prompt from the image headers, so
// that an over-long input is refused before any pixel is decoded.
func (p *processor) plan(i int, in Input, o options, cut cutMode) (*input, error) {
	e := p.e
	it := &input{index: i, param: fmt.Sprintf("input[%d]", i)}
	if len(in.Parts) == 0 && in.Template == "" {
		return nil, invalid(it.param, CodeEmpty, "input has no parts")
	}
	limit := o.limit
	tparts := make([]tokenizer.Part, len(in.Parts))
	textOnly := true
	for k, part := range in.Parts {
		param := it.param
		if len(in.Parts) > 1 || in.Template != "" {
			param = fmt.Sprintf("%s.content[%d]", it.param, k)
		}
		if !part.IsImage() {
			if in.Template != "" {
				return nil, invalid(param, CodeInvalid, "an input with a template takes its text from the template; its parts must be images")
			}
			textCut := cutNone
			if len(in.Parts) == 1 {
				textCut = cut
			}
			text, err := e.checkText(param, part.Text, limit, textCut)
			if err != nil {
				return nil, err
			}
			tparts[k] = tokenizer.Part{Text: text, Plain: part.Plain}
			continue
		}
		textOnly = false
		if !e.mi.HasVision {
			return nil, invalid(param, CodeUnsupported, "this model has no vision encoder; send text")
		}
		var im *imageItem
		var err error
		switch {
		case part.Pixels != nil:
			im, err = e.pixelsHeader(param, part.Pixels, o)
		case len(part.Image) == 0:
			return nil, invalid(param, CodeEmpty, "empty image")
		default:
			im, err = e.imageHeader(param, part.Image, o)
		}
		if err != nil {
			return nil, err
		}
		it.images = append(it.images, im)
		tparts[k] = tokenizer.Part{ImageTokens: im.tokens}
	}
	prompt, err := e.prompt(in, tparts, o, it.param)
	if err != nil {
		return nil, err
	}
	if n := len(prompt.IDs); n > limit {
		switch {
		case cut == cutNone || !textOnly || in.Template != "" || cut == cutStart && len(in.Parts) != 1:
			why := "truncation applies to text-only inputs"
			switch {
			case cut == cutNone:
				why = "set truncate to cut it"
			case cut == cutStart && textOnly && in.Template == "":
				why = "truncation from the start applies to inputs of one text"
			}
			return nil, invalid(it.param, CodeTooLong, "input is %d tokens, over the limit of %d tokens (%s%s)", n, limit, why, e.limitNote)
		case cut == cutStart:
			if prompt, err = e.cutTextStart(in, tparts, o, it.param, prompt, limit); err != nil {
				return nil, err
			}
		default:
			prompt.IDs = prompt.IDs[:limit:limit]
		}
	}
	if len(prompt.Images) != len(it.images) {
		return nil, fmt.Errorf("engine: prompt has %d image spans for %d images", len(prompt.Images), len(it.images))
	}
	it.prompt = prompt
	it.pool = e.recipe.Pooling(prompt)
	if k, ok := e.recipe.(recipe.RowKeeper); ok {
		it.keep = k.KeepRows(prompt)
	}
	return it, nil
}

// checkText validates a text part. Text that cannot fit the limit is
// refused (or, to truncate, cut) by its byte length before it is
// tokenized: no token is longer than maxTokenBytes, so a text of more than
// limit·maxTokenBytes bytes has more than limit tokens, and tokenizing it
// would only waste time and memory.
func (e *Engine) checkText(param, text string, limit int, cut cutMode) (string, error) {
	if text == "" {
		return "", invalid(param, CodeEmpty, "empty text")
	}
	if !utf8.ValidString(text) {
		return "", invalid(param, CodeInvalid, "text is not valid UTF-8")
	}
	if max := limit * e.maxTokenBytes; len(text) > max {
		switch cut {
		case cutNone:
			return "", invalid(param, CodeTooLong, "text of %d bytes is over the limit of %d tokens (at most %d bytes%s)", len(text), limit, max, e.limitNote)
		case cutStart:
			from := len(text) - max
			for from < len(text) && !utf8.RuneStart(text[from]) {
				from++
			}
			text = text[from:]
		default:
			end := max
			for end > 0 && !utf8.RuneStart(text[end]) {
				end--
			}
			text = text[:end]
		}
	}
	return text, nil
}

// maxCutRounds bounds the prompts cutTextStart builds: tokens merge
// across the joint of the prompt and the text's new start only by a few,
// so the fewest tokens to drop are found in a few rounds.
const maxCutRounds = 8

// cutTextStart returns the prompt of a one-text input whose prompt is over
// limit with the fewest first tokens of its text dropped that make it fit,
// so that the recipe's prompt parts before and after the text stay whole.
// The text's tokens are dropped, decoded and the prompt built again: the
// text's tokens alone are not exactly its tokens inside the prompt (a word
// can merge with the space ending a prefix).
func (e *Engine) cutTextStart(in Input, parts []tokenizer.Part, o options, param string, prompt *tokenizer.Prompt, limit int) (*tokenizer.Prompt, error) {
	n := len(prompt.IDs)
	ids := e.tok.Encode(parts[0].Text, !parts[0].Plain)
	// build returns the prompt with the first drop tokens of the text
	// dropped, or nil when nothing of the text is left.
	build := func(drop int) (*tokenizer.Prompt, error) {
		if drop >= len(ids) {
			return nil, nil
		}
		text, err := e.tok.Decode(ids[drop:])
		if err != nil {
			return nil, fmt.Errorf("engine: cutting %s: %w", param, err)
		}
		// The first kept token may hold the tail of a character.
		for len(text) > 0 && !utf8.RuneStart(text[0]) {
			text = text[1:]
		}
		if text == "" {
			return nil, nil
		}
		return e.prompt(in, []tokenizer.Part{{Text: text, Plain: parts[0].Plain}}, o, param)
	}
	// Forward: drop what the prompt is over by until it fits.
	var fit *tokenizer.Prompt
	drop, rounds := n-limit, 0
	for ; rounds < maxCutRounds; rounds++ {
		p, err := build(drop)
		if err != nil {
			return nil, err
		}
		if p == nil {
			break
		}
		if len(p.IDs) <= limit {
			fit = p
			break
		}
		drop += len(p.IDs) - limit
	}
	if fit == nil {
		return nil, invalid(param, CodeTooLong, "input is %d tokens, over the limit of %d tokens, and dropping the start of its text does not make it fit (the prompt around the text takes about %d tokens%s)",
			n, limit, max(n-len(ids), 0), e.limitNote)
	}
	// Back: the estimate may have dropped a token more than needed.
	for ; rounds < maxCutRounds && drop > 1; rounds++ {
		p, err := build(drop - 1)
		if err != nil {
			return nil, err
		}
		if p == nil || len(p.IDs) > limit {
			break
		}
		fit, drop = p, drop-1
	}
	return fit, nil
}

// prompt builds the recipe's prompt of the parts, or fills the template of
// a raw input with the image token counts.
func (e *Engine) prompt(in Input, parts []tokenizer.Part, o options, param string) (*tokenizer.Prompt, error) {
	if template := in.Template; template != "" {
		if _, err := e.checkText(param+".template", template, e.info.ContextLength, cutNone); err != nil {
			return nil, err
		}
		counts := make([]int, len(parts))
		for k, tp := range parts {
			counts[k] = tp.ImageTokens
		}
		p, err := e.tok.RawPrompt(template, counts)
		if err != nil {
			return nil, &InputError{Param: param + ".template", Code: CodeInvalid, Err: err}
		}
		return p, nil
	}
	var p *tokenizer.Prompt
	var err error
	if q := in.pairQuery; q > 0 {
		p, err = e.recipe.(recipe.Pairs).PairPrompt(e.tok, o.task, parts[:q], parts[q:])
	} else {
		p, err = e.recipe.Prompt(e.tok, o.task, parts)
	}
	if err != nil {
		return nil, &InputError{Param: param, Code: CodeInvalid, Err: err}
	}
	return p, nil
}

// imageHeader reads an image's size from its header: the number of
// placeholder tokens it becomes and what decoding it will cost.
func (e *Engine) imageHeader(param string, data []byte, o options) (*imageItem, error) {
	_, w, h, err := imageproc.DecodeConfig(data)
	if err != nil {
		return nil, imageError(param, err)
	}
	if err := e.cfg.Decode.Limits.Check(len(data), w, h); err != nil {
		return nil, imageError(param, err)
	}
	im, err := e.sizedImage(param, w, h, o)
	if err != nil {
		return nil, err
	}
	im.data = data
	return im, nil
}

// pixelsHeader is imageHeader for a decoded image: its size, the limits
// of decoded images, and opacity (the alpha channel is dropped).
func (e *Engine) pixelsHeader(param string, img *image.RGBA, o options) (*imageItem, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return nil, invalid(param, CodeEmpty, "empty image")
	}
	if err := e.cfg.Decode.Limits.Check(0, w, h); err != nil {
		return nil, imageError(param, err)
	}
	if !img.Opaque() {
		return nil, invalid(param, CodeBadImage, "decoded pixels must be opaque (alpha 255 everywhere)")
	}
	im, err := e.sizedImage(param, w, h, o)
	if err != nil {
		return nil, err
	}
	im.pixels = img
	return im, nil
}

// sizedImage is the image item of a w x h image: its placeholder tokens
// and its cost under the image budget.
func (e *Engine) sizedImage(param string, w, h int, o options) (*imageItem, error) {
	rw, rh, err := o.img.TargetSize(w, h)
	if err != nil {
		return nil, imageError(param, err)
	}
	f := o.img.Factor()
	im := &imageItem{param: param, w: w, h: h, tokens: (rw / f) * (rh / f), cost: imageCost(w, h, rw, rh, o.img.TemporalPatchSize)}
	if im.cost > e.cfg.ImageBudgetBytes {
		return nil, invalid(param, CodeImageTooLarge, "decoding a %dx%d image needs about %d MiB, over the server's image budget of %d MiB", w, h, im.cost>>20, e.cfg.ImageBudgetBytes>>20)
	}
	return im, nil
}

func imageError(param string, err error) *InputError {
	code := CodeBadImage
	if errors.Is(err, imageproc.ErrTooLarge) {
		code = CodeImageTooLarge
	}
	return &InputError{Param: param, Code: code, Err: err}
}

// images finds every image's content key and encoding, decoding and
// patching those the caches do not know, in the worker pool.
func (p *processor) images(ctx context.Context, pr *prepared, tr Tracer) error {
	e := p.e
	var all []*imageItem
	for _, it := range pr.inputs {
		all = append(all, it.images...)
	}
	if len(all) == 0 {
		return nil
	}
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for k, im := range all {
		bytesKey := im.bytesKey(e.preprocKey(pr.o))
		if tr == nil {
			if meta, ok := e.imageCache.get(bytesKey, false); ok {
				im.content, im.grid = meta.content, meta.grid
				if enc, ok := e.lookupEncoded(ctx, im.content); ok {
					im.enc, im.cached = enc, true
					continue
				}
			}
		}
		select {
		case p.workers <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.workers }()
			errs[k] = p.decode(ctx, im, bytesKey, pr.o, tr != nil)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// bigRelease is the size of a decode buffer whose release is worth a
// garbage collection before another decode may use the budget it held.
const bigRelease = 64 << 20

// shrink lowers an image's hold on the budget to the keep bytes its
// patches still use once decoding is over. The decode buffers are garbage
// by then, but their memory is only reusable after a collection: when they
// were large, one is run first, so that the next decode admitted under the
// budget does not add its own buffers to them in the process's memory.
func (p *processor) shrink(im *imageItem, keep int64) {
	free := im.budgetHeld - keep
	if free <= 0 {
		return
	}
	if free >= bigRelease {
		runtime.GC()
	}
	p.budget.Release(free)
	p.e.inflight.Add(-free)
	im.budgetHeld = keep
}

// decode turns one image into patches under the image budget, and keys it.
func (p *processor) decode(ctx context.Context, im *imageItem, bytesKey Key, o options, trace bool) error {
	e := p.e
	if err := p.budget.Acquire(ctx, im.cost); err != nil {
		return err
	}
	im.budgetHeld = im.cost
	e.inflight.Add(im.cost)
	var pt *imageproc.Patches
	var err error
	if im.pixels != nil {
		pt, err = imageproc.FromImage(rgbOf(im.pixels), o.img)
	} else {
		pt, err = imageproc.Preprocess(im.data, o.img, e.cfg.Decode)
	}
	if err != nil {
		return imageError(im.param, err)
	}
	p.shrink(im, int64(len(pt.Data))*4)
	if n := pt.MergedTokens(); n != im.tokens {
		return invalid(im.param, CodeBadImage, "image data disagrees with its header (%d tokens, header says %d)", n, im.tokens)
	}
	im.grid = [3]int{pt.GridT, pt.GridH, pt.GridW}
	im.content = e.contentKey(im.grid, pt.Data)
	if !trace {
		e.imageCache.put(bytesKey, imageMeta{content: im.content, grid: im.grid, tokens: im.tokens}, 128, false)
		// Memory only: the stores are asked after the embedding cache,
		// for the inputs that missed it (storedEncodings).
		if enc, ok := e.encoderCache.get(im.content, true); ok {
			im.enc, im.cached = enc, true
			e.freeBudget(im)
			return nil
		}
	}
	im.patches = pt.Data
	return nil
}

// bytesKey is the image cache's key of an image: its file's bytes, or
// its decoded pixels row by row, under the preprocessing parameters pre.
func (im *imageItem) bytesKey(pre Key) Key {
	if im.pixels == nil {
		return newHasher("image-bytes").key(pre).bytes(im.data).sum()
	}
	h := newHasher("image-pixels").key(pre).int(im.w).int(im.h)
	b := im.pixels.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		off := im.pixels.PixOffset(b.Min.X, y)
		h.bytes(im.pixels.Pix[off : off+4*im.w])
	}
	return h.sum()
}

// rgbOf drops the alpha channel of an opaque image, as decoding an
// opaque PNG into imageproc's RGB does.
func rgbOf(m *image.RGBA) *imageproc.Image {
	b := m.Bounds()
	out := imageproc.NewImage(b.Dx(), b.Dy())
	for y := 0; y < out.Height; y++ {
		s := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
		d := out.Pix[y*out.Width*3 : (y+1)*out.Width*3]
		for x := 0; x < out.Width; x++ {
			d[3*x], d[3*x+1], d[3*x+2] = s[4*x], s[4*x+1], s[4*x+2]
		}
	}
	return out
}

// preprocKey identifies every preprocessing parameter of a request.
func (e *Engine) preprocKey(o options) Key {
	c := o.img
	h := newHasher("preprocess/1").int(c.PatchSize).int(c.MergeSize).int(c.TemporalPatchSize).int(c.MinPixels).int(c.MaxPixels)
	if f := c.Fetch; f.MaxPixels > 0 { // only then, so that other models' keys stay as they were
		h.int(f.Factor).int(f.MinPixels).int(f.MaxPixels)
	}
	for i := 0; i < 3; i++ {
		h.int(int(math.Float32bits(c.Mean[i]))).int(int(math.Float32bits(c.Std[i])))
	}
	h.str(fmt.Sprint(e.cfg.Decode.ApplyEXIFOrientation))
	return h.sum()
}

// embeddingKey identifies an input's full-width output: the model, the
// recipe's version, the output kind, the exact prompt ids, each image's
// content key and the pooling rule.
func (e *Engine) embeddingKey(it *input, o options) Key {
	h := newHasher("embedding/1").key(e.modelID).str(e.recipe.Version())
	kind := "single"
	if o.multi {
		kind = "multi"
	} else if o.perSpan && len(it.images) > 0 {
		kind = "single+spans"
	}
	h.str(kind).int(int(it.pool.Kind)).int(it.pool.Lo).int(it.pool.Hi)
	for _, r := range it.keep {
		h.int(r[0]).int(r[1])
	}
	ids := it.prompt.IDs
	h.bytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ids))), len(ids)*4))
	for _, im := range it.images {
		h.key(im.content)
	}
	for _, s := range it.prompt.Images {
		h.int(s.First).int(s.End)
	}
	return h.sum()
}
