package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/vembed/vembed/engine"
)

// Scoring with an embedding model: the query is embedded with the model's
// query task and the documents with its passage task (when the model has
// them), and a document's score is the cosine of the two vectors, or with
// "multivector": true the MaxSim of the two multi-vectors (for every query
// vector the best dot product with a document vector, summed), as
// late-interaction retrievers score.

// Reranker is implemented by an Embedder whose model scores (query,
// document) pairs itself (*engine.Engine with a reranker model such as
// Qwen3-VL-Reranker: Info().Reranker). Rerank and score then use it
// instead of comparing embeddings.
type Reranker interface {
	Rerank(ctx context.Context, query engine.Input, docs []engine.Input, instruction string) ([]float64, int, error)
}

// pairScorer returns the embedder's own pair scoring, when its model has
// one.
func (h *Handler) pairScorer() Reranker {
	if rr, ok := h.emb.(Reranker); ok && h.emb.Info().Reranker {
		return rr
	}
	return nil
}

func (h *Handler) registerScore() {
	for _, p := range []string{"/v1/rerank", "/rerank"} {
		h.handle("POST "+p, h.rerank)
	}
	for _, p := range []string{"/v1/score", "/score"} {
		h.handle("POST "+p, h.score)
	}
}

// scoreTasks returns the tasks of queries and of documents.
func (h *Handler) scoreTasks() (query, doc string) {
	tasks := h.emb.Info().Tasks
	if slices.Contains(tasks, "retrieval.query") && slices.Contains(tasks, "retrieval.passage") {
		return "retrieval.query", "retrieval.passage"
	}
	return "", ""
}

// maxDocuments is the most documents one rerank or score request takes:
// engine.MaxRerankDocuments (each is a whole prompt through a reranker
// model), or MaxInputs when that is lower.
func (h *Handler) maxDocuments() int {
	return min(h.opts.MaxInputs, engine.MaxRerankDocuments)
}

// scoreDocs scores document i against query qi(i): with the model's own
// pair scoring when it has one, else by comparing embeddings (the
// instruction then goes to the queries' embeddings, for models that take
// one). It writes the error response itself when it returns false.
func (h *Handler) scoreDocs(w http.ResponseWriter, r *http.Request, queries, docs []engine.Input, qi func(int) int, o scoreOptions) ([]float64, int, bool) {
	rr := h.pairScorer()
	if rr == nil {
		return h.scorePairs(w, r, queries, docs, qi, o)
	}
	for _, f := range []struct {
		set         bool
		param, what string
	}{{o.multi, "multivector", "multivector (MaxSim of embeddings) applies to embedding models"},
		{o.truncate, "truncate", "truncate cuts texts for embedding models; a pair over the context is refused"},
		{o.docTokensSet, "max_tokens_per_doc", "max_tokens_per_doc cuts documents for embedding models; a pair over the context is refused"}} {
		if f.set {
			refuse(w, &badRequest{http.StatusBadRequest, f.param, engine.CodeUnsupported, "this model is a reranker and scores each pair itself; " + f.what})
			return nil, 0, false
		}
	}
	release, ok := h.admit(w)
	if !ok {
		return nil, 0, false
	}
	ctx, cancel := h.deadline(r.Context())
	scores, tokens, err := rankRuns(ctx, rr, queries, docs, qi, o.instruction)
	cancel()
	release()
	if errors.Is(err, engine.ErrNotReranker) {
		// Info said reranker but the model scores no pairs: compare
		// embeddings, as for any embedding model.
		h.log.Warn("the model reported as a reranker scores no pairs; ranking by embeddings", "err", err)
		return h.scorePairs(w, r, queries, docs, qi, o)
	}
	if err != nil {
		h.writeEngineError(w, r, err)
		return nil, 0, false
	}
	if o.raw {
		for i, p := range scores {
			// P(yes) is the sigmoid of the yes-no logit difference; a
			// probability rounded to 0 or 1 gives the largest finite one.
			p = min(max(p, math.SmallestNonzeroFloat64), 1-0x1p-53)
			scores[i] = math.Log(p) - math.Log1p(-p)
		}
	}
	return scores, tokens, true
}

// scoreOptions are a score or rerank request's fields that change how
// documents are scored.
type scoreOptions struct {
	multi       bool   // MaxSim of multi-vectors (embedding models)
	instruction string // the reranker's, or the query embedding's
	truncate    bool   // cut texts over the limit (embedding models)
	raw         bool   // a reranker's logit instead of its probability
	// docCut cuts documents over the limit (embedding models), to
	// docTokens tokens when positive; docTokensSet says the request
	// gave docTokens (a reranker model refuses it).
	docCut       bool
	docTokens    int
	docTokensSet bool
}

