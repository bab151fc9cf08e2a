package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/vembed/vembed/engine"
)

// Cohere's v2 API: POST /v2/embed and POST /v2/rerank, as Cohere's clients
// (the cohere-ai npm package, LangChain, LlamaIndex) send them, on the same
// engine, limits, keys and metrics as every other route.

// cohereEmbedRequest is the body of POST /v2/embed.
type cohereEmbedRequest struct {
	Model string `json:"model"`
	// InputType is mapped onto the model's tasks or instructions by its
	// recipe (recipe.ForInputType); absent: the model's default.
	InputType string `json:"input_type"`
	// Exactly one of texts, images (data URIs) and inputs ({"content":
	// [{"type": "text", "text"}, {"type": "image_url", "image_url":
	// {"url"}}]}, or any element form of /v1/embeddings' input).
	Texts  []string        `json:"texts"`
	Images []string        `json:"images"`
	Inputs json.RawMessage `json:"inputs"`
	// EmbeddingTypes are the encodings to answer (default float).
	EmbeddingTypes  []string `json:"embedding_types"`
	OutputDimension *int     `json:"output_dimension"`
	MaxTokens       *int     `json:"max_tokens"`
	// Truncate is NONE (refuse a long input), END (cut its end; the
	// default, as Cohere's) or START (drop the first tokens of its text,
	// keeping the model's prompt around it whole).
	Truncate string `json:"truncate"`
	// Priority is accepted and ignored (see the compatibility list).
	Priority *int `json:"priority"`
}

// cohereMeta is the meta object of Cohere's answers.
type cohereMeta struct {
	APIVersion  map[string]string `json:"api_version"`
	BilledUnits map[string]int    `json:"billed_units"`
	Tokens      map[string]int    `json:"tokens,omitempty"`
}

func newCohereMeta(billed map[string]int, inputTokens int) cohereMeta {
	return cohereMeta{APIVersion: map[string]string{"version": "2"}, BilledUnits: billed, Tokens: map[string]int{"input_tokens": inputTokens}}
}

func (h *Handler) registerCohere() {
	h.handle("POST /v2/embed", h.cohereEmbed)
	h.handle("POST /v2/rerank", h.cohereRerank)
}

// cohereEmbed is POST /v2/embed -> {"id", "response_type":
// "embeddings_by_type", "embeddings": {type: [vector, …]}, "texts", "meta"}.
func (h *Handler) cohereEmbed(w http.ResponseWriter, r *http.Request) {
	req, types, param, bad := h.parseCohereEmbed(w, r)
	if bad != nil {
		refuse(w, bad)
		return
	}
	resp, ok := h.runNamed(w, r, req, param)
	if !ok {
		return
	}
	embeddings := map[string][]any{}
	for _, t := range types {
		vs := make([]any, len(resp.Embeddings))
		for i, e := range resp.Embeddings {
			vs[i] = encodeVector(e.Vector, t)
		}
		embeddings[t] = vs
	}
	images := 0
	for _, in := range req.Inputs {
		for _, p := range in.Parts {
			if p.IsImage() {
				images++
			}
		}
	}
	billed := map[string]int{"input_tokens": resp.PromptTokens}
	if images > 0 {
		billed["images"] = images
	}
	out := map[string]any{"id": w.Header().Get("X-Request-ID"), "response_type": "embeddings_by_type",
		"embeddings": embeddings, "meta": newCohereMeta(billed, resp.PromptTokens)}
	if texts := textsOf(req.Inputs); texts != nil {
		out["texts"] = texts
	}
	writeJSON(w, http.StatusOK, out)
}

// textsOf returns the inputs' texts when every input is one text (Cohere
// echoes them), else nil.
func textsOf(ins []engine.Input) []string {
	texts := make([]string, len(ins))
	for i, in := range ins {
		if len(in.Parts) != 1 || in.Parts[0].IsImage() {
			return nil
		}
		texts[i] = in.Parts[0].Text
	}
	return texts
}

