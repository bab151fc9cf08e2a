package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/search"
)

// Search over an index (vembed serve --index): POST /v1/search embeds
// the query with the served model (its query prompt: the recipe's
// search_query input type, else its retrieval.query task) and ranks the
// index's rows (package search); GET /v1/index describes the index; GET
// /v1/pages/{id} renders an item's page image from its source file. The
// page at GET / is SearchOptions.Page (package server/searchpage), served
// without a key.

// SearchOptions configure the search routes.
type SearchOptions struct {
	Index Searcher
	// Pages renders page images (GET /v1/pages/{id}); nil: the route
	// answers 404.
	Pages *search.Pages
	// Request holds the options the index embedded its items with (task,
	// instruction, dimensions, multivector, pixel bounds, from its
	// manifest): a query takes the same dimensions, and similarity maps
	// the items' image layout.
	Request engine.Request
	// Reranker, when set, reranks the best RerankDepth hits of a search
	// with "rerank": true (a reranker model such as Qwen3-VL-Reranker).
	Reranker    search.Reranker
	RerankDepth int
	// Page, when set, serves GET / (the search page).
	Page http.Handler
}

// Searcher is the index a server searches (*search.Index).
type Searcher interface {
	Search(q search.Query, o search.Options) (*search.Result, error)
	Info() search.Info
}

// DefaultRerankDepth is how many hits a reranked search rescores (or
// top_k when larger).
const DefaultRerankDepth = 20

// ImageGridder says where an image's merged patches lie among the
// multi-vector rows of an item (*engine.Engine).
type ImageGridder interface {
	ImageGrid(req engine.Request, w, h int) (first, rows, cols int, err error)
}

// TokenTexter names the tokens of a text query's prompt (*engine.Engine).
type TokenTexter interface {
	TextTokens(req engine.Request, text string) ([]string, error)
}

type searchRequest struct {
	Query     json.RawMessage `json:"query"`
	TopK      *int            `json:"top_k"`
	Filter    string          `json:"filter"`
	Maps      bool            `json:"maps"`
	MapTokens bool            `json:"map_tokens"`
	Rerank    bool            `json:"rerank"`
	Exact     bool            `json:"exact"`
}

type searchHit struct {
	ID          string     `json:"id"`
	Path        string     `json:"path"`
	Page        int        `json:"page"`
	Score       float64    `json:"score"`
	Snippet     string     `json:"snippet"`
	Width       int        `json:"width"`
	Height      int        `json:"height"`
	RerankScore *float64   `json:"rerank_score,omitempty"`
	Map         *searchMap `json:"map,omitempty"`
}

type searchMap struct {
	Rows   int        `json:"rows"`
	Cols   int        `json:"cols"`
	Values []float32  `json:"values"`
	Tokens []tokenMap `json:"tokens,omitempty"`
}

type tokenMap struct {
	Token  string    `json:"token"`
	Values []float32 `json:"values"`
}

type searchResponse struct {
	Object      string             `json:"object"`
	Model       string             `json:"model"`
	Multivector bool               `json:"multivector"`
	Hits        []searchHit        `json:"hits"`
	Usage       usage              `json:"usage"`
	Timing      map[string]float64 `json:"timing_ms"`
}

func (h *Handler) registerSearch() {
	if h.opts.Search == nil {
		return
	}
	if h.opts.Search.RerankDepth <= 0 {
		h.opts.Search.RerankDepth = DefaultRerankDepth
	}
	h.handle("POST /v1/search", h.search)
	h.handle("GET /v1/index", h.indexInfo)
	h.handle("GET /v1/pages/{id}", h.page)
	if h.opts.Search.Page != nil {
		h.handle("GET /{$}", h.opts.Search.Page.ServeHTTP)
	}
}

func init() {
	optionalRouteDocs["POST /v1/search"] = struct{ summary, request string }{"Search the index (serve --index): the query embedded with the model's query prompt, the best items by cosine or MaxSim", "SearchRequest"}
	optionalRouteDocs["GET /v1/index"] = struct{ summary, request string }{"The index searched: model, vectors, item count, shards, last update", ""}
	optionalRouteDocs["GET /v1/pages/{id}"] = struct{ summary, request string }{"An indexed item's page image (PNG), rendered from its source file; ?width= scales it down", ""}
	optionalRouteDocs["GET /{$}"] = struct{ summary, request string }{"The search page (serve --index)", ""}
}

