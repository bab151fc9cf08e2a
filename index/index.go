// Package index turns folders of documents (PDF pages, images, text files)
// and tables of records into embeddings: a Parquet dataset in a directory,
// and optionally other sinks (PostgreSQL). Runs are resumable and
// incremental: every item is keyed by its content, the model and the
// options, a bbolt state store is the truth for finished items, and a run
// killed at any moment loses no finished item and leaves no torn file.
//
// Layout of an index directory (one set of files per shard I of N):
//
//	parts/sIofN-gG-S.parquet  immutable part files, written to .pending/
//	                          first and renamed in once the store holds them
//	state-IofN.db             the state store (bbolt)
//	manifest-IofN.json        model, options, counts, arithmetic
//
// Deletion rule: each run's walk defines the live set of its shard. When a
// run's walk completes, finished items it did not meet (deleted or changed
// files, another model or options) leave the store, their rows leave the
// part files (a part with removed rows is rewritten with the rest) and
// every sink is sent their removal.
//
// Path rule: a row's path is the first path in walk order at which the
// last completed run met its content; a row whose path the walk no longer
// meets first (deleted or renamed, a copy left) is rewritten.
package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/atomicfile"
	"github.com/vembed/vembed/pdf"
)

// Embedder embeds requests: *engine.Engine.
type Embedder interface {
	Embed(ctx context.Context, req engine.Request) (*engine.Response, error)
	Info() engine.Info
}

// NamedSink is a sink with the stable name under which the store tracks
// what it has acknowledged ("postgres:vembed_items").
type NamedSink struct {
	Name string
	Sink Sink
}

// Options configure a run.
type Options struct {
	// Out is the index directory.
	Out string
	// Paths are the files and folders to walk; JSONL and Parquet are
	// record tables (--from-jsonl, --from-parquet).
	Paths, JSONL, Parquet []string
	// FollowSymlinks follows symbolic links to files outside the folder
	// walked; without it such a link is reported and passed over.
	FollowSymlinks bool
	// Shard I of Shards (Shards 0 or 1: one shard).
	Shard, Shards int

	// Request carries the embedding options (Task, Instruction,
	// Dimensions, Multivector, MinPixels, MaxPixels); Inputs is ignored.
	Request engine.Request
	// TextTask is the task of text-only items when Request.Task is empty
	// (retrieval.passage for models with tasks: texts are otherwise
	// embedded as queries).
	TextTask string
	// Sidecar is the element type of a multi-vector run's sidecars (0:
	// float32). Changing it between runs rewrites the shard's sidecars
	// from their parts at the next run's start.
	Sidecar SidecarType
	// ChunkTokens bounds a text file's passages, in tokens of Count.
	ChunkTokens int
	// Count counts a text's tokens (the model's tokenizer).
	Count func(string) int

	// ModelID identifies the model files and arithmetic (ModelIdentity);
	// ModelName is the model column; Arithmetic is recorded in the
	// manifest.
	ModelID, ModelName, Arithmetic string
	// ModelFiles are the model's files (LM, mmproj, mvproj; absolute), for
	// the manifest: a search of the index loads the same files. Empty for
	// the demo model, which is rebuilt the same.
	ModelFiles []string
	// ExtraOptions are recorded in the manifest and hashed into every key
	// (e.g. the PDF DPI).
	ExtraOptions map[string]string

	// InFlight is how many items are inside the engine at once (default
	// 16): enough that the vision tower and the language model batch
	// across them.
	InFlight int
	// PartRows, PartBytes and FlushEvery bound the rows held before a
	// part file is written (defaults 256 rows, 64 MiB of vectors and
	// text: a page of a multi-vector model holds half a megabyte, 30 s).
	PartRows   int
	PartBytes  int64
	FlushEvery time.Duration
	// MaxFileBytes bounds one input file (default 512 MiB).
	MaxFileBytes int64

	// PDF returns the renderer of PDF pages, called once at the first
	// PDF met (PDFium's start-up costs seconds; nil: PDFs are reported as
	// not indexed). Pages render at DPI (default pdf.DefaultDPI);
	// encrypted documents open with Password.
	PDF      func() (*pdf.Renderer, error)
	DPI      float64
	Password string

	Sinks []NamedSink
	// Progress, when set, is called about every ProgressEvery (default 1 s)
	// and once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	Log           *slog.Logger
}

