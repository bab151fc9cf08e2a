// Package server is vembed's HTTP API: an OpenAI- and Jina-compatible
// POST /v1/embeddings over an engine, plus GET /v1/models, GET /health and
// GET /metrics.
//
// # POST /v1/embeddings
//
// Request fields (a field the route does not know, at the top level or in
// an input item, is a 400 naming it, on every route; a known field of the
// wrong type is a 400 naming it too):
//
//	input               string | list; each list element is one input:
//	                    "text", {"text": …}, {"image": <base64 | data URI>},
//	                    {"content": [part, …]} or [part, …] (interleaved),
//	                    where a part is {"text": …}, {"image": …},
//	                    {"type": "text", "text": …} or
//	                    {"type": "image_url", "image_url": {"url": <data URI>}};
//	                    or, expert mode, {"template": "<prompt with
//	                    <|vision_start|><|image_pad|><|vision_end|> per image>",
//	                    "images": [...]}
//	model, user         accepted and ignored (one model per server)
//	task                retrieval.query | retrieval.passage | text-matching |
//	                    code.query | code.passage (default: retrieval, query
//	                    prompt for text, passage for inputs with images);
//	                    models that take an instruction (Qwen3-VL-Embedding)
//	                    refuse it with a message saying so
//	instruction         the instruction of such models (a system message,
//	                    e.g. "Retrieve images or text relevant to the user's
//	                    query."; default "Represent the user's input.")
//	dimensions          Matryoshka size (see GET /v1/models)
//	encoding_format     float | base64 | binary | ubinary | int8 | uint8
//	                    (alias: embedding_type)
//	embedding_type      also Jina's list of types: each vector is then an
//	                    object with one encoding per type
//	return_multivector  one 128-d vector per token, in data[i].embeddings
//	pool_factor         with return_multivector: cluster each input's
//	                    vectors down to max(n/pool_factor, 1), as
//	                    colpali-engine's hierarchical token pooling does
//	per_span            also one vector per image span, in data[i].span_embeddings
//	normalized          false skips L2 normalization (alias: normalize)
//	min_pixels, max_pixels  per-request image budget, each within the
//	                    model's own bounds (400 otherwise)
//	truncate            true cuts texts longer than the model's limit
//	                    instead of refusing them (Jina's field)
//
// base64 is the standard base64 of the little-endian float32 array; with
// return_multivector each row is encoded on its own. ubinary packs one bit
// per dimension (1 when > 0), first dimension in the most significant bit,
// as numbers 0…255; binary is the same bytes minus 128. int8 is the vector
// scaled so that its largest magnitude is 127 and rounded, uint8 the same
// plus 128 (Cohere documents no rule for these; see encode.go). An http or https
// URL in any image field is fetched only with Options.ImageFetcher (vembed
// serve --allow-image-urls or --image-url-domains), under package
// imagefetch's policy: public addresses only unless allowed, every address
// checked at resolution, at connection and on each redirect, bounded size
// and time, content sniffed as an image; each refusal is a 400 naming the
// reason. usage.prompt_tokens counts language-model tokens including the
// image placeholder tokens.
//
// Errors have the OpenAI shape {"error": {"message", "type", "param",
// "code"}}, plus "request_id" (the answer's X-Request-ID): 400 for bad
// input (invalid JSON or UTF-8, empty input, broken base64, undecodable
// image, unknown task, bad dimensions, input longer than the context,
// vision special tokens in text, a refused or failed image URL), 401
// without a valid API key, 413 for an over-limit body or image, 429 with
// Retry-After when too many requests are pending or the engine's queue is
// full, 503 with Retry-After while shutting down, 504 past the request
// deadline, 500 for engine failures.
//
// Fields that other servers' clients send and that cannot change a result
// are accepted and ignored on purpose, and only these: "model" (one model
// per server), OpenAI's "user" (an end-user id for abuse monitoring),
// Ollama's "keep_alive" and "options" (the model stays loaded; an
// embedding has no generation options) and Cohere's "priority" (a
// scheduling hint; requests are served in arrival order).
//
// # Production
//
// A request body is read in full (bounded by MaxBodyBytes and Run's
// 2-minute read timeout) before the request takes one of the MaxPending
// slots, so clients that send slowly hold connections, never slots. Its
// buffer grows as bytes arrive, never past them or the declared length,
// and is charged to MaxInflightBytes with the images fetched from URLs
// until the request is answered (429 past it), so request data held at
// once is bounded whatever clients declare or how slowly they send. A
// body holding a text over the model's limit is refused before its JSON
// is decoded. Each request runs under RequestTimeout (default 5 minutes);
// past it, or when its client goes away, it stops computing at the
// engine's next step. Image memory is the engine's to bound
// (engine.Config.ImageBudgetBytes, admitted from image headers). Refusals
// under overload are logged once per interval with their count, not once
// per request. Run shuts down gracefully: running requests get the grace
// period, connections with no request in progress are then closed, and
// it reports an error only when a request was still running.
//
// With APIKeys set, every route but GET /health (and GET /metrics with
// MetricsPublic) needs "Authorization: Bearer KEY"; keys are compared as
// SHA-256 digests in constant time. Every response carries X-Request-ID
// (the client's, when it is a printable token of at most 128 bytes, else a
// new one), which also tags the request's log line and error bodies.
// Every route registered through the handler's one registration function
// gets the key check, the metrics and the request ID.
//
// GET /metrics serves Prometheus metrics: vembed_http_requests_total (by
// route and code), vembed_http_request_duration_seconds (by route),
// vembed_http_requests_in_flight, vembed_http_inflight_bytes (request
// bytes held, against MaxInflightBytes); from the engine at scrape time
// vembed_engine_queued_requests (the queue depth),
// vembed_engine_running_requests, vembed_engine_inflight_bytes, counters
// of requests, cancellations, steps, LM tokens, images and patches, the
// histograms vembed_engine_step_lm_tokens, _step_patches, _step_seconds
// and _queue_seconds, and per cache (label cache) hits, misses,
// evictions, entries, bytes and capacity; plus the Go and process
// collectors.
//
// # Other API shapes
//
// The same engine answers the forms other servers' clients send; every
// input field below takes any element form of "input":
//
//	POST /v1/embeddings   also vLLM's chat form {"messages": [{"role":
//	                      "user", "content": string | [parts]}]} (one
//	                      input of all parts) and Infinity's
//	                      {"modality": "image"} (each input string an image)
//	POST /pooling         vLLM: the body of /v1/embeddings (every field),
//	                      answered {"data": [{"index", "object": "pooling",
//	                      "data"}]}, data in the encoding asked
//	POST /api/embed       Ollama: {"model", "input", "truncate" (default
//	                      true: long texts are cut), "dimensions",
//	                      "keep_alive" and "options" (ignored)} ->
//	                      {"model", "embeddings",
//	                      "total_duration", "load_duration",
//	                      "prompt_eval_count"}
//	POST /api/embeddings  Ollama's older {"prompt"} -> {"embedding"}
//	POST /embed           text-embeddings-inference: {"inputs",
//	                      "normalize", "truncate", "dimensions",
//	                      "prompt_name" (a task)} -> [[…], …]
//	POST /embed_all       TEI: every token's vector, here the multi-vector
//	                      rows (needs a multi-vector projector)
//	GET  /info            TEI's model description
//	GET  /v1/models/{id}  one model card (404 for another id)
//	GET  /openapi.json    an OpenAPI 3.1 document of every route
//	POST /v2/embed        Cohere v2: {"model", "input_type", one of
//	                      "texts", "images" (data URIs) and "inputs"
//	                      ([{"content": [{"type": "text", "text"},
//	                      {"type": "image_url", "image_url": {"url"}}]}]),
//	                      "embedding_types" (float, int8, uint8, binary,
//	                      ubinary, base64; default float),
//	                      "output_dimension", "max_tokens", "truncate"
//	                      (END, the default, cuts long texts; START drops
//	                      their first tokens; NONE refuses them),
//	                      "priority"} -> {"id",
//	                      "response_type": "embeddings_by_type",
//	                      "embeddings": {type: [vector, …]}, "texts",
//	                      "meta"}. input_type is mapped by the model's
//	                      recipe (recipe.ForInputType): jina-embeddings-v4
//	                      search_query -> retrieval.query, search_document
//	                      and image -> retrieval.passage, classification
//	                      and clustering -> text-matching; Qwen3-VL-
//	                      Embedding search_query -> the model card's
//	                      retrieval instruction, documents the default;
//	                      GME and ColQwen their retrieval defaults;
//	                      ColQwen3 and nemotron queries and pages; what a
//	                      model has no notion of is a 400 naming input_type
//	POST /v2/rerank       Cohere v2: {"model", "query", "documents",
//	                      "top_n", "max_tokens_per_doc" (documents are cut
//	                      to it, default 4096 or the model's limit),
//	                      "priority"} -> {"id", "results": [{"index",
//	                      "relevance_score"}] best first, "meta"}
//	POST /v1/rerank, /rerank  Jina and Cohere v1 (vLLM serves
//	                      the same): {"query", "documents": [string |
//	                      item] or vLLM's {"content": [part, …]} (each
//	                      part one document), "top_n", "return_documents"
//	                      (default true), "multivector", "instruction"} ->
//	                      {"results": [{"index", "relevance_score",
//	                      "document"}] best first, "usage"}; "top_n" 0 or
//	                      absent: every document. text-embeddings-
//	                      inference's {"query", "texts", "return_text",
//	                      "raw_scores", "truncate"} is answered with its
//	                      bare list [{"index", "score", "text"}] best first
//	POST /v1/score, /score  vLLM: {"text_1", "text_2", "multivector"}: one
//	                      text_1 against each text_2, or lists pair by pair
//	                      -> {"data": [{"index", "object": "score", "score"}]}
//
// A rerank or score request takes at most 1000 documents
// (engine.MaxRerankDocuments, or MaxInputs when lower); more is a 400.
// With an embedding model, the query is embedded with the model's query
// task (and the rerank "instruction", for models that take one) and the
// documents with its passage task, and a score is the cosine of the two
// vectors, or with "multivector": true the MaxSim of their multi-vectors.
// A reranker model (Qwen3-VL-Reranker; GET /v1/models) scores each pair
// itself, through the Reranker interface: the score is its P(yes) (with
// "raw_scores", the logit log(p/(1−p))), the rerank "instruction" is its
// instruction, and "multivector" and "truncate" are refused.
//
// # GET /v1/models
//
// One OpenAI model entry with vembed's additions: architecture, modalities,
// dimensions (full width), matryoshka_dimensions (null: any size from 1 to
// the full width), multivector_dimension, tasks, context_length,
// min_pixels, max_pixels and random_weights (true for the demo model).
package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/imagefetch"
	"github.com/vembed/vembed/internal/clip"
)