// searchResponseDocs names the schemas of the search routes' answers.
var searchResponseDocs = map[string]string{"POST /v1/search": "SearchResponse", "GET /v1/index": "IndexInfo"}

func (h *Handler) search(w http.ResponseWriter, r *http.Request) {
	so := h.opts.Search
	var sr searchRequest
	if bad := h.decodeBody(w, r, &sr); bad != nil {
		refuse(w, bad)
		return
	}
	k := 10
	if sr.TopK != nil {
		k = *sr.TopK
	}
	if k < 1 || k > search.MaxTopK {
		refuse(w, &badRequest{http.StatusBadRequest, "top_k", engine.CodeInvalid, fmt.Sprintf("top_k must be 1 to %d, got %d", search.MaxTopK, k)})
		return
	}
	if sr.Rerank && so.Reranker == nil {
		refuse(w, &badRequest{http.StatusBadRequest, "rerank", engine.CodeUnsupported, "this server has no reranker (vembed serve --reranker RERANKER.gguf)"})
		return
	}
	if sr.MapTokens && !sr.Maps {
		refuse(w, &badRequest{http.StatusBadRequest, "map_tokens", engine.CodeInvalid, "map_tokens adds per-token maps to maps: it needs \"maps\": true"})
		return
	}
	ins, bad := h.inputs(r, sr.Query, "query")
	if bad != nil {
		refuse(w, bad)
		return
	}
	if len(ins) != 1 {
		refuse(w, &badRequest{http.StatusBadRequest, "query", engine.CodeInvalid,
			fmt.Sprintf("query is one input, got a list of %d; send an interleaved query as {\"content\": [part, ...]}", len(ins))})
		return
	}
	info := so.Index.Info()
	req := engine.Request{Inputs: ins, Multivector: info.Multivector}
	if !info.Multivector {
		req.Dimensions = so.Request.Dimensions
	}
	// One of the MaxPending slots from the query's embedding to the
	// answer: scoring (an exact search reads every page) and reranking
	// are the server's work as embedding is, and a search that embedded
	// its query is not refused halfway.
	release, ok := h.admit(w)
	if !ok {
		return
	}
	defer release()
	start := time.Now()
	resp, ok := h.runAdmitted(w, r, req, "query", h.embedQuery)
	if !ok {
		return
	}
	embedded := time.Now()
	q := search.Query{}
	if e := resp.Embeddings[0]; info.Multivector {
		q.Multi = e.Multi
	} else {
		q.Single = e.Vector
	}
	depth := k
	if sr.Rerank {
		depth = max(k, so.RerankDepth)
	}
	res, err := so.Index.Search(q, search.Options{TopK: depth, Filter: sr.Filter, Exact: sr.Exact, Maps: sr.Maps && info.Multivector})
	if errors.Is(err, search.ErrBadQuery) {
		param := ""
		switch msg := err.Error(); {
		case strings.Contains(msg, "filter"):
			param = "filter"
		case strings.Contains(msg, "maps of"):
			param = "maps"
		}
		refuse(w, &badRequest{http.StatusBadRequest, param, engine.CodeInvalid, err.Error()})
		return
	}
	if err != nil {
		h.log.Error("search failed", "err", err)
		writeError(w, http.StatusInternalServerError, "server_error", "", "", "search failed: "+err.Error())
		return
	}
	scoredAt := time.Now()
	out := searchResponse{Object: "search", Model: h.emb.Info().Name, Multivector: info.Multivector, Hits: []searchHit{},
		Usage:  usage{PromptTokens: resp.PromptTokens, TotalTokens: resp.PromptTokens},
		Timing: map[string]float64{"embed": ms(embedded.Sub(start)), "score": ms(scoredAt.Sub(embedded)), "rerank": 0}}
	hits := res.Hits
	var rerank []float64
	if sr.Rerank && len(hits) > 0 {
		var ok bool
		hits, rerank, ok = h.rerankHits(w, r, ins[0], hits, k)
		if !ok {
			return
		}
		out.Timing["rerank"] = ms(time.Since(scoredAt))
	}
	var tokens []string
	if sr.MapTokens && info.Multivector {
		tokens = h.queryTokens(ins[0], len(q.Multi))
	}
	for i, hit := range hits {
		sh := searchHit{ID: hit.ID, Path: hit.Path, Page: int(hit.Page), Score: hit.Score, Snippet: search.Snippet(hit.Text), Width: int(hit.Width), Height: int(hit.Height)}
		if rerank != nil {
			sh.RerankScore = &rerank[i]
		}
		if hit.Sims != nil {
			sh.Map = h.similarityMap(hit, tokens, sr.MapTokens)
		}
		out.Hits = append(out.Hits, sh)
	}
	logAttrs(w, "hits", len(out.Hits), "scored", res.Scored, "candidates", res.Candidates)
	writeJSON(w, http.StatusOK, out)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// embedQuery embeds a search query with the model's query prompt
// (search.EmbedQuery).
func (h *Handler) embedQuery(ctx context.Context, req engine.Request) (*engine.Response, error) {
	return search.EmbedQuery(ctx, h.emb, req)
}

// similarityMap reduces a hit's token similarities to the page's grid:
// for each merged patch its largest similarity to any query token (and
// with perToken each token's own). nil when the model has no image
// layout for the item (a text passage).
func (h *Handler) similarityMap(hit search.Hit, tokens []string, perToken bool) *searchMap {
	g, ok := h.emb.(ImageGridder)
	if !ok || hit.Width <= 0 || hit.Height <= 0 || len(hit.Sims) == 0 {
		return nil
	}
	first, rows, cols, err := g.ImageGrid(h.opts.Search.Request, int(hit.Width), int(hit.Height))
	if err != nil || first+rows*cols > len(hit.Sims[0]) {
		return nil
	}
	m := &searchMap{Rows: rows, Cols: cols, Values: make([]float32, rows*cols)}
	for c := range m.Values {
		best := float32(math.Inf(-1))
		for _, s := range hit.Sims {
			best = max(best, s[first+c])
		}
		m.Values[c] = best
	}
	if perToken {
		for i, s := range hit.Sims {
			name := "#" + strconv.Itoa(i)
			if i < len(tokens) {
				name = tokens[i]
			}
			m.Tokens = append(m.Tokens, tokenMap{Token: name, Values: append([]float32(nil), s[first:first+rows*cols]...)})
		}
	}
	return m
}

// queryTokens names the query's n vectors by the tokens of its prompt,
// for a text query; nil otherwise (the maps then say "#i").
func (h *Handler) queryTokens(in engine.Input, n int) []string {
	tt, ok := h.emb.(TokenTexter)
	if !ok || len(in.Parts) != 1 || in.Parts[0].IsImage() {
		return nil
	}
	toks, err := tt.TextTokens(engine.Request{Multivector: true, InputType: recipe.InputSearchQuery}, in.Parts[0].Text)
	if ie, ok := engine.AsInputError(err); ok && ie.Param == "input_type" {
		task, _ := h.scoreTasks()
		toks, err = tt.TextTokens(engine.Request{Multivector: true, Task: task}, in.Parts[0].Text)
	}
	if err != nil || len(toks) != n {
		return nil
	}
	return toks
}

// rerankHits rescores hits with the reranker model (search.Rerank) and
// returns the best k with the reranker's scores; the search holds its
// MaxPending slot.
func (h *Handler) rerankHits(w http.ResponseWriter, r *http.Request, query engine.Input, hits []search.Hit, k int) ([]search.Hit, []float64, bool) {
	ctx, cancel := h.deadline(r.Context())
	defer cancel()
	out, scores, err := search.Rerank(ctx, h.opts.Search.Reranker, h.opts.Search.Pages, query, hits, k)
	if err != nil {
		h.writeEngineError(w, r, err)
		return nil, nil, false
	}
	return out, scores, true
}

// indexInfoResponse is GET /v1/index: the index, and whether the server
// reranks (so that the search page offers it only then).
type indexInfoResponse struct {
	search.Info
	Reranker bool `json:"reranker"`
}

func (h *Handler) indexInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, indexInfoResponse{Info: h.opts.Search.Index.Info(), Reranker: h.opts.Search.Reranker != nil})
}