// Problem is an input that was not indexed, and why.
type Problem struct {
	Path   string `json:"path"`
	Page   int    `json:"page,omitempty"`
	Reason string `json:"reason"`
}

// Progress is the state of a run, reported as it goes and at its end.
type Progress struct {
	Elapsed    float64 `json:"elapsed_s"`
	Found      int     `json:"items_found"`     // items of this shard met by the walk
	Done       int     `json:"items_embedded"`  // embedded by this run
	Skipped    int     `json:"items_unchanged"` // finished by an earlier run, met first in this one
	Duplicates int     `json:"items_duplicate"` // content met before in this run (a copy of a file)
	Bad        int     `json:"items_bad"`
	InFlight   int     `json:"in_flight"`
	Pages      int     `json:"pages"` // embedded items with an image (PDF pages, images)
	Texts      int     `json:"texts"` // embedded text-only items
	Tokens     int64   `json:"tokens"`
	CPUSeconds float64 `json:"cpu_s"`
	ItemsPerS  float64 `json:"items_per_s"`
	PagesPerS  float64 `json:"pages_per_s"`
	TokensPerS float64 `json:"tokens_per_s"`
	CPUPerItem float64 `json:"cpu_s_per_item"`
	// CPUPerPage is all the run's CPU time over its pages (texts' share
	// included): CPU-seconds per page of a corpus of PDFs and images.
	CPUPerPage float64 `json:"cpu_s_per_page,omitempty"`
	Removed    int     `json:"items_removed,omitempty"`
	// BytesTotal is the size of the input files (measured before the
	// walk), BytesWalked how much of it the walk has passed: whole files
	// once their items are queued or finished, and inside a file its
	// share done (a PDF's bytes over its pages once it is opened, a
	// table's as its records are read), so the fraction done and an ETA
	// move with the work.
	BytesTotal  int64 `json:"bytes_total"`
	BytesWalked int64 `json:"bytes_walked"`
	WalkDone    bool  `json:"walk_done"`
	Final       bool  `json:"final,omitempty"`
	Interrupted bool  `json:"interrupted,omitempty"`
}

// Summary is the result of a run.
type Summary struct {
	Progress
	// Problems lists the inputs not indexed (the first maxProblems; Bad
	// counts them all).
	Problems []Problem `json:"problems"`
	// Items is the number of finished items of the shard after the run.
	Items int `json:"items"`
	// DeletionSkipped says why unseen items were kept (an incomplete walk).
	DeletionSkipped string `json:"deletion_skipped,omitempty"`
}

// shardName is the file-name tag of shard i of n.
func shardName(i, n int) string { return fmt.Sprintf("s%dof%d", i, n) }

// Run indexes opts' inputs with emb. Bad inputs are reported in the
// summary and the log; an error ends the run (what was committed stays).
func Run(ctx context.Context, emb Embedder, opts Options) (*Summary, error) {
	r, err := newRun(emb, opts)
	if err != nil {
		return nil, err
	}
	defer r.store.Close()
	defer func() {
		if r.pdf != nil {
			r.pdf.Close()
		}
	}()
	return r.run(ctx)
}

type run struct {
	emb   Embedder
	o     Options
	store *store
	tag   string
	gen   uint64
	opt   string // options hash
	log   *slog.Logger

	mu       sync.Mutex
	prog     Progress
	problems []Problem
	pending  map[Key]bool // queued or embedded, not yet committed
	// recordIDs holds a 64-bit hash of every table record's id met by the
	// walk (about 40 bytes a record), to refuse a repeated id.
	recordIDs map[uint64]bool

	pos filePos // the walk's

	pdfOnce sync.Once
	pdf     *pdf.Renderer
	pdfErr  error
	seq     int

	start    time.Time
	cpuStart time.Duration
}

