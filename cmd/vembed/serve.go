package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/imagefetch"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/search"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/server/searchpage"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/visionsvc"
)

// serveSummary names every route the server registers (TestHelpLines
// checks it against the server's routes; aliases are named by their
// target).
const serveSummary = "HTTP server: /v1/embeddings (OpenAI, Jina, vLLM, Infinity), /v2/embed /v2/rerank (Cohere), " +
	"/v1/rerank /v1/score /pooling (Jina, vLLM), /api/embed /api/embeddings (Ollama), /embed /embed_all /info (TEI), " +
	"/v1/models /v1/models/{id} /health /metrics /openapi.json; /v1/vision/encode with --role encoder; " +
	"/v1/search /v1/index /v1/pages/{id} and the search page / with --index"

func init() {
	register(&command{name: "serve", summary: serveSummary, run: runServe})
}

const serveUsage = `[--addr HOST:PORT] [--model LM.gguf [--mmproj MMPROJ.gguf] [--mvproj MV.gguf]] [--index DIR [--reranker RERANKER.gguf]]

Serves POST /v1/embeddings (OpenAI and Jina request forms), GET /v1/models
and GET /health. Without --model it serves a demonstration model with random
weights, generated at start-up.

Several replicas share their caches through Valkey or Redis with
--cache-url redis://HOST:6379/0. A replica started with --role encoder also
serves its vision encoder to the others; replicas started with
--encoder-url URL[,URL...] send it their images (keys first, pixels on a
miss) and encode locally whenever it fails or is slower than
--encoder-timeout. Set VEMBED_ENCODER_API_KEY when the encoders require a
key.

With --index DIR (a folder vembed index writes) it also serves POST
/v1/search, GET /v1/index, GET /v1/pages/{id} and the search page at /,
following the folder while a vembed index run writes into it. Without
--model it serves the index's own model (the files its manifest names, or
the demo model); a model of another identity is refused.`

