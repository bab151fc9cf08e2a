package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
)

// The request shapes of other embedding servers, each mapped onto the same
// engine request as POST /v1/embeddings: Ollama (/api/embed,
// /api/embeddings), Hugging Face text-embeddings-inference (/embed,
// /embed_all, /info) and one model's card (/v1/models/{id}).

func (h *Handler) registerCompat() {
	h.handle("POST /api/embed", h.ollamaEmbed)
	h.handle("POST /api/embeddings", h.ollamaEmbeddings)
	h.handle("POST /embed", h.teiEmbed)
	h.handle("POST /embed_all", h.teiEmbedAll)
	h.handle("GET /info", h.teiInfo)
	h.handle("GET /v1/models/{id}", h.model)
	h.handle("POST /pooling", h.pooling)
	h.registerScore()
	h.registerCohere()
}

// refuse writes a badRequest.
func refuse(w http.ResponseWriter, bad *badRequest) {
	writeError(w, bad.status, "invalid_request_error", bad.param, bad.code, bad.msg)
}

// queryInput parses the query of a rerank request: one input, a string or
// an item.
func (h *Handler) queryInput(r *http.Request, raw json.RawMessage) ([]engine.Input, *badRequest) {
	query, bad := h.inputs(r, raw, "query")
	if bad == nil && len(query) != 1 {
		bad = &badRequest{http.StatusBadRequest, "query", engine.CodeInvalid, "query must be one input (a string or an item)"}
	}
	return query, bad
}

// inputs parses an input field in any form ParseInputs knows (strings
// being texts), fetching image URLs under the handler's policy.
func (h *Handler) inputs(r *http.Request, raw json.RawMessage, param string) ([]engine.Input, *badRequest) {
	if len(raw) == 0 {
		return nil, &badRequest{http.StatusBadRequest, param, engine.CodeEmpty, param + " is required"}
	}
	// A list is counted before its items are parsed: parsing millions of
	// them only to refuse the request would cost seconds.
	if n := arrayLen(raw); n > h.opts.MaxInputs {
		return nil, &badRequest{http.StatusBadRequest, param, engine.CodeInvalid,
			fmt.Sprintf("too many inputs: %d (at most %d per request)", n, h.opts.MaxInputs)}
	}
	ins, err := h.parseInputs(r.Context(), raw)
	if errors.Is(err, errInflightFull) {
		return nil, &badRequest{http.StatusTooManyRequests, "", "overloaded", err.Error()}
	}
	if err != nil {
		ie, _ := engine.AsInputError(err)
		// ParseInputs names the field "input"; other APIs call it otherwise.
		p := param + strings.TrimPrefix(ie.Param, "input")
		return nil, &badRequest{http.StatusBadRequest, p, ie.Code, strings.Replace(ie.Error(), ie.Param, p, 1)}
	}
	if len(ins) > h.opts.MaxInputs {
		return nil, &badRequest{http.StatusBadRequest, param, engine.CodeInvalid,
			fmt.Sprintf("too many inputs: %d (at most %d per request)", len(ins), h.opts.MaxInputs)}
	}
	return ins, nil
}

// ollamaEmbedRequest is the body of Ollama's /api/embed; keep_alive and
// options are accepted and ignored (the model stays loaded, its options
// are the server's).
type ollamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"`
	Dimensions int             `json:"dimensions"`
	KeepAlive  json.RawMessage `json:"keep_alive"`
	Options    json.RawMessage `json:"options"`
}