// page is GET /v1/pages/{id}: the item's page image, for ids the index
// holds only; the file read is the one the index names for the id.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	width := 0
	if s := r.URL.Query().Get("width"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > search.MaxPageWidth {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "width", engine.CodeInvalid, fmt.Sprintf("width must be an integer from 1 to %d", search.MaxPageWidth))
			return
		}
		width = n
	}
	pages := h.opts.Search.Pages
	if pages == nil {
		writeError(w, http.StatusNotFound, "not_found_error", "id", "no_page", "this server renders no page images")
		return
	}
	ctx, cancel := h.deadline(r.Context())
	defer cancel()
	png, err := pages.Image(ctx, r.PathValue("id"), width)
	switch {
	case errors.Is(err, search.ErrNoItem):
		writeError(w, http.StatusNotFound, "not_found_error", "id", "no_item", err.Error())
	case errors.Is(err, search.ErrNoImage):
		writeError(w, http.StatusNotFound, "not_found_error", "id", "no_page", err.Error())
	case errors.Is(err, search.ErrSourceGone):
		writeError(w, http.StatusGone, "not_found_error", "id", "source_gone", err.Error())
	case errors.Is(err, search.ErrSourceChanged):
		writeError(w, http.StatusConflict, "invalid_request_error", "id", "source_changed", err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// Waited for a rendering slot or rendered past the request's time.
		h.writeEngineError(w, r, err)
	case err != nil:
		h.log.Error("page image failed", "err", err)
		writeError(w, http.StatusInternalServerError, "server_error", "", "", "rendering the page failed")
	default:
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cache-Control", "private, max-age=300")
		w.Write(png)
	}
}

