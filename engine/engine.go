// Package engine is vembed's serving engine, split as vLLM's V1 engine is,
// for an engine that only prefills and pools:
//
//   - processor (processor.go): validates a request, builds its prompts
//     through the model's recipe (package recipe), decodes and patches its
//     images in a bounded pool under a byte budget, computes content keys
//     and looks the caches up, on the caller's goroutine;
//   - scheduler (scheduler.go): one goroutine owning every admitted
//     request; each step packs the images of many requests into one vision
//     pass run a few layers at a time, and chunks of many sequences into
//     one language-model pass, under step budgets, with a fast lane for
//     short requests, fairness between requests and cancellation;
//   - runner (runner.go): owns the model and runs what a step names;
//   - output (output.go): pooling, normalization, Matryoshka, multi-vector
//     projection, per-span vectors.
//
// Caches are keyed by content (SHA-256; the model files by their digests,
// or by a value of the engine's own with Config.LocalIdentity): the
// embedding cache (an input's full-width output, before Matryoshka and
// encoding; optionally also on disk), the encoder cache (an image's merger rows by its content key:
// the patches, every preprocessing parameter and the vision tower's
// identity) and the image cache (a file's bytes and preprocessing
// parameters -> its content key, so a repeated file is not decoded again).
// Below memory, the embedding and encoder caches have levels behind one
// interface (store, cache.go): a bbolt file (Config.CacheDir, results
// only) and a Valkey or Redis server that replicas share
// (Config.CacheURL). With Config.EncoderURLs the images are encoded by
// vision encoder replicas (package visionsvc), whose side is
// EncodeImages.
//
// An input's vector is bit-identical whether it runs alone, batched with
// any other traffic, or cut into chunks: every kernel computes a row
// independently of the other rows of its product (see package model).
package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/tokenizer"
	"github.com/vembed/vembed/visionsvc"
)

// DefaultMaxTokens is the default limit on one input's prompt, in tokens.
// jina-embeddings-v4 reads up to 32k tokens, but one 32k input costs a
// minute of CPU on a 3B model and gigabytes of keys and values; inputs
// longer than this are refused (or cut, with Request.Truncate) unless
// Config.MaxTokens raises it.
const DefaultMaxTokens = 8192