// ollamaEmbeddingsRequest is the body of Ollama's older /api/embeddings.
type ollamaEmbeddingsRequest struct {
	Model     string          `json:"model"`
	Prompt    *string         `json:"prompt"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Options   json.RawMessage `json:"options"`
}

// ollamaEmbed is Ollama's POST /api/embed: {"model", "input": string or
// list, "truncate" (default true, as Ollama), "dimensions", "keep_alive",
// "options"} -> {"model", "embeddings", "total_duration",
// "load_duration", "prompt_eval_count"}.
func (h *Handler) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollamaEmbedRequest
	if bad := h.decodeBodyOf(w, r, &req, true); bad != nil {
		refuse(w, bad)
		return
	}
	ins, bad := h.inputs(r, req.Input, "input")
	if bad != nil {
		refuse(w, bad)
		return
	}
	resp, ok := h.run(w, r, engine.Request{Inputs: ins, Dimensions: req.Dimensions, Truncate: req.Truncate == nil || *req.Truncate})
	if !ok {
		return
	}
	embs := make([][]float32, len(resp.Embeddings))
	for i, e := range resp.Embeddings {
		embs[i] = e.Vector
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": h.emb.Info().Name, "embeddings": embs,
		"total_duration": time.Since(start).Nanoseconds(), "load_duration": 0, "prompt_eval_count": resp.PromptTokens})
}

// ollamaEmbeddings is Ollama's older POST /api/embeddings: {"model",
// "prompt"} -> {"embedding"}.
func (h *Handler) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req ollamaEmbeddingsRequest
	if bad := h.decodeBody(w, r, &req); bad != nil {
		refuse(w, bad)
		return
	}
	if req.Prompt == nil || *req.Prompt == "" {
		refuse(w, &badRequest{http.StatusBadRequest, "prompt", engine.CodeEmpty, "prompt is required"})
		return
	}
	resp, ok := h.run(w, r, engine.Request{Inputs: []engine.Input{engine.TextInput(*req.Prompt)}})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"embedding": resp.Embeddings[0].Vector})
}

// teiRequest is the body of text-embeddings-inference's /embed and
// /embed_all; inputs take every form of "input" (texts, images, parts).
type teiRequest struct {
	Inputs     json.RawMessage `json:"inputs"`
	Normalize  *bool           `json:"normalize"`
	Truncate   bool            `json:"truncate"`
	Dimensions int             `json:"dimensions"`
	PromptName *string         `json:"prompt_name"`
}

func (h *Handler) teiRequest(w http.ResponseWriter, r *http.Request, multivector bool) (*engine.Response, bool) {
	var req teiRequest
	if bad := h.decodeBody(w, r, &req); bad != nil {
		refuse(w, bad)
		return nil, false
	}
	ins, bad := h.inputs(r, req.Inputs, "inputs")
	if bad != nil {
		refuse(w, bad)
		return nil, false
	}
	er := engine.Request{Inputs: ins, Dimensions: req.Dimensions, Truncate: req.Truncate, Multivector: multivector,
		Unnormalized: req.Normalize != nil && !*req.Normalize}
	if req.PromptName != nil {
		// TEI's prompt names select a sentence-transformers prompt; here
		// they name the model's tasks.
		er.Task = *req.PromptName
	}
	return h.run(w, r, er)
}

// teiEmbed is TEI's POST /embed: one vector per input, as a bare list.
func (h *Handler) teiEmbed(w http.ResponseWriter, r *http.Request) {
	resp, ok := h.teiRequest(w, r, false)
	if !ok {
		return
	}
	out := make([][]float32, len(resp.Embeddings))
	for i, e := range resp.Embeddings {
		out[i] = e.Vector
	}
	writeJSON(w, http.StatusOK, out)
}

// teiEmbedAll is TEI's POST /embed_all: every token's vector, here the
// model's multi-vector rows (the late-interaction output), which need a
// multi-vector projector.
func (h *Handler) teiEmbedAll(w http.ResponseWriter, r *http.Request) {
	resp, ok := h.teiRequest(w, r, true)
	if !ok {
		return
	}
	out := make([][][]float32, len(resp.Embeddings))
	for i, e := range resp.Embeddings {
		out[i] = e.Multi
	}
	writeJSON(w, http.StatusOK, out)
}

// teiInfo is TEI's GET /info.
func (h *Handler) teiInfo(w http.ResponseWriter, r *http.Request) {
	info := h.emb.Info()
	pooling := "mean"
	if info.Recipe != "jina-embeddings-v4" && info.Recipe != "" {
		pooling = "last"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model_id": info.Name, "model_type": map[string]any{"embedding": map[string]any{"pooling": pooling}},
		"max_input_length": info.ContextLength, "max_client_batch_size": h.opts.MaxInputs,
		"max_concurrent_requests": h.opts.MaxPending, "max_batch_tokens": info.ContextLength,
		"version": version(), "prompts": info.Tasks,
	})
}

// model is GET /v1/models/{id}: the card of the served model, 404 for
// another id.
func (h *Handler) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id != h.emb.Info().Name {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("model %s is not served here (this server serves %q)", echo(id), h.emb.Info().Name))
		return
	}
	writeJSON(w, http.StatusOK, h.card())
}

// pooling is vLLM's POST /pooling: the body of /v1/embeddings (input or
// messages, every field), answered {"id", "object": "list", "created",
// "model", "data": [{"index", "object": "pooling", "data"}], "usage"},
// where data is the vector, or the multi-vector rows with
// return_multivector (pooled by pool_factor), in the encoding asked.
func (h *Handler) pooling(w http.ResponseWriter, r *http.Request) {
	resp, enc, ok := h.embedBody(w, r)
	if !ok {
		return
	}
	data := make([]map[string]any, len(resp.Embeddings))
	for i, e := range resp.Embeddings {
		var v any
		if e.Vector != nil {
			v = encodeOut(e.Vector, enc)
		} else {
			v = encodeAll(e.Multi, enc)
		}
		data[i] = map[string]any{"index": i, "object": "pooling", "data": v}
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": fmt.Sprintf("pool-%d", time.Now().UnixNano()), "object": "list",
		"created": time.Now().Unix(), "model": h.emb.Info().Name, "data": data,
		"usage": usage{PromptTokens: resp.PromptTokens, TotalTokens: resp.PromptTokens}})
}