func newRun(emb Embedder, o Options) (*run, error) {
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.Shard < 0 || o.Shard >= o.Shards {
		return nil, fmt.Errorf("index: shard %d of %d", o.Shard, o.Shards)
	}
	if o.InFlight <= 0 {
		o.InFlight = 16
	}
	if o.PartRows <= 0 {
		o.PartRows = 256
	}
	if o.PartBytes <= 0 {
		o.PartBytes = 64 << 20
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 30 * time.Second
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 512 << 20
	}
	if o.DPI <= 0 {
		o.DPI = pdf.DefaultDPI
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ModelID == "" {
		return nil, errors.New("index: no model identity")
	}
	if o.Count == nil || o.ChunkTokens < 1 {
		return nil, errors.New("index: text chunking needs a token count and a positive chunk size")
	}
	for _, d := range []string{o.Out, filepath.Join(o.Out, PartsDir), filepath.Join(o.Out, pendingDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
	}
	// Shards of another split would leave their rows beside this one's:
	// the same items twice in parts/*.parquet.
	states, _ := filepath.Glob(filepath.Join(o.Out, "state-*of*.db"))
	for _, st := range states {
		var i, n int
		if _, err := fmt.Sscanf(filepath.Base(st), "state-%dof%d.db", &i, &n); err == nil && n != o.Shards {
			return nil, fmt.Errorf("index: %s holds a %d-way split (%s): a %d-way one would write the same items beside it; use another output folder, or remove that split's state-*of%d.db, manifest-*of%d.json and parts/s*of%d-*.parquet",
				o.Out, n, filepath.Base(st), o.Shards, n, n, n)
		}
	}
	tag := shardName(o.Shard, o.Shards)
	st, err := openStore(filepath.Join(o.Out, "state-"+strings.TrimPrefix(tag, "s")+".db"))
	if err != nil {
		return nil, err
	}
	r := &run{emb: emb, o: o, store: st, tag: tag, log: o.Log, pending: map[Key]bool{}, recordIDs: map[uint64]bool{}}
	r.opt = hashOptions(r.optionsList()...)
	return r, nil
}

// optionsList is every option that changes a vector or a row.
func (r *run) optionsList() []any {
	q := r.o.Request
	extra := make([]string, 0, len(r.o.ExtraOptions))
	for k, v := range r.o.ExtraOptions {
		extra = append(extra, k+"="+v)
	}
	sort.Strings(extra)
	return []any{"task", q.Task, "text-task", r.o.TextTask, "instruction", q.Instruction, "dimensions", q.Dimensions,
		"multivector", q.Multivector, "min-pixels", q.MinPixels, "max-pixels", q.MaxPixels,
		"chunk-tokens", r.o.ChunkTokens, "dpi", r.o.DPI, "model-name", r.o.ModelName, "extra", extra}
}

const pendingDir = ".pending"

// recover brings the files in line with the store after a crash: a part
// the store holds whose file is still in .pending is renamed in, one whose
// file is lost is dropped (its items are embedded again), and files of
// this shard that the store does not hold are removed.
func (r *run) recover() error {
	names, err := r.store.partNames()
	if err != nil {
		return err
	}
	held := make(map[string]bool, len(names))
	for _, n := range names {
		held[n] = true
	}
	partsDir, pend := filepath.Join(r.o.Out, PartsDir), filepath.Join(r.o.Out, pendingDir)
	for _, name := range names {
		final := filepath.Join(partsDir, name)
		if _, err := os.Stat(final); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(pend, name)); err == nil {
			if err := os.Rename(filepath.Join(pend, name), final); err != nil {
				return fmt.Errorf("index: %w", err)
			}
			continue
		}
		r.log.Warn("index: a part file is missing; its items are embedded again", "part", name)
		if err := r.store.dropPart(name); err != nil {
			return err
		}
		delete(held, name)
	}
	if err := atomicfile.SyncDir(partsDir); err != nil {
		return err
	}
	if err := r.removeStaleSidecars(held); err != nil {
		return err
	}
	for _, d := range []string{partsDir, pend} {
		ents, err := os.ReadDir(d)
		if err != nil {
			return fmt.Errorf("index: %w", err)
		}
		for _, e := range ents {
			n := e.Name()
			mine := strings.HasPrefix(strings.TrimPrefix(n, "."), r.tag+"-")
			if !mine {
				continue
			}
			if held[n] && d == partsDir && !isTemp(n) {
				continue
			}
			if err := os.Remove(filepath.Join(d, n)); err != nil {
				return fmt.Errorf("index: removing a stale file: %w", err)
			}
		}
	}
	return nil
}

// result is an embedded item.
type result struct {
	it     item
	tokens int
}

// maxProblems bounds the problems a summary lists (the log has them all,
// Progress.Bad counts them all), so that memory stays bounded over a
// corpus of broken files.
const maxProblems = 10000

func (r *run) problem(path string, page int, err error) {
	r.mu.Lock()
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, Problem{Path: path, Page: page, Reason: err.Error()})
	}
	r.prog.Bad++
	r.mu.Unlock()
	if page > 0 {
		r.log.Warn("index: not indexed", "path", path, "page", page, "reason", err.Error())
	} else {
		r.log.Warn("index: not indexed", "path", path, "reason", err.Error())
	}
}