// searchSchemas are the components of the search routes.
func searchSchemas() map[string]any {
	num := map[string]any{"type": "number"}
	floats := map[string]any{"type": "array", "items": num}
	return map[string]any{
		"SearchRequest": obj(map[string]any{
			"query":      desc(inputSchema, "one input in any element form of /v1/embeddings' input: a text, {\"image\": ...}, or {\"content\": [part, ...]}"),
			"top_k":      desc(integer, fmt.Sprintf("hits to return, 1 to %d (default 10)", search.MaxTopK)),
			"filter":     desc(str, "keep the items whose path matches this glob (a pattern without a slash also matches the file name)"),
			"maps":       desc(boolean, "multi-vector index: each hit's similarity map over its page's patch grid"),
			"map_tokens": desc(boolean, "with maps: one map per query token too"),
			"rerank":     desc(boolean, "rerank the best hits with the server's reranker (serve --reranker)"),
			"exact":      desc(boolean, "multi-vector index: exact MaxSim over every item instead of the two stages"),
		}, "query"),
		"SearchResponse": obj(map[string]any{
			"object": str, "model": str, "multivector": boolean,
			"hits": map[string]any{"type": "array", "items": obj(map[string]any{
				"id": str, "path": str, "page": integer, "score": num, "snippet": str, "width": integer, "height": integer,
				"rerank_score": num,
				"map": obj(map[string]any{"rows": integer, "cols": integer, "values": floats,
					"tokens": map[string]any{"type": "array", "items": obj(map[string]any{"token": str, "values": floats})}}),
			}, "id", "path", "page", "score", "snippet", "width", "height")},
			"usage":     obj(map[string]any{"prompt_tokens": integer, "total_tokens": integer}),
			"timing_ms": obj(map[string]any{"embed": num, "score": num, "rerank": num}),
		}, "object", "model", "multivector", "hits", "usage", "timing_ms"),
		"IndexInfo": obj(map[string]any{
			"model": str, "model_identity": str, "arithmetic": str, "multivector": boolean, "dims": integer, "items": integer,
			"shards": map[string]any{"type": "array", "items": obj(map[string]any{"shard": integer, "shards": integer, "items": integer, "written": str})},
			"parts":  integer, "updated": str,
			"problems": map[string]any{"type": "array", "items": obj(map[string]any{"part": str, "reason": str})},
			"reranker": desc(boolean, "the server reranks: a search may ask \"rerank\": true (serve --reranker)"),
		}, "model", "multivector", "dims", "items", "shards", "updated", "reranker"),
	}
}