// rankRuns scores documents with the model's own pair scoring, each run
// of documents that share a query in one call.
func rankRuns(ctx context.Context, rr Reranker, queries, docs []engine.Input, qi func(int) int, instruction string) ([]float64, int, error) {
	scores := make([]float64, len(docs))
	tokens := 0
	for start := 0; start < len(docs); {
		end := start + 1
		for end < len(docs) && qi(end) == qi(start) {
			end++
		}
		s, n, err := rr.Rerank(ctx, queries[qi(start)], docs[start:end], instruction)
		if err != nil {
			return nil, 0, err
		}
		if len(s) != end-start {
			return nil, 0, fmt.Errorf("server: the reranker gave %d scores for %d documents", len(s), end-start)
		}
		copy(scores[start:end], s)
		tokens += n
		start = end
	}
	return scores, tokens, nil
}

// scorePairs embeds the queries and documents and scores document i
// against query qi(i). It writes the error response itself when it
// returns false.
func (h *Handler) scorePairs(w http.ResponseWriter, r *http.Request, queries, docs []engine.Input, qi func(int) int, o scoreOptions) ([]float64, int, bool) {
	qt, dt := h.scoreTasks()
	multi := o.multi
	qr, ok := h.run(w, r, engine.Request{Inputs: queries, Task: qt, Instruction: o.instruction, Multivector: multi, Truncate: o.truncate})
	if !ok {
		return nil, 0, false
	}
	dr, ok := h.run(w, r, engine.Request{Inputs: docs, Task: dt, Multivector: multi, Truncate: o.truncate || o.docCut, MaxTokens: o.docTokens})
	if !ok {
		return nil, 0, false
	}
	scores := make([]float64, len(docs))
	for i, d := range dr.Embeddings {
		q := qr.Embeddings[qi(i)]
		if multi {
			scores[i] = MaxSim(q.Multi, d.Multi)
		} else {
			scores[i] = dot(q.Vector, d.Vector)
		}
	}
	return scores, qr.PromptTokens + dr.PromptTokens, true
}

// MaxSim is the late-interaction score of a query's vectors against a
// document's: for each query vector its largest dot product with any
// document vector, summed (float64 sums).
func MaxSim(query, doc [][]float32) float64 {
	var total float64
	for _, q := range query {
		best := -1e300
		for _, d := range doc {
			best = max(best, dot(q, d))
		}
		if len(doc) > 0 {
			total += best
		}
	}
	return total
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		s += float64(float64(a[i]) * float64(b[i]))
	}
	return s
}

type rerankRequest struct {
	Model           string          `json:"model"`
	Instruction     string          `json:"instruction"`
	Query           json.RawMessage `json:"query"`
	Documents       json.RawMessage `json:"documents"`
	TopN            *int            `json:"top_n"`
	ReturnDocuments *bool           `json:"return_documents"`
	Multivector     bool            `json:"multivector"`
	// text-embeddings-inference's form: texts instead of documents,
	// answered with a bare list of {"index", "score", "text"}.
	Texts      json.RawMessage `json:"texts"`
	ReturnText bool            `json:"return_text"`
	RawScores  bool            `json:"raw_scores"`
	Truncate   bool            `json:"truncate"`
}

type rerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
	Document       any     `json:"document,omitempty"`
}

// rerank is POST /v1/rerank and /rerank in Jina's and Cohere's shape:
// {"query", "documents": [string or item], "top_n", "return_documents"
// (default true), "multivector"} -> {"model", "results": [{"index",
// "relevance_score", "document"}] best first, "usage"}; or, given "texts"
// instead of "documents", text-embeddings-inference's: [{"index",
// "score", "text"}] best first.
func (h *Handler) rerank(w http.ResponseWriter, r *http.Request) {
	var req rerankRequest
	if bad := h.decodeBody(w, r, &req); bad != nil {
		refuse(w, bad)
		return
	}
	tei := req.Texts != nil
	if tei {
		if req.Documents != nil {
			refuse(w, &badRequest{http.StatusBadRequest, "texts", engine.CodeInvalid, `send "documents" or text-embeddings-inference's "texts", not both`})
			return
		}
		req.Documents = req.Texts
	}
	documents, bad := rerankDocuments(req.Documents)
	if bad != nil {
		refuse(w, bad)
		return
	}
	if len(documents) == 0 {
		refuse(w, &badRequest{http.StatusBadRequest, "documents", engine.CodeEmpty, "documents is required and may not be empty"})
		return
	}
	if len(documents) > h.maxDocuments() {
		refuse(w, &badRequest{http.StatusBadRequest, "documents", engine.CodeInvalid,
			fmt.Sprintf("too many documents: %d (at most %d per request)", len(documents), h.maxDocuments())})
		return
	}
	if req.TopN != nil && *req.TopN < 0 {
		refuse(w, &badRequest{http.StatusBadRequest, "top_n", engine.CodeInvalid, "top_n may not be negative (0 or absent: every document)"})
		return
	}
	query, bad := h.queryInput(r, req.Query)
	if bad != nil {
		refuse(w, bad)
		return
	}
	docsRaw, _ := json.Marshal(documents)
	docs, bad := h.inputs(r, docsRaw, "documents")
	if bad != nil {
		refuse(w, bad)
		return
	}
	scores, tokens, ok := h.scoreDocs(w, r, query, docs, func(int) int { return 0 },
		scoreOptions{multi: req.Multivector, instruction: req.Instruction, truncate: req.Truncate, raw: req.RawScores})
	if !ok {
		return
	}
	if tei {
		out := make([]map[string]any, len(scores))
		for i, s := range scores {
			out[i] = map[string]any{"index": i, "score": s}
			if req.ReturnText {
				var text any = documents[i]
				var str string
				if json.Unmarshal(documents[i], &str) == nil {
					text = str
				}
				out[i]["text"] = text
			}
		}
		slices.SortStableFunc(out, func(a, b map[string]any) int { return cmpDesc(a["score"].(float64), b["score"].(float64)) })
		writeJSON(w, http.StatusOK, out)
		return
	}
	results := make([]rerankResult, len(scores))
	for i, s := range scores {
		results[i] = rerankResult{Index: i, RelevanceScore: s}
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			results[i].Document = documentEcho(documents[i])
		}
	}
	slices.SortStableFunc(results, func(a, b rerankResult) int { return cmpDesc(a.RelevanceScore, b.RelevanceScore) })
	if req.TopN != nil && *req.TopN > 0 && *req.TopN < len(results) {
		results = results[:*req.TopN]
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": h.emb.Info().Name, "object": "list", "results": results,
		"usage": map[string]int{"total_tokens": tokens, "prompt_tokens": tokens}})
}