// Config says which model files to load, how to limit requests and how to
// size the serving engine. Zero fields take the defaults documented on
// them.
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
	// MaxTokens caps one input's prompt (default DefaultMaxTokens, never
	// above the model's context length).
	MaxTokens int
	// MaxPixels lowers the model's image budget (resized pixels per image)
	// for every request; 0 keeps the model's. Below the model's minimum
	// New refuses it (ErrPixelBudget), as a request's max_pixels is.
	MaxPixels int
	// MaxImages caps the images of one request (default 32).
	MaxImages int
	// Decode bounds image files and dimensions (zero: imageproc defaults).
	Decode imageproc.DecodeOptions
	// Tokenizer options (NFC normalization etc.).
	Tokenizer tokenizer.Options
	// RandomWeights labels a synthetic demonstration model.
	RandomWeights bool

	// StepTarget is the time a scheduler step aims at (default 1s): step
	// budgets follow from it and the measured cost of tokens and vision
	// stages. A short request waits about one step behind bulk work. Bulk
	// language-model steps may take longer: they hold enough tokens that
	// the fixed cost of a pass is at most a quarter of the step.
	StepTarget time.Duration
	// MaxBatchTokens caps the language-model tokens of one step (default
	// 8192).
	MaxBatchTokens int
	// MaxEncoderBatch caps the merged image tokens of one vision pass
	// (default 4096).
	MaxEncoderBatch int
	// FastLaneTokens: requests with at most this many tokens left and
	// their images encoded go first (default 256).
	FastLaneTokens int
	// BatchWait is how long an idle engine waits for more requests after
	// the latest arrival before its first step (default 5ms; negative:
	// none), in all at most a tenth of the measured fixed part of a
	// language-model pass (or BatchWait, if longer).
	BatchWait time.Duration
	// MinChunk is the smallest piece a long sequence is cut into (default
	// 32 tokens).
	MinChunk int
	// Cache budgets in bytes: the embedding cache (default 256 MiB), the
	// encoder cache (default 512 MiB) and the image cache (default 16 MiB).
	// A negative value disables that cache.
	EmbeddingCacheBytes, EncoderCacheBytes, ImageCacheBytes int64
	// CacheDir, when set, keeps the embedding cache on disk too (a bbolt
	// file there), so that a restarted server serves known inputs for
	// free. DiskCacheBytes bounds it (default 4 GiB).
	CacheDir       string
	DiskCacheBytes int64
	// CacheURL, when set (redis://host:port/db or rediss://…), shares the
	// embedding and encoder caches with every replica pointing at the
	// same Valkey or Redis server, as a second level behind memory.
	// Entries expire after CacheTTL (default 7 days); values over
	// CacheMaxValue bytes (default 64 MiB) are not shared. An unreachable
	// server only costs misses.
	CacheURL      string
	CacheTTL      time.Duration
	CacheMaxValue int
	// EncoderURLs, when any, are vision encoder replicas (vembed serve
	// --role encoder on the same mmproj file): images this engine needs
	// encoded go to them, content keys first and patches only for keys
	// they do not hold, and come back bit-identical to a local pass.
	// Images they fail to answer within EncoderTimeout (default 60s) are
	// encoded here. EncoderAPIKey is sent to them as a bearer token.
	EncoderURLs    []string
	EncoderTimeout time.Duration
	EncoderAPIKey  string
	// LocalIdentity identifies the model files by a random value of this
	// engine instead of their SHA-256 digests. Hashing reads every byte
	// of every file once (about 3 s of one core for a 3B Q8_0 model and
	// its mmproj), which a process that embeds a few inputs and exits
	// pays on every run; an identity only has to agree between processes
	// when something outlives or crosses the engine, so CacheDir,
	// CacheURL and EncoderURLs override it (the files are hashed), and an
	// engine that serves its vision encoder to other replicas must leave
	// it false. Within one engine any unique value keeps the memory
	// caches and the in-flight dedupe exact.
	LocalIdentity bool
	// PreprocessWorkers is the size of the image decoding pool (default
	// GOMAXPROCS).
	PreprocessWorkers int
	// ImageBudgetBytes bounds the memory of images being decoded or waiting
	// for the vision tower, estimated from their headers (default 1 GiB);
	// requests wait for room, and an image needing more is refused.
	ImageBudgetBytes int64
	// MaxQueuedRequests and MaxQueuedTokens bound the admitted requests not
	// finished (defaults 1024 and 1<<20); beyond them Embed returns
	// ErrOverloaded.
	MaxQueuedRequests int
	MaxQueuedTokens   int
}

func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxImages, 32)
	def(&c.MaxBatchTokens, 8192)
	def(&c.MaxEncoderBatch, 4096)
	def(&c.FastLaneTokens, 256)
	def(&c.MinChunk, 32)
	def(&c.MaxQueuedRequests, 1024)
	def(&c.MaxQueuedTokens, 1<<20)
	if c.StepTarget <= 0 {
		c.StepTarget = time.Second
	}
	if c.BatchWait == 0 {
		c.BatchWait = 5 * time.Millisecond
	}
	def64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def64(&c.EmbeddingCacheBytes, 256<<20)
	def64(&c.EncoderCacheBytes, 512<<20)
	def64(&c.ImageCacheBytes, 16<<20)
	def64(&c.DiskCacheBytes, 4<<30)
	if c.CacheTTL <= 0 {
		c.CacheTTL = 7 * 24 * time.Hour
	}
	if c.CacheMaxValue <= 0 {
		c.CacheMaxValue = 64 << 20
	}
	def64(&c.ImageBudgetBytes, 1<<30)
}