func (r *run) run(ctx context.Context) (*Summary, error) {
	r.start = time.Now()
	r.cpuStart = cpuTime()
	if err := r.recover(); err != nil {
		return nil, err
	}
	// Rows of items a killed run removed from the store but not yet from
	// their parts.
	if err := r.compact(); err != nil {
		return nil, err
	}
	if err := r.matchSidecars(); err != nil {
		return nil, err
	}
	if err := r.syncSinks(ctx); err != nil {
		return nil, err
	}
	r.prog.BytesTotal = inputBytes(r.o)
	gen, err := r.store.nextGen()
	if err != nil {
		return nil, err
	}
	r.gen = gen

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	items := make(chan item, r.o.InFlight)
	results := make(chan result, r.o.InFlight)
	var walkComplete bool
	var walkErr error
	walkDone := make(chan struct{})
	go func() {
		defer close(walkDone)
		defer close(items)
		walkComplete, walkErr = r.walk(ctx, items)
		if walkErr != nil {
			cancel(walkErr)
		}
		r.mu.Lock()
		r.prog.WalkDone = true
		r.mu.Unlock()
	}()
	var wg sync.WaitGroup
	for range r.o.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(ctx, cancel, items, results)
		}()
	}
	go func() { wg.Wait(); close(results) }()

	writeErr := r.writer(ctx, results)
	if writeErr != nil {
		cancel(writeErr)
		for range results { // let the workers end
		}
	}
	<-walkDone
	sum := &Summary{}
	if err := context.Cause(ctx); err != nil && writeErr == nil {
		writeErr = err
	}
	if writeErr == nil {
		writeErr = r.movePaths(ctx)
	}
	if writeErr == nil {
		if walkComplete {
			n, err := r.removeUnseen(ctx)
			if err != nil {
				return nil, err
			}
			r.mu.Lock()
			r.prog.Removed = n
			r.mu.Unlock()
			if err := r.mergeSmall(); err != nil {
				return nil, err
			}
		} else {
			sum.DeletionSkipped = "the walk did not reach every folder: finished items it did not meet are kept"
		}
	}
	if n, err := r.store.count(); err == nil {
		sum.Items = n
	}
	r.mu.Lock()
	sum.Progress = r.snapshotLocked()
	sum.Progress.Final = true
	sum.Progress.Interrupted = writeErr != nil
	sum.Problems = append([]Problem(nil), r.problems...)
	r.mu.Unlock()
	if r.o.Progress != nil {
		r.o.Progress(sum.Progress)
	}
	if writeErr == nil {
		if err := r.writeManifest(sum); err != nil {
			return sum, err
		}
	}
	return sum, writeErr
}