// cmpDesc orders scores best first.
func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// rerankDocuments splits the documents field: a list of documents (Jina,
// Cohere), or vLLM's multimodal form {"content": [part, …]}, each part one
// document.
func rerankDocuments(raw json.RawMessage) ([]json.RawMessage, *badRequest) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var docs []json.RawMessage
	if raw[0] == '{' {
		var mm struct {
			Content []json.RawMessage `json:"content"`
		}
		if err := decodeStrict(raw, &mm); err != nil || mm.Content == nil {
			if f, ok := unknownField(errOrNil(err)); ok {
				return nil, &badRequest{http.StatusBadRequest, "documents", "unknown_field",
					fmt.Sprintf(`unknown field %s in documents (vLLM's form is {"content": [part, …]})`, echo(f))}
			}
			return nil, &badRequest{http.StatusBadRequest, "documents", engine.CodeInvalid,
				`documents is a list, or {"content": [part, …]} with one document per part`}
		}
		return mm.Content, nil
	}
	if err := json.Unmarshal(raw, &docs); err != nil {
		return nil, &badRequest{http.StatusBadRequest, "documents", engine.CodeInvalid, "documents must be a list of strings or items"}
	}
	return docs, nil
}

// documentEcho is a document as a rerank result returns it: {"text": …}
// for a string (Jina's and Cohere's form), the item itself otherwise.
func documentEcho(raw json.RawMessage) any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return map[string]string{"text": s}
	}
	return raw
}

// scoreRequest is the body of /v1/score and /score.
type scoreRequest struct {
	Model       string          `json:"model"`
	Text1       json.RawMessage `json:"text_1"`
	Text2       json.RawMessage `json:"text_2"`
	Multivector bool            `json:"multivector"`
}

// score is vLLM's POST /v1/score and /score: "text_1" and "text_2" (alias
// "queries"/"documents" are not accepted: vLLM's names), each a string, an
// item or a list; one text_1 is scored against every text_2, or lists of
// equal length pair by pair. -> {"data": [{"index", "object": "score",
// "score"}], "usage"}.
func (h *Handler) score(w http.ResponseWriter, r *http.Request) {
	var req scoreRequest
	if bad := h.decodeBody(w, r, &req); bad != nil {
		refuse(w, bad)
		return
	}
	a, bad := h.inputs(r, req.Text1, "text_1")
	if bad != nil {
		refuse(w, bad)
		return
	}
	b, bad := h.inputs(r, req.Text2, "text_2")
	if bad != nil {
		refuse(w, bad)
		return
	}
	if len(a) != 1 && len(a) != len(b) {
		refuse(w, &badRequest{http.StatusBadRequest, "text_1", engine.CodeInvalid,
			fmt.Sprintf("text_1 has %d inputs and text_2 %d: give one text_1, or as many as text_2", len(a), len(b))})
		return
	}
	if len(b) > h.maxDocuments() {
		refuse(w, &badRequest{http.StatusBadRequest, "text_2", engine.CodeInvalid,
			fmt.Sprintf("too many inputs in text_2: %d (at most %d per request)", len(b), h.maxDocuments())})
		return
	}
	pair := func(i int) int { return i }
	if len(a) == 1 {
		pair = func(int) int { return 0 }
	}
	scores, tokens, ok := h.scoreDocs(w, r, a, b, pair, scoreOptions{multi: req.Multivector})
	if !ok {
		return
	}
	data := make([]map[string]any, len(scores))
	for i, s := range scores {
		data[i] = map[string]any{"index": i, "object": "score", "score": s}
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": fmt.Sprintf("score-%d", time.Now().UnixNano()), "object": "list",
		"created": time.Now().Unix(), "model": h.emb.Info().Name, "data": data,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}