// serveOptions is everything serve needs; tests fill it directly.
type serveOptions struct {
	addr   string
	models modelFlags
	name   string
	eng    engine.Config // limits; model paths come from models
	http   server.Options
	grace  time.Duration
	// keys and keyFile add to http.APIKeys (with VEMBED_API_KEY).
	keys    keyList
	keyFile string
	// urls is the image URL policy; fetching is on with allowURLs or
	// any allowed domain.
	urls      imagefetch.Policy
	allowURLs bool
	domains   string
	nets      string
	// ready, when set, receives the listening address once the server
	// accepts connections.
	ready func(addr string)
	// role is "lm" or "encoder"; encoders lists encoder replicas.
	role     string
	encoders string
	// index is the folder searched (--index); reranker and rerankMMProj
	// the reranker model of searches asking for "rerank".
	index, reranker, rerankMMProj string
	rerankDepth                   int
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", serveUsage, stderr)
	var o serveOptions
	o.models.pack = true
	o.models.register(fs)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&o.name, "name", "", "model name reported to clients (default: from the GGUF)")
	fs.IntVar(&o.eng.MaxTokens, "max-tokens", 0, fmt.Sprintf("longest accepted prompt in tokens (0: %d, never above the model's context length)", engine.DefaultMaxTokens))
	fs.DurationVar(&o.eng.StepTarget, "step-target", 0, "time a scheduler step aims at; short requests wait about one step behind bulk work (0: 1s)")
	fs.IntVar(&o.eng.MaxBatchTokens, "max-batch-tokens", 0, "most language-model tokens in one step (0: 8192)")
	fs.IntVar(&o.eng.MaxEncoderBatch, "max-encoder-batch", 0, "most merged image tokens in one vision pass (0: 4096)")
	fs.IntVar(&o.eng.FastLaneTokens, "fast-lane-tokens", 0, "requests with at most this many tokens go first (0: 256)")
	fs.Int64Var(&o.eng.EmbeddingCacheBytes, "embedding-cache", 0, "embedding cache in bytes; -1 disables (0: 256 MiB)")
	fs.Int64Var(&o.eng.EncoderCacheBytes, "encoder-cache", 0, "vision encoder output cache in bytes; -1 disables (0: 512 MiB)")
	fs.Int64Var(&o.eng.ImageCacheBytes, "image-cache", 0, "image file -> content key cache in bytes; -1 disables (0: 16 MiB)")
	fs.StringVar(&o.eng.CacheDir, "cache-dir", "", "keep the embedding cache on disk in this directory too")
	fs.Int64Var(&o.eng.DiskCacheBytes, "disk-cache", 0, "disk cache budget in bytes (0: 4 GiB)")
	fs.StringVar(&o.eng.CacheURL, "cache-url", "", "share the embedding and encoder caches with other replicas through Valkey/Redis at `URL` (redis://host:6379/0)")
	fs.DurationVar(&o.eng.CacheTTL, "cache-ttl", 0, "lifetime of shared cache entries (0: 7 days)")
	fs.IntVar(&o.eng.CacheMaxValue, "cache-max-value", 0, "largest value shared through --cache-url, in bytes after compression (0: 64 MiB)")
	fs.StringVar(&o.role, "role", "lm", "`role` of this replica: lm (embeddings) or encoder (also serves its vision encoder to lm replicas at "+visionsvc.Path+")")
	fs.StringVar(&o.encoders, "encoder-url", "", "comma-separated `URLs` of encoder replicas (--role encoder, same mmproj) that encode this replica's images; it encodes them itself when they fail")
	fs.DurationVar(&o.eng.EncoderTimeout, "encoder-timeout", 0, "longest wait for an encoder replica's answer before encoding locally (0: 60s)")
	fs.Int64Var(&o.eng.ImageBudgetBytes, "image-budget", 0, "memory for images being decoded or waiting for the vision tower, in bytes (0: 1 GiB)")
	fs.IntVar(&o.eng.PreprocessWorkers, "preprocess-workers", 0, "image decoding goroutines (0: GOMAXPROCS)")
	fs.IntVar(&o.eng.MaxImages, "max-images", 0, "most images per request (0: 32)")
	fs.IntVar(&o.eng.MaxPixels, "max-pixels", 0, "lower the model's resized-pixel budget per image, down to the model's minimum (0: the model's)")
	fs.Int64Var(&o.http.MaxBodyBytes, "max-body", 0, "largest request body in bytes (0: 64 MiB)")
	fs.Int64Var(&o.http.MaxInflightBytes, "max-inflight-bytes", 0, "request bytes held at once (bodies, images fetched from URLs); more get 429 (0: 512 MiB)")
	fs.IntVar(&o.http.MaxPending, "max-pending", 0, "requests admitted at once, running or queued; more get 429 (0: 64)")
	fs.DurationVar(&o.http.RequestTimeout, "request-timeout", 0, "longest time a request may compute; then 504 (0: 5m, negative: none)")
	fs.Var(&o.keys, "api-key", "require this API key (Authorization: Bearer KEY) on every route but /health; repeatable; also VEMBED_API_KEY")
	fs.StringVar(&o.keyFile, "api-key-file", "", "read API keys from `file`, one per line")
	fs.BoolVar(&o.http.MetricsPublic, "metrics-public", false, "serve /metrics without an API key")
	fs.BoolVar(&o.http.NoMetrics, "no-metrics", false, "turn /metrics off")
	fs.BoolVar(&o.allowURLs, "allow-image-urls", false, "fetch http(s) image URLs (public addresses only, unless --image-url-nets)")
	fs.StringVar(&o.domains, "image-url-domains", "", "fetch image URLs only from these comma-separated `domains` and their subdomains (turns fetching on)")
	fs.StringVar(&o.nets, "image-url-nets", "", "comma-separated `CIDRs` image URLs may reach although private or local")
	fs.Int64Var(&o.urls.MaxBytes, "image-url-max-bytes", 0, "largest image fetched from a URL (0: 32 MiB)")
	fs.DurationVar(&o.urls.Timeout, "image-url-timeout", 0, "time limit of one image download (0: 15s)")
	fs.StringVar(&o.index, "index", "", "also search this index `DIR` (vembed index --out): POST /v1/search, GET /v1/index, GET /v1/pages/{id} and the search page at /")
	fs.StringVar(&o.reranker, "reranker", "", "with --index: a reranker GGUF (Qwen3-VL-Reranker) for searches asking \"rerank\": it rescores the best hits on their text, or their page image where they have none")
	fs.StringVar(&o.rerankMMProj, "reranker-mmproj", "", "the reranker's vision tower (for pages without text)")
	fs.IntVar(&o.rerankDepth, "rerank-depth", 0, fmt.Sprintf("hits a reranked search rescores (0: %d, or top_k when larger)", server.DefaultRerankDepth))
	fs.DurationVar(&o.grace, "shutdown-grace", 30*time.Second, "how long running requests may finish on SIGINT/SIGTERM")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "vembed serve: unexpected argument %q\n", pos[0])
		return errUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal starts the graceful shutdown, a second one
		// kills the process the default way.
		<-ctx.Done()
		stop()
	}()
	return serve(ctx, o, slog.New(slog.NewTextHandler(stderr, nil)))
}