// parseCohereEmbed reads and checks a /v2/embed body: the engine request,
// the encodings asked and the name of the inputs' field, or the refusal.
func (h *Handler) parseCohereEmbed(w http.ResponseWriter, r *http.Request) (engine.Request, []string, string, *badRequest) {
	var req engine.Request
	var cr cohereEmbedRequest
	// Cohere cuts long inputs unless told not to: not refused early.
	if bad := h.decodeBodyOf(w, r, &cr, true); bad != nil {
		return req, nil, "", bad
	}
	given := 0
	for _, set := range []bool{cr.Texts != nil, cr.Images != nil, cr.Inputs != nil} {
		if set {
			given++
		}
	}
	if given != 1 {
		return req, nil, "", &badRequest{http.StatusBadRequest, "texts", engine.CodeInvalid, "send exactly one of texts, images and inputs"}
	}
	if n := max(len(cr.Texts), len(cr.Images)); n > h.opts.MaxInputs {
		param := "texts"
		if cr.Images != nil {
			param = "images"
		}
		return req, nil, "", &badRequest{http.StatusBadRequest, param, engine.CodeInvalid,
			fmt.Sprintf("too many inputs: %d (at most %d per request)", n, h.opts.MaxInputs)}
	}
	var raw json.RawMessage
	param := "inputs"
	switch {
	case cr.Texts != nil:
		raw, _ = json.Marshal(cr.Texts)
		param = "texts"
	case cr.Images != nil:
		items := make([]map[string]string, len(cr.Images))
		for i, s := range cr.Images {
			items[i] = map[string]string{"image": s}
		}
		raw, _ = json.Marshal(items)
		param = "images"
	default:
		raw = cr.Inputs
	}
	if string(raw) == "[]" {
		return req, nil, "", &badRequest{http.StatusBadRequest, param, engine.CodeEmpty, param + " is an empty list"}
	}
	ins, bad := h.inputs(r, raw, param)
	if bad != nil {
		return req, nil, "", bad
	}
	types := []string{encFloat}
	if cr.EmbeddingTypes != nil {
		if len(cr.EmbeddingTypes) == 0 {
			return req, nil, "", &badRequest{http.StatusBadRequest, "embedding_types", engine.CodeEmpty, "embedding_types is an empty list (absent: float)"}
		}
		types = nil
		for _, t := range cr.EmbeddingTypes {
			if !slices.Contains(encodings, t) {
				return req, nil, "", &badRequest{http.StatusBadRequest, "embedding_types", engine.CodeInvalid,
					fmt.Sprintf("unknown embedding type %s (want %s)", echo(t), joinEncodings())}
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	req = engine.Request{Inputs: ins, InputType: cr.InputType, Truncate: true}
	switch cr.Truncate {
	case "", "END":
	case "NONE":
		req.Truncate = false
	case "START":
		req.TruncateStart = true
	default:
		return req, nil, "", &badRequest{http.StatusBadRequest, "truncate", engine.CodeInvalid, fmt.Sprintf("truncate %s: want NONE, START or END", echo(cr.Truncate))}
	}
	if d := cr.OutputDimension; d != nil {
		if *d <= 0 {
			return req, nil, "", &badRequest{http.StatusBadRequest, "output_dimension", engine.CodeInvalid, fmt.Sprintf("output_dimension must be a positive integer, got %d", *d)}
		}
		req.Dimensions = *d
	}
	if m := cr.MaxTokens; m != nil {
		if *m <= 0 {
			return req, nil, "", &badRequest{http.StatusBadRequest, "max_tokens", engine.CodeInvalid, fmt.Sprintf("max_tokens must be a positive integer, got %d", *m)}
		}
		req.MaxTokens = *m
	}
	return req, types, param, nil
}

// cohereRerankRequest is the body of POST /v2/rerank.
type cohereRerankRequest struct {
	Model string `json:"model"`
	// Query and each document are texts in Cohere's API; here any input
	// item (an image, an interleaved document) too.
	Query     json.RawMessage `json:"query"`
	Documents json.RawMessage `json:"documents"`
	TopN      *int            `json:"top_n"`
	// MaxTokensPerDoc cuts each document to that many tokens (Cohere's
	// default: 4096, here the model's limit when lower); documents are
	// cut, never refused, as Cohere's are.
	MaxTokensPerDoc *int `json:"max_tokens_per_doc"`
	Priority        *int `json:"priority"`
}

// cohereDocTokens is Cohere's default max_tokens_per_doc.
const cohereDocTokens = 4096

// cohereRerank is POST /v2/rerank -> {"id", "results": [{"index",
// "relevance_score"}] best first, "meta"}.
func (h *Handler) cohereRerank(w http.ResponseWriter, r *http.Request) {
	var req cohereRerankRequest
	if bad := h.decodeBodyOf(w, r, &req, true); bad != nil {
		refuse(w, bad)
		return
	}
	query, bad := h.queryInput(r, req.Query)
	if bad != nil {
		refuse(w, bad)
		return
	}
	docs, bad := h.inputs(r, req.Documents, "documents")
	if bad == nil && len(docs) > h.maxDocuments() {
		bad = &badRequest{http.StatusBadRequest, "documents", engine.CodeInvalid,
			fmt.Sprintf("too many documents: %d (at most %d per request)", len(docs), h.maxDocuments())}
	}
	if bad == nil && req.TopN != nil && *req.TopN < 1 {
		bad = &badRequest{http.StatusBadRequest, "top_n", engine.CodeInvalid, fmt.Sprintf("top_n must be at least 1 (absent: every document), got %d", *req.TopN)}
	}
	if bad == nil && req.MaxTokensPerDoc != nil && *req.MaxTokensPerDoc < 1 {
		bad = &badRequest{http.StatusBadRequest, "max_tokens_per_doc", engine.CodeInvalid, fmt.Sprintf("max_tokens_per_doc must be at least 1, got %d", *req.MaxTokensPerDoc)}
	}
	if bad != nil {
		refuse(w, bad)
		return
	}
	o := scoreOptions{docCut: true, docTokens: cohereDocTokens}
	if req.MaxTokensPerDoc != nil {
		o.docTokens, o.docTokensSet = *req.MaxTokensPerDoc, true
	}
	scores, tokens, ok := h.scoreDocs(w, r, query, docs, func(int) int { return 0 }, o)
	if !ok {
		return
	}
	type result struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	}
	results := make([]result, len(scores))
	for i, s := range scores {
		results[i] = result{i, s}
	}
	slices.SortStableFunc(results, func(a, b result) int { return cmpDesc(a.RelevanceScore, b.RelevanceScore) })
	if req.TopN != nil && *req.TopN < len(results) {
		results = results[:*req.TopN]
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": w.Header().Get("X-Request-ID"), "results": results,
		"meta": newCohereMeta(map[string]int{"search_units": 1}, tokens)})
}