// Engine embeds requests with one loaded model. Its methods are safe for
// concurrent use.
type Engine struct {
	cfg    Config
	lmFile *gguf.File
	model  model.Model
	ranker *heads.Ranker // set for a reranker
	mi     model.Info
	recipe recipe.Recipe
	tok    *tokenizer.Tokenizer
	mv     *heads.MultiVector
	img    imageproc.Config
	info   Info

	modelID, visionID  Key
	maxTokenBytes      int
	limitNote          string // why the token limit is lower than the model's, for its errors
	flopsPerToken      int64
	flopsPerPatchStage int64
	patchVals          int

	proc   *processor
	sched  *scheduler
	runner *runner

	embeddingCache *lru[*result]
	encoderCache   *lru[model.EncodedImage]
	imageCache     *lru[imageMeta]
	stores         []store        // disk, then shared: the levels below memory
	remote         *remoteEncoder // nil without Config.EncoderURLs

	inflight atomic.Int64
	// arriving counts the requests inside Embed that the scheduler has not
	// received yet (being validated, tokenized or decoded): an idle
	// engine's gather window waits for them (scheduler.gather).
	arriving atomic.Int64
	stats    counters

	mu       sync.Mutex // guards closing and the admission counters
	closing  bool
	admitted int
	queuedTk int
	wg       sync.WaitGroup // requests in Embed
}

// ErrPixelBudget is wrapped by New's error for a Config.MaxPixels below
// the model's minimum image budget.
var ErrPixelBudget = errors.New("outside the model's image budget")

// New loads the model, its tokenizer (from the LM GGUF), its recipe, the
// image preprocessing configuration (from the model's metadata) and the
// multi-vector projector when there is one, and starts the scheduler.
func New(cfg Config) (*Engine, error) {
	cfg.defaults()
	m, err := openModel(cfg.Model, cfg.MMProj)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{cfg: cfg, model: m}
	if err := e.init(); err != nil {
		e.closeFiles()
		return nil, err
	}
	e.proc = newProcessor(e)
	e.runner = &runner{m: e.model}
	e.sched = newScheduler(e)
	return e, nil
}