// serve loads the model (or builds the demo one) and serves until ctx ends.
func serve(ctx context.Context, o serveOptions, log *slog.Logger) error {
	cfg := o.eng
	cfg.Name = o.name
	keys, err := o.apiKeys()
	if err != nil {
		return err
	}
	fetcher, err := o.imageFetcher()
	if err != nil {
		return err
	}
	if o.models.model == "" && (o.models.mmproj != "" || o.models.mvproj != "") {
		return errors.New("--mmproj and --mvproj need --model")
	}
	if o.reranker != "" && o.index == "" {
		return errors.New("--reranker reranks searches: it needs --index")
	}
	var x *search.Index
	if o.index != "" {
		if x, err = search.Open(o.index, log); err != nil {
			return err
		}
		defer x.Close()
		m, cleanup, err := indexModel(ctx, &o.models, x, "serve", os.Stderr)
		defer cleanup()
		if err != nil {
			return err
		}
		cfg.Model, cfg.MMProj, cfg.MVProj, cfg.RandomWeights = m.Model, m.MMProj, m.MVProj, m.RandomWeights
		cfg.Name = cmpOr(cfg.Name, m.Name)
	} else if o.models.model == "" {
		dir, err := os.MkdirTemp("", "vembed-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := writeDemoModel(dir, &cfg); err != nil {
			return fmt.Errorf("building the demo model: %w", err)
		}
		log.Warn("no --model given: serving a DEMO model with RANDOM WEIGHTS; its embeddings carry no meaning", "name", cfg.Name)
	} else {
		if err := o.models.resolveRefs(ctx, os.Stderr, log); err != nil {
			return err
		}
		m := o.models.config()
		cfg.Model, cfg.MMProj, cfg.MVProj = m.Model, m.MMProj, m.MVProj
	}
	if err := o.distributed(&cfg); err != nil {
		return err
	}
	o.models.applyPacking()
	eng, err := loadEngine(os.Stderr, cfg)
	if errors.Is(err, engine.ErrPixelBudget) {
		return fmt.Errorf("--max-pixels: %w", err)
	} else if err != nil {
		return err
	}
	defer eng.Close()
	if o.role == "encoder" && !slices.Contains(eng.Info().Modalities, "image") {
		return errors.New("--role encoder needs a model with a vision tower (--mmproj)")
	}
	info := eng.Info()
	if x != nil {
		if err := checkIndexModel(info, x); err != nil {
			return err
		}
	}
	log.Info("model loaded", "name", info.Name, "arch", info.Arch, "dimensions", info.Hidden,
		"context", info.ContextLength, "modalities", info.Modalities, "multivector", info.MultivectorDim, "random_weights", info.RandomWeights,
		"kernel_tier", kernels.Active(), "packed_weight_bytes", kernels.PackedBytes())

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	log.Info("listening", "addr", "http://"+ln.Addr().String())
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	hopts := o.http
	hopts.Logger = log
	hopts.APIKeys = keys
	hopts.ImageFetcher = fetcher
	hopts.MaxImageURLs = cfg.MaxImages // a request with more images fails anyway
	if o.role == "encoder" {
		hopts.Vision = eng
	}
	if x != nil {
		so, closeSearch, err := o.searchOptions(x, log)
		if err != nil {
			return err
		}
		defer closeSearch()
		hopts.Search = so
		in := x.Info()
		log.Info("searching the index", "dir", o.index, "items", in.Items, "multivector", in.Multivector, "dims", in.Dims, "parts", in.Parts)
	}
	grace := o.grace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	go releaseMemory(ctx, eng)
	// On the signal the engine drains while the HTTP server stops taking
	// connections: queued requests are answered "shutting down" at once,
	// running ones get the grace period, and every handler returns before
	// Run does.
	drained := make(chan error, 1)
	go func() {
		<-ctx.Done()
		dctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		drained <- eng.Shutdown(dctx)
	}()
	if err := server.Run(ctx, ln, server.New(eng, hopts), log, grace+5*time.Second); err != nil {
		return err
	}
	if err := <-drained; err != nil {
		log.Warn("requests still running at the end of the grace period were stopped", "grace", grace)
	}
	return nil
}

