package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/index/pgsink"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/pdf"
	"github.com/vembed/vembed/tokenizer"
)

func init() {
	register(&command{name: "index", summary: "embed folders of PDFs, images and text into a Parquet dataset (resumable, sharded)", run: runIndex})
}

const indexUsage = `PATH... --out DIR [--model LM.gguf [--mmproj MMPROJ.gguf] [--mvproj MV.gguf]]
       [--task T | --instruction TEXT] [--dimensions N] [--multivector [--sidecar float32|float16]]
       [--min-pixels N] [--max-pixels N] [--dpi N] [--password P] [--follow-symlinks]
       [--from-jsonl FILE]... [--from-parquet FILE|DIR]... [--chunk-tokens N] [--shard I/N | --shards N] [--sink postgres://...] [--json-progress FILE|-]

Walks the files and folders given (each folder's entries in name order;
hidden folders skipped) and embeds every page of each PDF (rendered with
PDFium, WebAssembly-sandboxed, at --dpi; its text layer kept), every image
(.png .jpg .jpeg .gif .webp .bmp .tif .tiff), every text file (.txt .md,
as passages of at most --chunk-tokens tokens of the model's tokenizer, cut
at paragraphs, then sentences, then within a sentence) and every record
of the --from-jsonl and --from-parquet tables (id, text and/or image).
Writes DIR/parts/*.parquet (one row per item: id, path, page, sha256,
model, width, height, text, embedding or multivector) and
DIR/manifest-IofN.json; DIR/state-IofN.db records the finished items, so a
run stopped at any moment continues where it was, and a later run embeds
only what changed and removes what is gone. Inputs that cannot be indexed
are listed with the reason at the end. Without --model the built-in demo
model (random weights) embeds.`