// Embedder computes embeddings; *engine.Engine implements it.
type Embedder interface {
	Embed(ctx context.Context, req engine.Request) (*engine.Response, error)
	Info() engine.Info
}

// Options configures a Handler. Zero fields take the defaults below.
type Options struct {
	// MaxBodyBytes bounds a request body (default 64 MiB); larger bodies
	// get 413.
	MaxBodyBytes int64
	// MaxInputs bounds the inputs of one request (default 2048, OpenAI's).
	MaxInputs int
	// MaxPending bounds the requests admitted at once, running or waiting
	// for the engine (default 64); beyond it requests get 429. A request
	// is admitted only once its body has been read, so slow senders
	// cannot hold the slots.
	MaxPending int
	// RequestTimeout bounds a request's time in the engine (default 5
	// minutes; negative: none); past it the request stops computing and
	// gets 504.
	RequestTimeout time.Duration
	// APIKeys, when any, are required on every route but /health (and
	// /metrics when MetricsPublic) as "Authorization: Bearer KEY".
	APIKeys []string
	// MaxInflightBytes bounds the request bytes held at once, bodies as
	// they arrive and images fetched from URLs, until their requests are
	// answered (default 512 MiB, never below MaxBodyBytes); past it
	// requests get 429.
	MaxInflightBytes int64
	// MaxImageURLs bounds the image URLs of one request (default 32, the
	// engine's default image limit).
	MaxImageURLs int
	// MetricsPublic serves /metrics without a key.
	MetricsPublic bool
	// NoMetrics turns /metrics and its bookkeeping off.
	NoMetrics bool
	// ImageFetcher, when set, fetches http and https image URLs under its
	// policy; without one they are refused.
	ImageFetcher *imagefetch.Fetcher
	// Logger receives one line per request (default slog.Default()).
	Logger *slog.Logger
	// Vision, when set, serves POST /v1/vision/encode to other replicas
	// (vembed serve --role encoder).
	Vision VisionEncoder
	// Search, when set, serves POST /v1/search, GET /v1/index and GET
	// /v1/pages/{id} over an index (vembed serve --index), and GET / when
	// it has a page.
	Search *SearchOptions
}