func (r *run) snapshotLocked() Progress {
	p := r.prog
	p.Elapsed = time.Since(r.start).Seconds()
	p.CPUSeconds = (cpuTime() - r.cpuStart).Seconds()
	if p.Elapsed > 0 {
		p.ItemsPerS = float64(p.Done) / p.Elapsed
		p.PagesPerS = float64(p.Pages) / p.Elapsed
		p.TokensPerS = float64(p.Tokens) / p.Elapsed
	}
	if p.Done > 0 {
		p.CPUPerItem = p.CPUSeconds / float64(p.Done)
	}
	if p.Pages > 0 {
		p.CPUPerPage = p.CPUSeconds / float64(p.Pages)
	}
	return p
}

// worker embeds items, one request each: the engine batches the requests
// in flight across workers (vision passes over several pages' patches,
// language-model steps over several prompts).
func (r *run) worker(ctx context.Context, cancel context.CancelCauseFunc, items <-chan item, results chan<- result) {
	for it := range items {
		if ctx.Err() != nil {
			if it.doc != nil {
				it.doc.release()
			}
			continue // drain
		}
		if it.doc != nil {
			err := r.render(ctx, &it)
			it.doc.release()
			it.doc = nil
			if err != nil {
				if ctx.Err() == nil {
					r.problem(it.row.Path, it.row.Page, err)
				}
				r.unpend(it.key)
				continue
			}
		}
		req := r.o.Request
		req.Inputs = []engine.Input{it.input}
		if req.Task == "" && !it.pixels {
			req.Task = r.o.TextTask
		}
		r.mu.Lock()
		r.prog.InFlight++
		r.mu.Unlock()
		resp, err := r.emb.Embed(ctx, req)
		r.mu.Lock()
		r.prog.InFlight--
		r.mu.Unlock()
		if err != nil {
			if ie, ok := engine.AsInputError(err); ok {
				r.problem(it.row.Path, it.row.Page, ie)
				r.unpend(it.key)
				continue
			}
			if ctx.Err() == nil {
				cancel(fmt.Errorf("index: embedding %s: %w", it.row.Path, err))
			}
			continue
		}
		e := resp.Embeddings[0]
		it.row.Embedding, it.row.Vectors = e.Vector, e.Multi
		it.input = engine.Input{} // drop the image bytes
		select {
		case results <- result{it: it, tokens: resp.PromptTokens}:
		case <-ctx.Done():
		}
	}
}

func (r *run) unpend(k Key) {
	r.mu.Lock()
	delete(r.pending, k)
	r.mu.Unlock()
}