func runIndex(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("index", indexUsage, stderr)
	// Many passes over one model: packing pays (the same bits, less CPU).
	mf := modelFlags{pack: true}
	mf.register(fs)
	out := fs.String("out", "", "the index `DIR` (created if absent)")
	task := fs.String("task", "", "task of every item (default: retrieval: passages for texts and images)")
	instruction := fs.String("instruction", "", "the instruction of models that take one instead of a task (default: the model's)")
	dims := fs.Int("dimensions", 0, "Matryoshka truncation of single vectors (0: full width)")
	multi := fs.Bool("multivector", false, "one vector per token (needs a projector): the dataset's multivector column")
	sidecar := fs.String("sidecar", "float32", "element type of the multi-vector sidecars search maps: float32 (exact search equals eval bit for bit) or float16 (half the disk; values rounded to nearest even)")
	minPix := fs.Int("min-pixels", 0, "lower bound of the resized image area, within the model's bounds (0: the model's minimum)")
	maxPix := fs.Int("max-pixels", 0, "upper bound of the resized image area, within the model's bounds (0: the model's maximum)")
	var jsonl, pq []string
	fs.Func("from-jsonl", "a JSON-lines table of records {\"id\", \"text\", \"image\" (path, data URI or base64)} (repeatable)", func(s string) error { jsonl = append(jsonl, s); return nil })
	fs.Func("from-parquet", "a Parquet table (a file, or a folder of .parquet shards) of records: id, text, image (bytes or {bytes, path}) or image_path (repeatable)", func(s string) error { pq = append(pq, s); return nil })
	chunkTokens := fs.Int("chunk-tokens", 512, "longest text passage, in tokens of the model's tokenizer")
	shard := fs.String("shard", "", "this worker's part `I/N` of the corpus (items split by the hash of their key)")
	shards := fs.Int("shards", 0, "split into `N` shards, this worker's from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	inflight := fs.Int("inflight", 0, "items inside the engine at once, batched together (0: 4 per core, at least 8)")
	partRows := fs.Int("part-rows", 256, "rows per Parquet part file")
	maxFile := fs.Int64("max-file-bytes", 512<<20, "largest input file")
	jsonProgress := fs.String("json-progress", "", "write progress as JSON lines to `FILE` (- for stderr) every --progress-every and at the end")
	progressEvery := fs.Duration("progress-every", time.Second, "interval of the progress reports")
	sinkURL := fs.String("sink", "", "also upsert the rows into PostgreSQL with pgvector at this `URL` (postgres://...)")
	pgTable := fs.String("pg-table", "", "the PostgreSQL items' table (default vembed_items; multi-vector rows in NAME_vectors)")
	pgHalf := fs.Bool("pg-halfvec", false, "halfvec(N) columns instead of vector(N)")
	pgHNSW := fs.Bool("pg-hnsw", false, "create an HNSW index (cosine) on the single-vector column")
	followLinks := fs.Bool("follow-symlinks", false, "follow symbolic links to files outside the folders given (by default such links are reported and passed over: the server's page route serves the files an index names)")
	dpi := fs.Float64("dpi", pdf.DefaultDPI, "resolution PDF pages are rendered at, before the model's own resizing (200: pdf2image's default, which the ColPali-style pipelines feed their models)")
	password := fs.String("password", "", "password of encrypted PDFs (others are reported as not indexed)")
	pdfWorkers := fs.Int("pdf-workers", 0, "PDF documents open at once, each in its own PDFium sandbox (0: one per core)")
	cacheURL := fs.String("cache-url", "", "share the embedding and encoder caches with other workers through Valkey/Redis at `URL`")
	encoders := fs.String("encoder-url", "", "comma-separated `URLs` of encoder replicas (vembed serve --role encoder, same mmproj) that encode the images")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError(fs, stderr, "--out DIR is required")
	}
	if len(paths) == 0 && len(jsonl) == 0 && len(pq) == 0 {
		return usageError(fs, stderr, "nothing to index: give files or folders, --from-jsonl or --from-parquet")
	}
	si, sn, err := parseShard(*shard, *shards)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if !(*dpi > 0) || *dpi > 2400 {
		return usageError(fs, stderr, "--dpi %g: want 0 < DPI <= 2400", *dpi)
	}
	if *chunkTokens < 1 {
		return usageError(fs, stderr, "--chunk-tokens must be positive")
	}
	sidecarType, err := index.ParseSidecarType(*sidecar)
	if err != nil {
		return usageError(fs, stderr, "--sidecar: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	if mf.model == "" && (mf.mmproj != "" || mf.mvproj != "") {
		return usageError(fs, stderr, "--mmproj and --mvproj need --model")
	}
	cfg, cleanup, err := mf.resolve(ctx, "index", stderr)
	defer cleanup()
	if err != nil {
		return err
	}
	// The model's identity is part of every item's key: hash the files (a
	// few seconds for a large model, once per run).
	modelID, err := index.ModelIdentity(kernels.Arithmetic(), cfg.Model, cfg.MMProj, cfg.MVProj)
	if err != nil {
		return err
	}
	count, err := tokenCounter(cfg.Model)
	if err != nil {
		return err
	}
	mf.applyPacking()
	cfg = oneCaller(cfg)
	cfg.CacheURL = *cacheURL
	for _, u := range strings.Split(*encoders, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.EncoderURLs = append(cfg.EncoderURLs, u)
		}
	}
	cfg.EncoderAPIKey = strings.TrimSpace(os.Getenv("VEMBED_ENCODER_API_KEY"))
	eng, err := loadEngine(stderr, cfg)
	if err != nil {
		return err
	}
	defer eng.Close()
	info := eng.Info()
	if info.Reranker {
		return fmt.Errorf("vembed index: %s is a reranker: it scores pairs and makes no embeddings", info.Name)
	}
	if *multi && info.MultivectorDim == 0 {
		return usageError(fs, stderr, "--multivector: %s has no multi-vector projector (give --mvproj)", info.Name)
	}
	if *chunkTokens > info.ContextLength {
		return usageError(fs, stderr, "--chunk-tokens %d is over the model's context of %d tokens", *chunkTokens, info.ContextLength)
	}
	opts := index.Options{
		Out: *out, Paths: paths, JSONL: jsonl, Parquet: pq, Shard: si, Shards: sn, FollowSymlinks: *followLinks,
		Request:     engine.Request{Task: *task, Instruction: *instruction, Dimensions: *dims, Multivector: *multi, MinPixels: *minPix, MaxPixels: *maxPix},
		ChunkTokens: *chunkTokens, Count: count, Sidecar: sidecarType,
		ModelID: modelID, ModelName: info.Name, Arithmetic: kernels.Arithmetic(),
		DPI: *dpi, Password: *password,
		PDF: func() (*pdf.Renderer, error) {
			return pdf.NewRenderer(pdf.Options{Workers: *pdfWorkers, MaxBytes: *maxFile})
		},
		InFlight: *inflight, PartRows: *partRows, ProgressEvery: *progressEvery, MaxFileBytes: *maxFile, Log: log,
	}
	if opts.InFlight <= 0 {
		opts.InFlight = max(8, 4*runtime.GOMAXPROCS(0))
	}
	if mf.model != "" {
		// The manifest names the files, so that a search loads them.
		for _, f := range []string{cfg.Model, cfg.MMProj, cfg.MVProj} {
			if f != "" {
				if abs, err := filepath.Abs(f); err == nil {
					f = abs
				}
			}
			opts.ModelFiles = append(opts.ModelFiles, f)
		}
	}
	if *task == "" && *instruction == "" && !info.Instruction && hasTask(info, "retrieval.passage") {
		opts.TextTask = "retrieval.passage" // a corpus's texts are passages, not queries
	}
	if *sinkURL != "" {
		po := pgsink.Options{Table: *pgTable, HalfVec: *pgHalf, HNSW: *pgHNSW}
		if *multi {
			po.MultiDimensions = info.MultivectorDim
		} else if po.Dimensions = *dims; po.Dimensions == 0 {
			po.Dimensions = info.Hidden
		}
		s, err := pgsink.Open(ctx, *sinkURL, po)
		if err != nil {
			return err
		}
		defer s.Close()
		opts.Sinks = []index.NamedSink{{Name: sinkName(*sinkURL, cmpOr(*pgTable, pgsink.DefaultTable)), Sink: s}}
	}
	progress, closeProgress, err := indexProgress(stderr, *jsonProgress)
	if err != nil {
		return err
	}
	opts.Progress = progress
	sum, err := index.Run(ctx, eng, opts)
	closeProgress()
	if sum != nil {
		printIndexSummary(stdout, sum, opts)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("vembed index: interrupted; finished items are kept, run again to continue")
	}
	return err
}