const (
	defaultInflight   = 512 << 20
	defaultImageURLs  = 32
	defaultMaxBody    = 64 << 20
	defaultMaxInputs  = 2048
	defaultMaxPending = 64
	defaultTimeout    = 5 * time.Minute
)

// Handler serves the API over an Embedder.
type Handler struct {
	emb     Embedder
	opts    Options
	log     *slog.Logger
	pending chan struct{}
	mux     *http.ServeMux
	routes  []string // "METHOD /path" patterns, as registered
	keys    *keyring // nil: no keys required
	metrics *metrics
	refused refusalLog
	held    byteBudget // request bytes held (Options.MaxInflightBytes)
}

// New returns the API handler.
func New(emb Embedder, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = defaultMaxBody
	}
	if opts.MaxInputs <= 0 {
		opts.MaxInputs = defaultMaxInputs
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = defaultMaxPending
	}
	opts.MaxInflightBytes = max(cmp.Or(opts.MaxInflightBytes, defaultInflight), opts.MaxBodyBytes)
	if opts.MaxImageURLs <= 0 {
		opts.MaxImageURLs = defaultImageURLs
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = defaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Handler{emb: emb, opts: opts, log: opts.Logger, pending: make(chan struct{}, opts.MaxPending), mux: http.NewServeMux()}
	h.held.limit = opts.MaxInflightBytes
	if len(opts.APIKeys) > 0 {
		h.keys = newKeyring(opts.APIKeys)
	}
	if !opts.NoMetrics {
		h.metrics = newMetrics(emb, &h.held)
		h.handle("GET /metrics", h.metrics.handler.ServeHTTP)
	}
	h.handle("POST /v1/embeddings", h.embeddings)
	h.handle("POST /embeddings", h.embeddings)
	h.handle("GET /v1/models", h.models)
	h.handle("GET /health", h.health)
	h.registerCompat()
	h.registerVision()
	h.registerSearch()
	h.handle("GET /openapi.json", h.openapi)
	seen := map[string]bool{}
	for _, r := range h.routes {
		if _, p, _ := strings.Cut(r, " "); !seen[p] {
			seen[p] = true
			h.mux.HandleFunc(p, methodNotAllowed)
		}
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", "", "", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP logs and dispatches one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r)
	w.Header().Set("X-Request-ID", id)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	h.metrics.begin()
	if h.keys != nil && !h.open(r) && !h.keys.allows(r) {
		rec.Header().Set("WWW-Authenticate", `Bearer realm="vembed"`)
		writeError(rec, http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key",
			"missing or invalid API key; send it as \"Authorization: Bearer KEY\"")
	} else {
		hd := &hold{b: &h.held}
		r = r.WithContext(context.WithValue(r.Context(), holdKey{}, hd))
		h.mux.ServeHTTP(rec, r) // sets r.Pattern for the metrics
		hd.release()
	}
	elapsed := time.Since(start)
	h.metrics.end(r.Pattern, rec.status, elapsed)
	args := []any{"id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status, "bytes", rec.bytes,
		"duration", elapsed, "remote", r.RemoteAddr}
	switch {
	case rec.status == http.StatusTooManyRequests || rec.status == http.StatusServiceUnavailable:
		// Under overload every refused request would log a line and make
		// the overload worse: one line per interval, with the count.
		if n, since, ok := h.refused.note(start); ok {
			h.log.Warn("requests refused", append(args, "refused", n, "over", since.Round(time.Millisecond))...)
		}
	case rec.status >= 500:
		h.log.Error("request", append(args, rec.attrs...)...)
	default:
		h.log.Info("request", append(args, rec.attrs...)...)
	}
}

// open reports whether a route is served without a key. The search page
// holds no data and asks for the key itself when the API refuses it, so
// it must load without one.
func (h *Handler) open(r *http.Request) bool {
	return r.URL.Path == "/health" || (h.opts.MetricsPublic && r.URL.Path == "/metrics") ||
		(r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && h.opts.Search != nil && h.opts.Search.Page != nil)
}

// refusalLog counts refused requests and lets one log line through per
// interval.
type refusalLog struct {
	mu    sync.Mutex
	n     int
	first time.Time
	last  time.Time
}

const refusalInterval = 5 * time.Second

// note counts a refusal at t; ok is true when a line is due, with the
// refusals counted since the last line and the time they span.
func (l *refusalLog) note(t time.Time) (n int, span time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		l.first = t
	}
	l.n++
	if !l.last.IsZero() && t.Sub(l.last) < refusalInterval {
		return 0, 0, false
	}
	n, span = l.n, t.Sub(l.first)
	l.n, l.last = 0, t
	return n, span, true
}