func (e *Engine) init() error {
	cfg := e.cfg
	f, err := gguf.Open(cfg.Model)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.lmFile = f
	if e.recipe, err = recipe.Select(f); err != nil {
		return fmt.Errorf("engine: %s: %w", cfg.Model, err)
	}
	if _, ok := e.recipe.(recipe.Pairs); ok {
		if e.ranker, err = heads.RankerFrom(f); err != nil {
			return fmt.Errorf("engine: %s: %w", cfg.Model, err)
		}
	}
	if e.tok, err = tokenizer.FromGGUF(f, cfg.Tokenizer); err != nil {
		return fmt.Errorf("engine: tokenizer of %s: %w", cfg.Model, err)
	}
	mi := e.model.Info()
	e.mi = mi
	source, err := f.String(heads.KeyMultiVectorSource)
	if err != nil && !errors.Is(err, gguf.ErrKeyNotFound) {
		return fmt.Errorf("engine: %s: %w", cfg.Model, err)
	}
	switch {
	case source == "hidden":
		if cfg.MVProj != "" || heads.HasMultiVector(f) {
			return fmt.Errorf("engine: %s: %s is \"hidden\" (the per-token rows are the hidden states), so a multi-vector projector does not apply", cfg.Model, heads.KeyMultiVectorSource)
		}
		e.mv = heads.HiddenRows(mi.Hidden)
	case source != "" && source != "mvproj":
		return fmt.Errorf("engine: %s: %s %q is not one vembed knows (mvproj, hidden)", cfg.Model, heads.KeyMultiVectorSource, source)
	case cfg.MVProj != "":
		if e.mv, err = heads.LoadMultiVector(cfg.MVProj); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	case heads.HasMultiVector(f):
		if e.mv, err = heads.MultiVectorFrom(f); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	if e.mv != nil && e.mv.InputDim != mi.Hidden {
		return fmt.Errorf("engine: multi-vector projector takes %d inputs, the model is %d wide", e.mv.InputDim, mi.Hidden)
	}
	e.img = e.recipe.Image(mi)
	if v := cfg.MaxPixels; v > 0 && v < e.img.MaxPixels {
		// Below the minimum images would get fewer tokens than the model
		// was trained with: refused, as a request's max_pixels is.
		if lo := e.img.MinPixels; v < lo {
			return fmt.Errorf("engine: max pixels %d is %w of %d..%d pixels (it may lower the maximum down to the minimum only)", v, ErrPixelBudget, lo, e.img.MaxPixels)
		}
		if f := e.img.Factor(); v < f*f {
			return fmt.Errorf("engine: max pixels %d is below one merged patch (%d pixels)", v, f*f)
		}
		e.img.MaxPixels = v
	}
	e.info = Info{
		Name:          cfg.Name,
		Arch:          mi.Arch,
		Hidden:        mi.Hidden,
		ContextLength: min(cfg.MaxTokens, mi.ContextLength),
		Tasks:         e.recipe.Tasks(),
		Modalities:    []string{"text"},
		RandomWeights: cfg.RandomWeights,
		Recipe:        e.recipe.Name(),
		Dimensions:    e.recipe.Dimensions(mi.Hidden),
		Reranker:      e.ranker != nil,
	}
	if _, ok := e.recipe.(recipe.Instructed); ok {
		e.info.Instruction = true
	}
	if cfg.MaxTokens <= 0 {
		e.info.ContextLength = min(DefaultMaxTokens, mi.ContextLength)
	}
	if mi.Bidirectional && e.info.ContextLength >= cfg.MaxBatchTokens {
		// Each input runs whole in one pass (see the scheduler), so no
		// input may be longer than a pass.
		e.info.ContextLength = cfg.MaxBatchTokens
		e.limitNote = fmt.Sprintf("; this model attends bidirectionally, so an input runs in one pass, of at most %d tokens (max batch tokens)", cfg.MaxBatchTokens)
	}
	if e.info.ContextLength <= 0 {
		return fmt.Errorf("engine: %s declares no context length; set a token limit", cfg.Model)
	}
	if mi.HasVision {
		e.info.Modalities = append(e.info.Modalities, "image")
		e.info.MinPixels, e.info.MaxPixels = e.img.MinPixels, e.img.MaxPixels
	}
	if e.mv != nil {
		e.info.MultivectorDim = e.mv.OutputDim
	}
	if e.info.Name == "" {
		e.info.Name = modelName(f, cfg.Model)
	}
	for id := 0; id < e.tok.NumTokens(); id++ {
		e.maxTokenBytes = max(e.maxTokenBytes, utf8.RuneCountInString(e.tok.Token(int32(id))))
	}
	e.maxTokenBytes = max(e.maxTokenBytes, 1)
	e.info.MaxTextBytes = e.info.ContextLength * e.maxTokenBytes
	e.flopsPerToken = max(mi.FlopsPerToken, 1)
	e.flopsPerPatchStage = max(mi.FlopsPerPatchStage, 1)
	e.patchVals = mi.PatchValues

	if e.modelID, e.visionID, err = identities(cfg); err != nil {
		return err
	}
	e.embeddingCache = newLRU[*result]("embedding", cfg.EmbeddingCacheBytes)
	e.encoderCache = newLRU[model.EncodedImage]("encoder", cfg.EncoderCacheBytes)
	e.imageCache = newLRU[imageMeta]("image", cfg.ImageCacheBytes)
	e.stats.init()
	if e.stores, err = openStores(cfg); err != nil {
		return err
	}
	if len(cfg.EncoderURLs) > 0 && mi.HasVision {
		c, err := visionsvc.NewClient(visionsvc.ClientOptions{URLs: cfg.EncoderURLs, Timeout: cfg.EncoderTimeout, APIKey: cfg.EncoderAPIKey})
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		e.remote = &remoteEncoder{c: c}
	}
	return nil
}

// identities returns the identities of the model files (LM, mmproj and
// mvproj together) and of the vision tower (the mmproj): digests of the
// files' contents and the kernels' arithmetic (kernels.Arithmetic: a
// Zen 5 multiplies the tower in bfloat16, a Zen 3 in float32), so that
// caches shared with other processes, including the one on disk, never
// serve vectors of another model or another arithmetic; or, with
// Config.LocalIdentity and nothing shared, values drawn for this engine.
func identities(cfg Config) (modelID, visionID Key, err error) {
	paths := []string{cfg.Model, cfg.MMProj, cfg.MVProj}
	if cfg.LocalIdentity && cfg.CacheDir == "" && cfg.CacheURL == "" && len(cfg.EncoderURLs) == 0 {
		var nonce [32]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return Key{}, Key{}, fmt.Errorf("engine: %w", err)
		}
		local := func(domain string, paths ...string) Key {
			h := newHasher("local/" + domain).bytes(nonce[:])
			for _, p := range paths {
				h.str(p)
			}
			return h.sum()
		}
		return local("model", paths...), local("vision", cfg.MMProj), nil
	}
	// Each distinct file is read once, the files at the same time: the
	// mmproj is part of both identities. Each reader writes only its own
	// slot, and the map is filled after every reader is done: ranging over
	// a map while the readers store into it was a concurrent map
	// iteration and write, which the runtime may stop the process for.
	var files []string
	for _, p := range paths {
		if p != "" && !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	sums := make([][]byte, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, p := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i], errs[i] = fileDigest(p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Key{}, Key{}, err
	}
	digests := make(map[string][]byte, len(files))
	for i, p := range files {
		digests[p] = sums[i]
	}
	return fileIdentity("model", digests, paths...), fileIdentity("vision", digests, cfg.MMProj), nil
}

// fileIdentity combines the digests of files (by path; "" for an absent
// file) and the active kernels' arithmetic under a domain.
func fileIdentity(domain string, digests map[string][]byte, paths ...string) Key {
	h := newHasher("files/" + domain).str(kernels.Arithmetic())
	for _, p := range paths {
		h.str(filepath.Base(p))
		if p != "" {
			h.bytes(digests[p])
		}
	}
	return h.sum()
}

// fileDigest is the SHA-256 digest of a whole file.
func fileDigest(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	defer f.Close()
	fh := sha256.New()
	if _, err := io.Copy(fh, f); err != nil {
		return nil, fmt.Errorf("engine: hashing %s: %w", p, err)
	}
	return fh.Sum(nil), nil
}

func modelName(f *gguf.File, path string) string {
	if s, err := f.String("general.name"); err == nil && s != "" {
		return s
	}
	return strings.TrimSuffix(filepath.Base(path), ".gguf")
}

// Info describes the loaded model and what requests it accepts.
func (e *Engine) Info() Info { return e.info }

// Shutdown stops admitting requests (they get ErrShuttingDown), fails the
// requests still queued with no work done, and waits until the running
// ones finish or ctx ends; then the rest get ErrShuttingDown too.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.sched.failQueued()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		e.sched.shutdown()
		<-done
		return ctx.Err()
	}
}