func hasTask(info engine.Info, t string) bool {
	for _, x := range info.Tasks {
		if x == t {
			return true
		}
	}
	return false
}

// parseShard reads --shard I/N, or --shards N with the index from
// JOB_COMPLETION_INDEX.
func parseShard(shard string, shards int) (int, int, error) {
	if shard != "" && shards != 0 {
		return 0, 0, errors.New("give --shard I/N or --shards N, not both")
	}
	if shard != "" {
		a, b, ok := strings.Cut(shard, "/")
		i, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
			return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 <= I < N", shard)
		}
		return i, n, nil
	}
	if shards == 0 {
		return 0, 1, nil
	}
	if shards < 0 {
		return 0, 0, fmt.Errorf("--shards %d: want N >= 1", shards)
	}
	v, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
	if !ok {
		return 0, 0, errors.New("--shards needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job), or use --shard I/N")
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || i < 0 || i >= shards {
		return 0, 0, fmt.Errorf("JOB_COMPLETION_INDEX=%q: want 0 <= I < %d", v, shards)
	}
	return i, shards, nil
}

// tokenCounter counts a text's tokens with the model's tokenizer (no
// special tokens: the text as the prompt holds it).
func tokenCounter(model string) (func(string) int, error) {
	f, err := gguf.Open(model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
	if err != nil {
		return nil, fmt.Errorf("tokenizer of %s: %w", model, err)
	}
	return func(s string) int { return len(tok.Encode(s, false)) }, nil
}

// indexBarVisible reports whether the progress bar is drawn on w (a
// terminal); tests draw it into a buffer.
var indexBarVisible = isTerminal

// indexProgress returns the run's progress callback: a bar on a terminal
// and JSON lines to the --json-progress file.
func indexProgress(stderr io.Writer, jsonPath string) (func(index.Progress), func(), error) {
	var jw io.Writer
	var jf *os.File
	switch jsonPath {
	case "":
	case "-":
		jw = stderr
	default:
		f, err := os.Create(jsonPath)
		if err != nil {
			return nil, nil, fmt.Errorf("--json-progress: %w", err)
		}
		jf, jw = f, f
	}
	// The bar runs over the input files' bytes (the walk's position, a few
	// items ahead of the embedding), which the walk knows from the start,
	// so its rate and ETA are there before the page count is; inside a
	// PDF the walk advances page by page, inside a table record by record.
	var bar *progressbar.ProgressBar
	visible := indexBarVisible(stderr)
	var mu sync.Mutex
	fn := func(p index.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if visible {
			if bar == nil {
				bar = newBarOn(stderr, max(p.BytesTotal, 1), "indexing", true, true)
			}
			// The position first: Describe draws the bar at once, Set64
			// only when its throttle allows.
			bar.Set64(p.BytesWalked)
			bar.Describe(fmt.Sprintf("%d items, %.2f pages/s, %.0f tokens/s, %.1f CPU-s/item", p.Done, p.PagesPerS, p.TokensPerS, p.CPUPerItem))
		}
		if jw != nil {
			b, _ := json.Marshal(p)
			jw.Write(append(b, '\n'))
		}
	}
	closeFn := func() {
		mu.Lock()
		defer mu.Unlock()
		if bar != nil {
			bar.Finish()
		}
		if jf != nil {
			jf.Close()
		}
	}
	return fn, closeFn, nil
}

func printIndexSummary(w io.Writer, s *index.Summary, o index.Options) {
	p := s.Progress
	fmt.Fprintf(w, "indexed %d items (%d pages and images, %d texts) in %.1f s: %.3f pages/s, %.3f items/s, %.0f tokens/s, %.3g CPU-s per item\n",
		p.Done, p.Pages, p.Texts, p.Elapsed, p.PagesPerS, p.ItemsPerS, p.TokensPerS, p.CPUPerItem)
	fmt.Fprintf(w, "shard %d/%d: %d items in %s; %d unchanged, %d duplicates, %d removed, %d not indexed\n",
		o.Shard, max(o.Shards, 1), s.Items, o.Out, p.Skipped, p.Duplicates, p.Removed, p.Bad)
	if p.Pages > 0 {
		fmt.Fprintf(w, "%.3g CPU-s per page (all of the run's CPU time over its %d pages and images)\n", p.CPUPerPage, p.Pages)
	}
	if s.DeletionSkipped != "" {
		fmt.Fprintf(w, "nothing removed: %s\n", s.DeletionSkipped)
	}
	for i, pr := range s.Problems {
		if i == 50 {
			fmt.Fprintf(w, "  ... and %d more (see the log)\n", len(s.Problems)-i)
			break
		}
		if pr.Page > 0 {
			fmt.Fprintf(w, "  not indexed: %s page %d: %s\n", pr.Path, pr.Page, pr.Reason)
		} else {
			fmt.Fprintf(w, "  not indexed: %s: %s\n", pr.Path, pr.Reason)
		}
	}
}

// sinkName is the name under which the store tracks what a PostgreSQL
// sink has acknowledged: the table and a digest of the URL, so that another
// database gets every row.
func sinkName(url, table string) string {
	sum := sha256.Sum256([]byte(url))
	return fmt.Sprintf("postgres:%s@%x", table, sum[:6])
}