// statusRecorder notes what the request log line reports.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
	attrs  []any // extra key/value pairs set by the handlers
}

// logAttrs adds key/value pairs to the request's log line.
func logAttrs(w http.ResponseWriter, kv ...any) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.attrs = append(rec.attrs, kv...)
	}
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed",
		fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// modelCard is one entry of GET /v1/models: the OpenAI fields plus what a
// client needs to build requests.
type modelCard struct {
	ID                   string   `json:"id"`
	Object               string   `json:"object"`
	Created              int64    `json:"created"`
	OwnedBy              string   `json:"owned_by"`
	Arch                 string   `json:"architecture"`
	Modalities           []string `json:"modalities"`
	Dimensions           int      `json:"dimensions"`
	MatryoshkaDimensions []int    `json:"matryoshka_dimensions"`
	MultivectorDimension int      `json:"multivector_dimension,omitempty"`
	Tasks                []string `json:"tasks"`
	ContextLength        int      `json:"context_length"`
	MinPixels            int      `json:"min_pixels"`
	MaxPixels            int      `json:"max_pixels"`
	RandomWeights        bool     `json:"random_weights"`
	Description          string   `json:"description,omitempty"`
}

func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelCard{h.card()}})
}

// card describes the served model.
func (h *Handler) card() modelCard {
	info := h.emb.Info()
	card := modelCard{
		ID: info.Name, Object: "model", OwnedBy: "vembed", Arch: info.Arch,
		Modalities: info.Modalities, Dimensions: info.Hidden, MatryoshkaDimensions: info.Dimensions,
		MultivectorDimension: info.MultivectorDim, Tasks: info.Tasks, ContextLength: info.ContextLength,
		MinPixels: info.MinPixels, MaxPixels: info.MaxPixels, RandomWeights: info.RandomWeights,
	}
	if info.RandomWeights {
		card.Description = "demonstration model with random weights: its embeddings carry no meaning"
	}
	return card
}