// Close stops the scheduler (requests still running get ErrShuttingDown)
// and releases the model files.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	if e.sched != nil {
		e.sched.shutdown()
	}
	e.wg.Wait()
	return e.closeFiles()
}

func (e *Engine) closeFiles() error {
	var errs []error
	if e.remote != nil {
		e.remote.c.Close()
	}
	for _, st := range e.stores {
		errs = append(errs, st.close())
	}
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
	task       recipe.Task
	dims       int
	img        imageproc.Config
	multi      bool
	perSpan    bool
	normalized bool
	limit      int // tokens of one prompt
}

func (e *Engine) options(req *Request) (options, error) {
	o := options{dims: req.Dimensions, img: e.img, multi: req.Multivector, perSpan: req.PerSpan, normalized: !req.Unnormalized,
		limit: e.info.ContextLength}
	switch {
	case req.MaxTokens < 0:
		return o, invalid("max_tokens", CodeInvalid, "max_tokens must be positive, got %d", req.MaxTokens)
	case req.MaxTokens > 0:
		o.limit = min(o.limit, req.MaxTokens)
	}
	if req.InputType != "" {
		if req.Task != "" || req.Instruction != "" {
			return o, invalid("input_type", CodeInvalid, "input_type replaces task and instruction; send one of them")
		}
		p, err := recipe.ForInputType(e.recipe, req.InputType)
		if err != nil {
			return o, invalid("input_type", CodeUnsupported, "%v", err)
		}
		req.Task = p.Task
		req.Instruction = p.Instruction
	}
	t, err := e.recipe.Task(req.Task)
	if err != nil {
		return o, invalid("task", CodeInvalid, "%v", err)
	}
	if req.Instruction != "" {
		if !e.info.Instruction {
			return o, invalid("instruction", CodeUnsupported, "this model takes a task, not an instruction (tasks: %s)", strings.Join(e.info.Tasks, ", "))
		}
		if _, err := e.checkText("instruction", req.Instruction, e.info.ContextLength, cutNone); err != nil {
			return o, err
		}
		t.Instruction = req.Instruction
	}
	o.task = t
	if o.multi && e.mv == nil {
		return o, invalid("return_multivector", CodeUnsupported, "this model has no multi-vector projector")
	}
	if d := req.Dimensions; d != 0 {
		if o.multi {
			return o, invalid("dimensions", CodeInvalid, "dimensions does not apply to multi-vector output (its width is the projector's %d)", e.mv.OutputDim)
		}
		if err := e.checkDims(d); err != nil {
			return o, err
		}
	}
	// A request moves the budget within the model's own bounds, never
	// past them: below the minimum an image gets fewer tokens than the
	// model was trained with (GME's processor upscales to 256), above the
	// maximum more.
	lo, hi := e.img.MinPixels, e.img.MaxPixels
	for _, p := range []struct {
		name string
		v    int
		dst  *int
	}{{"max_pixels", req.MaxPixels, &o.img.MaxPixels}, {"min_pixels", req.MinPixels, &o.img.MinPixels}} {
		if p.v == 0 {
			continue
		}
		if p.v < lo || p.v > hi {
			return o, invalid(p.name, CodeInvalid, "%s %d is outside the model's image budget of %d..%d pixels (a request may move it within those bounds only)", p.name, p.v, lo, hi)
		}
		if f := o.img.Factor(); p.v < f*f {
			return o, invalid(p.name, CodeInvalid, "%s %d is below one merged patch (%d pixels)", p.name, p.v, f*f)
		}
		*p.dst = p.v
	}
	if o.img.MinPixels > o.img.MaxPixels {
		return o, invalid("min_pixels", CodeInvalid, "min_pixels %d exceeds max_pixels %d", o.img.MinPixels, o.img.MaxPixels)
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

// Embed computes the embeddings of req. Errors the caller must fix are
// *InputError; ErrOverloaded and ErrShuttingDown say the engine could not
// take the request; when ctx ends the request stops computing at the next
// step and Embed returns ctx's error.
func (e *Engine) Embed(ctx context.Context, req Request) (*Response, error) {
	if e.ranker != nil {
		return nil, invalid("input", CodeUnsupported, "this model is a reranker: it scores (query, document) pairs (rerank) and makes no embeddings")
	}
	return e.embed(ctx, req)
}

// embed runs a request through the processor and the scheduler.
func (e *Engine) embed(ctx context.Context, req Request) (*Response, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.wg.Done()
	e.arriving.Add(1)
	handed := false // to schedule, which then counts the arrival off
	defer func() {
		if !handed {
			e.arriving.Add(-1)
		}
	}()

	o, err := e.options(&req)
	if err != nil {
		return nil, err
	}
	if len(req.Inputs) == 0 {
		return nil, invalid("input", CodeEmpty, "no inputs")
	}
	pr, err := e.proc.prepare(ctx, &req, o)
	if err != nil {
		return nil, err
	}
	if req.Trace != nil {
		if err := pr.tracePatches(req.Trace); err != nil {
			pr.release(e)
			return nil, err
		}
	}
	r := &request{ctx: ctx, pr: pr, done: make(chan error, 1), arrived: time.Now(), trace: req.Trace != nil, tracer: req.Trace}
	for _, it := range pr.inputs {
		if pr.results[it.index] != nil {
			continue
		}
		r.seqs = append(r.seqs, &seqJob{req: r, in: it})
		r.tokens += len(it.prompt.IDs)
	}
	r.left = len(r.seqs)
	if r.left > 0 {
		r.arriving, handed = true, true
		if err := e.schedule(ctx, r); err != nil {
			return nil, err
		}
	}
	e.stats.requests.Add(1)
	return e.respond(pr, req.Trace)
}

// enter counts a call in e.wg, or refuses it once the engine is closing.
func (e *Engine) enter() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return ErrShuttingDown
	}
	e.wg.Add(1)
	return nil
}