// writer gathers results into part files.
func (r *run) writer(ctx context.Context, results <-chan result) error {
	var rows []Row
	var keys []Key
	var held int64
	tick := time.NewTicker(r.o.ProgressEvery)
	defer tick.Stop()
	lastFlush := time.Now()
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		if err := r.commit(ctx, rows, keys); err != nil {
			return err
		}
		rows, keys, held = nil, nil, 0
		lastFlush = time.Now()
		return nil
	}
	for {
		select {
		case res, ok := <-results:
			if !ok {
				if ctx.Err() != nil {
					// Interrupted: what is embedded is still worth keeping.
					return flush()
				}
				if err := flush(); err != nil {
					return err
				}
				r.report()
				return nil
			}
			rows = append(rows, res.it.row)
			keys = append(keys, res.it.key)
			r.mu.Lock()
			r.prog.Done++
			r.prog.Tokens += int64(res.tokens)
			if res.it.pixels {
				r.prog.Pages++
			} else {
				r.prog.Texts++
			}
			r.mu.Unlock()
			held += rowBytes(&res.it.row)
			if len(rows) >= r.o.PartRows || held >= r.o.PartBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-tick.C:
			r.report()
			if time.Since(lastFlush) >= r.o.FlushEvery {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
}

func (r *run) report() {
	if r.o.Progress == nil {
		return
	}
	r.mu.Lock()
	p := r.snapshotLocked()
	r.mu.Unlock()
	r.o.Progress(p)
}

// commit writes rows as a new part: the file goes to .pending, the store
// records the part and its items in one transaction, the file is renamed
// into parts/, and the sinks get the rows. A crash before the transaction
// leaves a stray pending file (removed next run, the items embedded
// again); after it, the next run finishes the rename.
func (r *run) commit(ctx context.Context, rows []Row, keys []Key) error {
	r.seq++
	name := fmt.Sprintf("%s-g%06d-%06d.parquet", r.tag, r.gen, r.seq)
	pend := filepath.Join(r.o.Out, pendingDir, name)
	if err := r.writeSidecarFor(name, rows); err != nil {
		return err
	}
	if err := writePart(pend, rows); err != nil {
		return err
	}
	ids, paths := make([]string, len(rows)), make([]string, len(rows))
	for i := range rows {
		ids[i], paths[i] = rows[i].ID, rows[i].Path
	}
	if err := r.store.addPart(name, keys, ids, paths, r.gen); err != nil {
		return fmt.Errorf("index: recording %s: %w", name, err)
	}
	if err := os.Rename(pend, filepath.Join(r.o.Out, PartsDir, name)); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if err := atomicfile.SyncDir(filepath.Join(r.o.Out, PartsDir)); err != nil {
		return err
	}
	r.mu.Lock()
	for _, k := range keys {
		delete(r.pending, k)
	}
	r.mu.Unlock()
	for _, s := range r.o.Sinks {
		if err := s.Sink.Upsert(ctx, rows); err != nil {
			return fmt.Errorf("index: sink %s: %w", s.Name, err)
		}
		if err := r.store.ack(s.Name, name); err != nil {
			return err
		}
	}
	return nil
}

// syncSinks sends each sink the removals and the parts it has not
// acknowledged (a crash between a part's commit and a sink's answer).
func (r *run) syncSinks(ctx context.Context) error {
	if len(r.o.Sinks) == 0 {
		return nil
	}
	names, err := r.store.partNames()
	if err != nil {
		return err
	}
	for _, s := range r.o.Sinks {
		if err := r.sinkDeletes(ctx, s); err != nil {
			return err
		}
		acked, err := r.store.acked(s.Name)
		if err != nil {
			return err
		}
		for _, n := range names {
			if acked[n] {
				continue
			}
			pr, ok, err := r.store.part(n)
			if err != nil || !ok {
				return err
			}
			rows, err := r.liveRowsOf(n, pr)
			if err != nil {
				return err
			}
			if len(rows) > 0 {
				if err := s.Sink.Upsert(ctx, rows); err != nil {
					return fmt.Errorf("index: sink %s: %w", s.Name, err)
				}
			}
			if err := r.store.ack(s.Name, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run) sinkDeletes(ctx context.Context, s NamedSink) error {
	for {
		ids, err := r.store.pendingDeletes(s.Name, 1000)
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := s.Sink.Delete(ctx, ids); err != nil {
			return fmt.Errorf("index: sink %s: removing rows: %w", s.Name, err)
		}
		if err := r.store.deletesDone(s.Name, ids); err != nil {
			return err
		}
	}
}

// liveRowsOf reads a part's rows whose items still live in it, with their
// keys.
func (r *run) liveRowsOf(name string, pr partRec) ([]Row, error) {
	live, err := r.store.liveRows(name, pr)
	if err != nil {
		return nil, err
	}
	rows, err := ReadPart(filepath.Join(r.o.Out, PartsDir, name))
	if err != nil {
		return nil, err
	}
	if len(rows) != len(pr.Keys) {
		return nil, fmt.Errorf("index: %s holds %d rows, the store %d", name, len(rows), len(pr.Keys))
	}
	out := rows[:0]
	for i := range rows {
		if live[i] {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// movePaths rewrites the rows of finished items that this run's walk met
// first at another path than their row's (the path deleted or renamed, a
// copy kept): each part holding such rows is written again with the new
// paths, recorded in place of the old one in one transaction, and sent to
// the sinks. A crash in between leaves the new part unacknowledged, and
// the next run sends it.
func (r *run) movePaths(ctx context.Context) error {
	for {
		name, ok, err := r.store.firstMoved()
		if err != nil || !ok {
			return err
		}
		pr, ok, err := r.store.part(name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("index: part %s left the store while its rows were moved", name)
		}
		paths, err := r.store.movedPaths(name, pr)
		if err != nil {
			return err
		}
		live, err := r.store.liveRows(name, pr)
		if err != nil {
			return err
		}
		rows, err := ReadPart(filepath.Join(r.o.Out, PartsDir, name))
		if err != nil {
			return err
		}
		if len(rows) != len(pr.Keys) {
			return fmt.Errorf("index: %s holds %d rows, the store %d", name, len(rows), len(pr.Keys))
		}
		var keys, queued []Key
		var kept []Row
		changed := false
		for i := range rows {
			if paths[i] != "" {
				queued = append(queued, pr.Keys[i])
				if rows[i].Path != paths[i] {
					rows[i].Path, changed = paths[i], true
				}
			}
			if live[i] {
				keys, kept = append(keys, pr.Keys[i]), append(kept, rows[i])
			}
		}
		if !changed {
			// Rows of a store that did not keep paths, already right.
			if err := r.store.unqueueMoved(queued); err != nil {
				return err
			}
			continue
		}
		r.seq++
		newName := fmt.Sprintf("%s-g%06d-%06d.parquet", r.tag, r.gen, r.seq)
		pend := filepath.Join(r.o.Out, pendingDir, newName)
		if err := r.writeSidecarFor(newName, kept); err != nil {
			return err
		}
		if err := writePart(pend, kept); err != nil {
			return err
		}
		if err := r.store.rewritePart(name, newName, keys); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(r.o.Out, PartsDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("index: %w", err)
		}
		if err := r.removeSidecar(name); err != nil {
			return err
		}
		if err := os.Rename(pend, filepath.Join(r.o.Out, PartsDir, newName)); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		if err := atomicfile.SyncDir(filepath.Join(r.o.Out, PartsDir)); err != nil {
			return err
		}
		for _, s := range r.o.Sinks {
			if err := s.Sink.Upsert(ctx, kept); err != nil {
				return fmt.Errorf("index: sink %s: %w", s.Name, err)
			}
			if err := r.store.ack(s.Name, newName); err != nil {
				return err
			}
		}
	}
}

// removeBatch is how many unseen items are removed per store transaction
// (a variable for tests).
var removeBatch = 10000

// removeUnseen applies the deletion rule once the walk is complete.
func (r *run) removeUnseen(ctx context.Context) (int, error) {
	names := make([]string, 0, len(r.o.Sinks))
	for _, s := range r.o.Sinks {
		names = append(names, s.Name)
	}
	// In batches, so that removing a whole corpus holds a batch in memory.
	removed := 0
	var after []byte
	for {
		dead, last, err := r.store.unseen(r.gen, after, removeBatch)
		if err != nil {
			return 0, err
		}
		if len(dead) > 0 {
			if err := r.store.removeItems(dead, names); err != nil {
				return 0, err
			}
			removed += len(dead)
		}
		if last == nil {
			break
		}
		after = last
	}
	if removed == 0 {
		return 0, nil
	}
	if err := r.compact(); err != nil {
		return 0, err
	}
	for _, s := range r.o.Sinks {
		if err := r.sinkDeletes(ctx, s); err != nil {
			return 0, err
		}
	}
	r.log.Info("index: removed items the walk no longer meets", "items", removed)
	return removed, nil
}

// compact rewrites every part holding rows of items that no longer live
// in it with its live rows only (or removes it when none is left). The
// new part is recorded with the old one's removal in one transaction;
// the old file goes, then the new one is renamed in: a reader in between
// misses those rows for a moment rather than seeing them twice.
func (r *run) compact() error {
	names, err := r.store.partNames()
	if err != nil {
		return err
	}
	for _, name := range names {
		pr, ok, err := r.store.part(name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		live, err := r.store.liveRows(name, pr)
		if err != nil {
			return err
		}
		nLive := 0
		for _, l := range live {
			if l {
				nLive++
			}
		}
		if nLive == len(pr.Keys) {
			continue
		}
		oldPath := filepath.Join(r.o.Out, PartsDir, name)
		if nLive == 0 {
			if err := r.store.replaceParts([]string{name}, "", nil); err != nil {
				return err
			}
			if err := os.Remove(oldPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("index: %w", err)
			}
			if err := r.removeSidecar(name); err != nil {
				return err
			}
			continue
		}
		rows, err := r.liveRowsOf(name, pr)
		if err != nil {
			return err
		}
		keys := make([]Key, 0, nLive)
		for i, k := range pr.Keys {
			if live[i] {
				keys = append(keys, k)
			}
		}
		r.seq++
		newName := fmt.Sprintf("%s-g%06d-%06d.parquet", r.tag, r.gen, r.seq)
		pend := filepath.Join(r.o.Out, pendingDir, newName)
		if err := r.writeSidecarFor(newName, rows); err != nil {
			return err
		}
		if err := writePart(pend, rows); err != nil {
			return err
		}
		if err := r.store.replaceParts([]string{name}, newName, keys); err != nil {
			return err
		}
		if err := os.Remove(oldPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("index: %w", err)
		}
		if err := r.removeSidecar(name); err != nil {
			return err
		}
		if err := os.Rename(pend, filepath.Join(r.o.Out, PartsDir, newName)); err != nil {
			return fmt.Errorf("index: %w", err)
		}
	}
	return atomicfile.SyncDir(filepath.Join(r.o.Out, PartsDir))
}

// rowBytes estimates a row's memory: its vectors and strings.
func rowBytes(r *Row) int64 {
	n := int64(4*len(r.Embedding) + len(r.Text) + len(r.Path) + len(r.ID) + 128)
	for _, v := range r.Vectors {
		n += int64(4*len(v) + 24)
	}
	return n
}

// mergeSmallParts is how many small parts (under a quarter of PartRows)
// a shard may hold before they are merged: each incremental run adds a
// small part, and a dataset of thousands of tiny files reads slowly.
const mergeSmallParts = 8

// mergeSmall merges the shard's small parts, once there are
// mergeSmallParts of them, into parts of up to PartRows rows, each merge
// recorded in one transaction as compaction's are.
func (r *run) mergeSmall() error {
	names, err := r.store.partNames()
	if err != nil {
		return err
	}
	var small []string
	for _, n := range names {
		pr, ok, err := r.store.part(n)
		if err != nil {
			return err
		}
		if ok && len(pr.Keys) < max(1, r.o.PartRows/4) {
			small = append(small, n)
		}
	}
	if len(small) < mergeSmallParts {
		return nil
	}
	var group []string
	var rows []Row
	var keys []Key
	var held int64
	flush := func() error {
		defer func() { group, rows, keys, held = nil, nil, nil, 0 }()
		if len(group) < 2 {
			return nil
		}
		r.seq++
		name := fmt.Sprintf("%s-g%06d-%06d.parquet", r.tag, r.gen, r.seq)
		pend := filepath.Join(r.o.Out, pendingDir, name)
		if err := r.writeSidecarFor(name, rows); err != nil {
			return err
		}
		if err := writePart(pend, rows); err != nil {
			return err
		}
		if err := r.store.replaceParts(group, name, keys); err != nil {
			return err
		}
		for _, old := range group {
			if err := os.Remove(filepath.Join(r.o.Out, PartsDir, old)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("index: %w", err)
			}
			if err := r.removeSidecar(old); err != nil {
				return err
			}
		}
		if err := os.Rename(pend, filepath.Join(r.o.Out, PartsDir, name)); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		return atomicfile.SyncDir(filepath.Join(r.o.Out, PartsDir))
	}
	for _, n := range small {
		pr, ok, err := r.store.part(n)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		live, err := r.store.liveRows(n, pr)
		if err != nil {
			return err
		}
		prow, err := r.liveRowsOf(n, pr)
		if err != nil {
			return err
		}
		if len(group) > 0 && (len(rows)+len(prow) > r.o.PartRows || held >= r.o.PartBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		group = append(group, n)
		rows = append(rows, prow...)
		for i, k := range pr.Keys {
			if live[i] {
				keys = append(keys, k)
			}
		}
		for i := range prow {
			held += rowBytes(&prow[i])
		}
	}
	return flush()
}