// version is the module's version as the build recorded it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Run serves h on ln until ctx is done, then shuts down gracefully, letting
// running requests finish for up to grace. It returns an error only when a
// request was still running at the end of grace (its client then gets no
// answer): connections open with no request in progress are closed.
func Run(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger, grace time.Duration) error {
	var active atomic.Int64 // handlers running
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			active.Add(1)
			defer active.Add(-1)
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// A large request body (many images) on a slow link still fits.
		ReadTimeout: 2 * time.Minute,
		// Embedding a large batch on a CPU can take minutes.
		WriteTimeout: 15 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Shutdown waits five seconds for a connection that has not sent
		// a request yet (a client's spare connection) before it counts as
		// idle, so grace can end with only such connections open: closing
		// them leaves no client without an answer.
		n := active.Load()
		srv.Close()
		if n > 0 {
			return fmt.Errorf("server: shutdown: %d requests still running after %v: %w", n, grace, err)
		}
		log.Info("closed connections with no request in progress at the end of the grace period")
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// RequestID repeats the X-Request-ID header, so that a client that
	// keeps only the body can still name the request in a report.
	RequestID string `json:"request_id,omitempty"`
}

// maxEchoBytes bounds a request's value quoted back in an error message:
// the message names what was refused, it does not return the request.
const maxEchoBytes = 64

// echo quotes a value from a request for an error message, cut to
// maxEchoBytes.
func echo(s string) string { return clip.Quote(s, maxEchoBytes) }

// maxErrorBytes bounds an error's message, logged and sent, whatever its
// causes quote.
const maxErrorBytes = 2048

func writeError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	msg = clip.String(msg, maxErrorBytes)
	logAttrs(w, "error", msg)
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	e := apiError{Message: msg, Type: typ, RequestID: w.Header().Get("X-Request-ID")}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	writeJSON(w, status, map[string]apiError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"message":"response encoding failed","type":"server_error","param":null,"code":null}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// handle registers a route and records it for /openapi.json.
func (h *Handler) handle(pattern string, fn http.HandlerFunc) {
	h.routes = append(h.routes, pattern)
	h.mux.HandleFunc(pattern, fn)
}