// distributed checks --role and --encoder-url and puts the encoder
// replicas in cfg; their API key comes from VEMBED_ENCODER_API_KEY.
func (o *serveOptions) distributed(cfg *engine.Config) error {
	switch o.role {
	case "", "lm":
	case "encoder":
		if o.encoders != "" {
			return errors.New("--encoder-url is for lm replicas, not --role encoder")
		}
	default:
		return fmt.Errorf("--role %q: want lm or encoder", o.role)
	}
	for _, u := range strings.Split(o.encoders, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.EncoderURLs = append(cfg.EncoderURLs, u)
		}
	}
	cfg.EncoderAPIKey = strings.TrimSpace(os.Getenv("VEMBED_ENCODER_API_KEY"))
	return nil
}

// imageFetcher builds the image URL fetcher the flags ask for, or nil.
func (o *serveOptions) imageFetcher() (*imagefetch.Fetcher, error) {
	p := o.urls
	for _, d := range strings.Split(o.domains, ",") {
		if d = strings.TrimSpace(d); d != "" {
			p.AllowDomains = append(p.AllowDomains, d)
		}
	}
	for _, n := range strings.Split(o.nets, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(n)
		if err != nil {
			return nil, fmt.Errorf("--image-url-nets: %w", err)
		}
		p.AllowNets = append(p.AllowNets, pfx)
	}
	if !o.allowURLs && len(p.AllowDomains) == 0 {
		if len(p.AllowNets) > 0 {
			return nil, errors.New("--image-url-nets needs --allow-image-urls or --image-url-domains")
		}
		return nil, nil
	}
	return imagefetch.New(p), nil
}

// keyList collects repeated --api-key flags.
type keyList []string

func (k *keyList) String() string { return fmt.Sprintf("%d keys", len(*k)) }

func (k *keyList) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("an API key may not be blank")
	}
	*k = append(*k, s)
	return nil
}

// apiKeys gathers the keys of --api-key, --api-key-file and VEMBED_API_KEY.
func (o *serveOptions) apiKeys() ([]string, error) {
	keys := append([]string(nil), o.keys...)
	if o.keyFile != "" {
		fk, err := server.ReadKeyFile(o.keyFile)
		if err != nil {
			return nil, err
		}
		keys = append(keys, fk...)
	}
	if env := strings.TrimSpace(os.Getenv("VEMBED_API_KEY")); env != "" {
		keys = append(keys, env)
	}
	return keys, nil
}

// releaseMemory hands freed heap back to the system once the engine has
// gone idle after work: Go's scavenger returns it only slowly, and a burst
// of large images would otherwise leave gigabytes resident for minutes.
func releaseMemory(ctx context.Context, eng *engine.Engine) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	var lastDone int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := eng.Stats()
		if s.QueuedRequests == 0 && s.RunningRequests == 0 && s.Requests != lastDone {
			lastDone = s.Requests
			debug.FreeOSMemory()
		}
	}
}

// writeDemoModel writes the tiny synthetic model pair and its multi-vector
// projector into dir and points cfg at them.
func writeDemoModel(dir string, cfg *engine.Config) error {
	m, err := synth.WriteDemo(dir)
	if err != nil {
		return err
	}
	cfg.Model, cfg.MMProj, cfg.MVProj = m.LM, m.MMProj, m.MVProj
	cfg.RandomWeights = true
	if cfg.Name == "" {
		cfg.Name = "vembed-demo-tiny-random-weights"
	}
	return nil
}

// searchOptions are the search routes' options: the index followed every
// second, its pages, the reranker when given.
func (o *serveOptions) searchOptions(x *search.Index, log *slog.Logger) (*server.SearchOptions, func(), error) {
	stop := make(chan struct{})
	go x.Follow(stop, time.Second)
	pages := search.NewPages(x, nil)
	so := &server.SearchOptions{Index: x, Pages: pages, Request: indexRequest(x), RerankDepth: o.rerankDepth, Page: searchpage.Handler()}
	closeFn := func() {
		close(stop)
		pages.Close()
	}
	if o.reranker != "" {
		rr, err := loadEngine(os.Stderr, engine.Config{Model: o.reranker, MMProj: o.rerankMMProj})
		if err != nil {
			closeFn()
			return nil, nil, fmt.Errorf("--reranker: %w", err)
		}
		if !rr.Info().Reranker {
			rr.Close()
			closeFn()
			return nil, nil, fmt.Errorf("--reranker: %s is not a reranker model", rr.Info().Name)
		}
		log.Info("reranker loaded", "name", rr.Info().Name)
		so.Reranker = rr
		inner := closeFn
		closeFn = func() { inner(); rr.Close() }
	}
	return so, closeFn, nil
}