// schedule admits r, hands it to the scheduler and waits until it is
// done. On an error before the scheduler took it, what r holds is
// released here; after, the scheduler released it.
func (e *Engine) schedule(ctx context.Context, r *request) error {
	if err := e.admit(r); err != nil {
		e.arrivalOff(r)
		r.pr.release(e)
		return err
	}
	select {
	case e.sched.submit <- r: // the scheduler counted its arrival off
	case <-e.sched.done:
		e.arrivalOff(r)
		e.unadmit(r)
		r.pr.release(e)
		return ErrShuttingDown
	case <-ctx.Done():
		// The scheduler is inside a step; the request never got in.
		e.arrivalOff(r)
		e.unadmit(r)
		r.pr.release(e)
		return ctx.Err()
	}
	err := <-r.done
	e.unadmit(r)
	return err
}

// arrivalOff takes r out of the arriving count, once.
func (e *Engine) arrivalOff(r *request) {
	if r.arriving {
		r.arriving = false
		e.arriving.Add(-1)
	}
}

// admit counts a request against the queue limits.
func (e *Engine) admit(r *request) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return ErrShuttingDown
	}
	if e.admitted+1 > e.cfg.MaxQueuedRequests || (e.admitted > 0 && e.queuedTk+r.tokens > e.cfg.MaxQueuedTokens) {
		return ErrOverloaded
	}
	e.admitted++
	e.queuedTk += r.tokens
	r.admTokens = r.tokens
	return nil
}

func (e *Engine) unadmit(r *request) {
	e.mu.Lock()
	e.admitted--
	e.queuedTk -= r.admTokens
	e.mu.Unlock()
}

// respond builds the response from the inputs' results.
func (e *Engine) respond(pr *prepared, tr Tracer) (*Response, error) {
	resp := &Response{Embeddings: make([]Embedding, len(pr.inputs))}
	for i, it := range pr.inputs {
		r := pr.results[i]
		if r == nil {
			return nil, fmt.Errorf("engine: %s has no result", it.param)
		}
		emb, err := pr.o.finish(r, len(it.prompt.IDs))
		if err != nil {
			return nil, err
		}
		resp.Embeddings[i] = emb
		resp.PromptTokens += emb.Tokens
	}
	return resp, nil
}
