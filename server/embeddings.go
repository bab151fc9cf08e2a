package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/model/heads"
)

// embeddingsRequest is the body of POST /v1/embeddings: the OpenAI fields,
// the Jina ones, and vembed's extensions (per_span, min/max_pixels).
// Unknown fields are refused (see decodeStrict); known fields of the wrong
// type are an error.
type embeddingsRequest struct {
	Input             json.RawMessage `json:"input"`
	Model             string          `json:"model"`
	User              string          `json:"user"`
	EncodingFormat    string          `json:"encoding_format"`
	EmbeddingType     json.RawMessage `json:"embedding_type"` // a name, or Jina's list of names
	Dimensions        *int            `json:"dimensions"`
	Task              string          `json:"task"`
	Instruction       string          `json:"instruction"`
	ReturnMultivector bool            `json:"return_multivector"`
	PerSpan           bool            `json:"per_span"`
	Normalized        *bool           `json:"normalized"`
	Normalize         *bool           `json:"normalize"`
	MinPixels         *int            `json:"min_pixels"`
	MaxPixels         *int            `json:"max_pixels"`
	Truncate          bool            `json:"truncate"`
	LateChunking      bool            `json:"late_chunking"`
	// Messages is vLLM's chat form: one input made of the user
	// messages' content parts, in order.
	Messages json.RawMessage `json:"messages"`
	// Modality is Infinity's: "image" makes every input string an image
	// (URL, data URI or base64).
	Modality string `json:"modality"`
	// PoolFactor clusters each input's multi-vectors down to
	// max(n/pool_factor, 1) (heads.PoolTokens).
	PoolFactor int `json:"pool_factor"`
}

type embeddingsResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  usage           `json:"usage"`
}

// embeddingData carries "embedding" for single vectors and "embeddings" (one
// per token) for multi-vectors, as Jina's API does.
type embeddingData struct {
	Object         string `json:"object"`
	Index          int    `json:"index"`
	Embedding      any    `json:"embedding,omitempty"`
	Embeddings     []any  `json:"embeddings,omitempty"`
	SpanEmbeddings []any  `json:"span_embeddings,omitempty"`
}

type usage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// badRequest is a refusal the handler produces itself, before the engine.
type badRequest struct {
	status      int
	param, code string
	msg         string
}

func (h *Handler) embeddings(w http.ResponseWriter, r *http.Request) {
	resp, enc, ok := h.embedBody(w, r)
	if !ok {
		return
	}
	info := h.emb.Info()
	out := embeddingsResponse{Object: "list", Model: info.Name, Data: make([]embeddingData, len(resp.Embeddings)),
		Usage: usage{PromptTokens: resp.PromptTokens, TotalTokens: resp.PromptTokens}}
	for i, e := range resp.Embeddings {
		d := embeddingData{Object: "embedding", Index: i}
		if e.Vector != nil {
			d.Embedding = encodeOut(e.Vector, enc)
		}
		d.Embeddings = encodeAll(e.Multi, enc)
		d.SpanEmbeddings = encodeAll(e.Spans, enc)
		out.Data[i] = d
	}
	writeJSON(w, http.StatusOK, out)
}

func encodeAll(vs [][]float32, enc string) []any {
	if vs == nil {
		return nil
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = encodeOut(v, enc)
	}
	return out
}

func allFinite(vs [][]float32) bool {
	for _, v := range vs {
		if !finite(v) {
			return false
		}
	}
	return true
}

// embedBody runs the embeddings request in the body (of /v1/embeddings or
// /pooling) and pools its multi-vectors when pool_factor asks, returning
// the result and the output encoding. It writes the error response itself
// when it returns false. The body is read and checked before a slot is
// taken: a client that sends slowly holds a connection, never a slot.
func (h *Handler) embedBody(w http.ResponseWriter, r *http.Request) (*engine.Response, string, bool) {
	req, enc, poolFactor, bad := h.parseEmbeddings(w, r)
	if bad != nil {
		refuse(w, bad)
		return nil, "", false
	}
	resp, ok := h.run(w, r, req)
	if !ok {
		return nil, "", false
	}
	if poolFactor > 1 {
		for i := range resp.Embeddings {
			resp.Embeddings[i].Multi = heads.PoolTokens(resp.Embeddings[i].Multi, poolFactor)
		}
	}
	return resp, enc, true
}

// parseEmbeddings reads and validates the body. It returns the engine
// request, the output encoding and the pool factor, or the refusal.
func (h *Handler) parseEmbeddings(w http.ResponseWriter, r *http.Request) (engine.Request, string, int, *badRequest) {
	req, enc, er, bad := h.parseEmbeddingsRequest(w, r)
	if bad == nil && er.PoolFactor != 0 {
		switch {
		case er.PoolFactor < 1:
			bad = &badRequest{http.StatusBadRequest, "pool_factor", engine.CodeInvalid, fmt.Sprintf("pool_factor must be at least 1, got %d", er.PoolFactor)}
		case !er.ReturnMultivector:
			bad = &badRequest{http.StatusBadRequest, "pool_factor", engine.CodeInvalid, "pool_factor pools multi-vectors: it needs return_multivector"}
		}
	}
	return req, enc, er.PoolFactor, bad
}

func (h *Handler) parseEmbeddingsRequest(w http.ResponseWriter, r *http.Request) (engine.Request, string, embeddingsRequest, *badRequest) {
	var req engine.Request
	var er embeddingsRequest
	if bad := h.decodeBody(w, r, &er); bad != nil {
		return req, "", er, bad
	}
	enc, bad := embeddingTypes(er.EncodingFormat, er.EmbeddingType)
	if bad != nil {
		return req, "", er, bad
	}
	input, bad := inputField(er)
	if bad != nil {
		return req, "", er, bad
	}
	if er.LateChunking {
		return req, "", er, &badRequest{http.StatusBadRequest, "late_chunking", "unsupported", "late_chunking is not supported"}
	}
	if er.Dimensions != nil && *er.Dimensions <= 0 {
		return req, "", er, &badRequest{http.StatusBadRequest, "dimensions", engine.CodeInvalid,
			fmt.Sprintf("dimensions must be a positive integer, got %d", *er.Dimensions)}
	}
	if er.Normalized != nil && er.Normalize != nil && *er.Normalized != *er.Normalize {
		return req, "", er, &badRequest{http.StatusBadRequest, "normalized", engine.CodeInvalid, "normalized and normalize disagree"}
	}
	ins, bad := h.inputs(r, input, "input")
	if bad != nil {
		return req, "", er, bad
	}
	req = engine.Request{Inputs: ins, Task: er.Task, Instruction: er.Instruction, Multivector: er.ReturnMultivector, PerSpan: er.PerSpan, Truncate: er.Truncate}
	if er.Dimensions != nil {
		req.Dimensions = *er.Dimensions
	}
	if (er.Normalized != nil && !*er.Normalized) || (er.Normalize != nil && !*er.Normalize) {
		req.Unnormalized = true
	}
	for _, p := range []struct {
		name string
		v    *int
		dst  *int
	}{{"min_pixels", er.MinPixels, &req.MinPixels}, {"max_pixels", er.MaxPixels, &req.MaxPixels}} {
		if p.v == nil {
			continue
		}
		if *p.v <= 0 {
			return req, "", er, &badRequest{http.StatusBadRequest, p.name, engine.CodeInvalid, fmt.Sprintf("%s must be positive, got %d", p.name, *p.v)}
		}
		*p.dst = *p.v
	}
	return req, enc, er, nil
}

// listPrefix marks an encoding that is Jina's list of embedding types.
const listPrefix = "list:"

// embeddingTypes resolves encoding_format and embedding_type, which may be
// Jina's list of types: each vector then becomes an object with one
// encoding per type ({"float": […], "binary": […]}).
func embeddingTypes(format string, typ json.RawMessage) (string, *badRequest) {
	var one string
	if len(typ) == 0 || json.Unmarshal(typ, &one) == nil {
		return outputEncoding(format, one)
	}
	var list []string
	if err := json.Unmarshal(typ, &list); err != nil || len(list) == 0 {
		return "", &badRequest{http.StatusBadRequest, "embedding_type", engine.CodeInvalid, "embedding_type must be a type name or a non-empty list of them"}
	}
	if format != "" {
		return "", &badRequest{http.StatusBadRequest, "encoding_format", engine.CodeInvalid, "encoding_format cannot be given with a list of embedding types"}
	}
	for _, t := range list {
		if _, bad := outputEncoding("", t); bad != nil || t == "" {
			return "", &badRequest{http.StatusBadRequest, "embedding_type", engine.CodeInvalid,
				fmt.Sprintf("unknown embedding_type %s (want %s)", echo(t), strings.Join(encodings, ", "))}
		}
	}
	return listPrefix + strings.Join(list, ","), nil
}

// encodeOut encodes a vector in enc, or in each type of a list.
func encodeOut(v []float32, enc string) any {
	names, ok := strings.CutPrefix(enc, listPrefix)
	if !ok {
		return encodeVector(v, enc)
	}
	out := map[string]any{}
	for _, n := range strings.Split(names, ",") {
		out[n] = encodeVector(v, n)
	}
	return out
}

// outputEncoding resolves encoding_format (OpenAI) and embedding_type (Jina),
// which are aliases.
func outputEncoding(format, typ string) (string, *badRequest) {
	if format != "" && typ != "" && format != typ {
		return "", &badRequest{http.StatusBadRequest, "encoding_format", engine.CodeInvalid,
			fmt.Sprintf("encoding_format %s and embedding_type %s disagree", echo(format), echo(typ))}
	}
	enc := format
	param := "encoding_format"
	if enc == "" {
		enc, param = typ, "embedding_type"
	}
	switch enc {
	case "":
		return encFloat, nil
	}
	if slices.Contains(encodings, enc) {
		return enc, nil
	}
	return "", &badRequest{http.StatusBadRequest, param, engine.CodeInvalid,
		fmt.Sprintf("unknown %s %s (want %s)", param, echo(enc), strings.Join(encodings, ", "))}
}

func jsonError(err error) *badRequest {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &badRequest{http.StatusBadRequest, te.Field, "invalid_type", "invalid request: " + typeMessage(err).Error()}
	}
	if errors.Is(err, io.EOF) {
		return &badRequest{http.StatusBadRequest, "", "invalid_json", "empty request body; send a JSON object"}
	}
	return &badRequest{http.StatusBadRequest, "", "invalid_json", "invalid JSON: " + err.Error()}
}

func (h *Handler) writeEngineError(w http.ResponseWriter, r *http.Request, err error) {
	if ie, ok := engine.AsInputError(err); ok {
		status := http.StatusBadRequest
		if ie.TooLarge() {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, "invalid_request_error", ie.Param, ie.Code, ie.Error())
		return
	}
	switch {
	case errors.Is(err, engine.ErrOverloaded):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "", "overloaded", err.Error())
		return
	case errors.Is(err, engine.ErrShuttingDown):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "server_error", "", "shutting_down", err.Error())
		return
	}
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		writeError(w, http.StatusGatewayTimeout, "server_error", "", "timeout",
			fmt.Sprintf("the request took longer than the server's %v limit", h.opts.RequestTimeout))
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nobody reads this answer. 499 is the
		// conventional log status for it.
		writeError(w, 499, "invalid_request_error", "", "cancelled", "request cancelled")
		return
	}
	h.log.Error("embedding failed", "err", err)
	writeError(w, http.StatusInternalServerError, "server_error", "", "", "internal error: "+err.Error())
}

// admit takes one of the MaxPending slots, or answers 429 with
// Retry-After and returns false.
func (h *Handler) admit(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case h.pending <- struct{}{}:
		return func() { <-h.pending }, true
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "", "overloaded",
			fmt.Sprintf("%d requests in flight, the server's limit; retry later", cap(h.pending)))
		return nil, false
	}
}

// deadline bounds a request's time in the engine by RequestTimeout.
func (h *Handler) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.opts.RequestTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, h.opts.RequestTimeout)
}

// refuseLongText refuses, without decoding the JSON, a body holding a
// string longer than the model's text limit that cannot be an image (a
// byte outside base64, data URIs and URLs, such as a space or any
// non-ASCII byte): decoding a 50 MB text would take a second, and a
// request whose text is over the limit fails anyway unless it truncates.
// Anything else takes the ordinary path, which checks every input.
func (h *Handler) refuseLongText(body []byte) *badRequest {
	lim := h.emb.Info().MaxTextBytes
	if lim <= 0 || len(body) <= lim || bytes.Contains(body, []byte(`"truncate"`)) {
		return nil
	}
	n := longTextString(body, lim)
	if n == 0 {
		return nil
	}
	return &badRequest{http.StatusBadRequest, "input", engine.CodeTooLong,
		fmt.Sprintf("a text of about %d bytes is over the model's limit of %d tokens (at most %d bytes); send \"truncate\": true to cut it", n, h.emb.Info().ContextLength, lim)}
}

// imageChars are the bytes of base64 (both alphabets), data URIs, URLs and
// the JSON escapes base64 line breaks become.
var imageChars = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_:;,.%?&#~@!$'()*[]\\") {
		t[c] = true
	}
	return t
}()

// longTextString returns the length of the first JSON string literal in
// body longer than lim bytes that holds a byte no image reference has, or
// 0. It only follows quotes and escapes, so it runs at memory speed.
func longTextString(body []byte, lim int) int {
	for i := 0; i < len(body); {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			return 0
		}
		start := i + q + 1
		end := start
		for {
			e := bytes.IndexByte(body[end:], '"')
			if e < 0 {
				return 0
			}
			end += e
			bs := 0
			for j := end - 1; j >= start && body[j] == '\\'; j-- {
				bs++
			}
			if bs%2 == 0 {
				break
			}
			end++
		}
		if end-start > lim {
			for _, c := range body[start:end] {
				if !imageChars[c] {
					return end - start
				}
			}
		}
		i = end + 1
	}
	return 0
}

// run admits req, runs it under the request deadline and checks its
// result, writing the error response itself when it returns false.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, req engine.Request) (*engine.Response, bool) {
	return h.runNamed(w, r, req, "input")
}

// runNamed is run for a route whose inputs field has another name than
// "input" (Cohere's "texts"): the engine's errors name that field.
func (h *Handler) runNamed(w http.ResponseWriter, r *http.Request, req engine.Request, param string) (*engine.Response, bool) {
	return h.runWith(w, r, req, param, h.emb.Embed)
}

// runWith is runNamed with the embedding call given (a search's query,
// which falls back from the model's input type to its query task).
func (h *Handler) runWith(w http.ResponseWriter, r *http.Request, req engine.Request, param string, embed func(context.Context, engine.Request) (*engine.Response, error)) (*engine.Response, bool) {
	release, ok := h.admit(w)
	if !ok {
		return nil, false
	}
	defer release()
	return h.runAdmitted(w, r, req, param, embed)
}

// runAdmitted is runWith for a request that holds its MaxPending slot
// already (a search, which keeps it while it scores).
func (h *Handler) runAdmitted(w http.ResponseWriter, r *http.Request, req engine.Request, param string, embed func(context.Context, engine.Request) (*engine.Response, error)) (*engine.Response, bool) {
	ctx, cancel := h.deadline(r.Context())
	defer cancel()
	resp, err := embed(ctx, req)
	if ie, ok := engine.AsInputError(err); ok && param != "input" {
		if rest, ok := strings.CutPrefix(ie.Param, "input"); ok && (rest == "" || rest[0] == '[') {
			err = &engine.InputError{Param: param + rest, Code: ie.Code, Err: ie.Err}
		}
	}
	if err != nil {
		h.writeEngineError(w, r, err)
		return nil, false
	}
	logAttrs(w, "inputs", len(req.Inputs), "tokens", resp.PromptTokens)
	for i, e := range resp.Embeddings {
		// JSON has no NaN or infinity, and a binary encoding would hide
		// them: a non-finite value is an engine fault, not an answer.
		if !finite(e.Vector) || !allFinite(e.Multi) || !allFinite(e.Spans) {
			h.log.Error("non-finite embedding", "index", i)
			writeError(w, http.StatusInternalServerError, "server_error", "", "", "the model produced a non-finite value")
			return nil, false
		}
	}
	return resp, true
}

// decodeBody reads a JSON request body into v: bounded, refused early when
// it holds an over-long text, valid UTF-8, one object.
func (h *Handler) decodeBody(w http.ResponseWriter, r *http.Request, v any) *badRequest {
	return h.decodeBodyOf(w, r, v, false)
}

// decodeBodyOf is decodeBody for a route that cuts over-long texts unless
// told not to (Ollama's): those are not refused early.
func (h *Handler) decodeBodyOf(w http.ResponseWriter, r *http.Request, v any, truncatesByDefault bool) *badRequest {
	body, bad := h.readBody(w, r)
	if bad != nil {
		return bad
	}
	if !truncatesByDefault {
		if bad := h.refuseLongText(body); bad != nil {
			return bad
		}
	}
	// encoding/json would silently replace invalid UTF-8 by U+FFFD and so
	// embed a different text than the one sent.
	if !utf8.Valid(body) {
		return &badRequest{http.StatusBadRequest, "", "invalid_utf8", "request body is not valid UTF-8"}
	}
	// The same for an escaped surrogate that is not half of a pair
	// ("\ud800"): encoding/json turns it into U+FFFD as silently.
	if at := loneSurrogate(body); at >= 0 {
		return &badRequest{http.StatusBadRequest, "", "invalid_utf8",
			fmt.Sprintf("request body has an unpaired surrogate escape at byte %d, which is not a character", at)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if f, ok := unknownField(err); ok {
			return unknownFieldError(f, v)
		}
		return jsonError(err)
	}
	if dec.More() {
		return &badRequest{http.StatusBadRequest, "", "invalid_json", "invalid JSON: data after the request object"}
	}
	if key, dup := duplicateKey(body); dup {
		return &badRequest{http.StatusBadRequest, key, "invalid_json",
			fmt.Sprintf("invalid JSON: key %s appears twice in one object (field names match regardless of case); send it once", echo(key))}
	}
	return nil
}

// inputField returns the request's inputs in the "input" form: "input"
// itself, vLLM's "messages" as one interleaved input, or, with Infinity's
// "modality": "image", every string of "input" as an image.
func inputField(er embeddingsRequest) (json.RawMessage, *badRequest) {
	switch {
	case er.Messages != nil && er.Input != nil:
		return nil, &badRequest{http.StatusBadRequest, "messages", engine.CodeInvalid, `send either "input" or "messages", not both`}
	case er.Messages != nil:
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := decodeStrict(er.Messages, &msgs); err != nil || len(msgs) == 0 {
			if f, ok := unknownField(errOrNil(err)); ok {
				return nil, &badRequest{http.StatusBadRequest, "messages", "unknown_field", fmt.Sprintf("unknown field %s in a message (its fields: role, content)", echo(f))}
			}
			return nil, &badRequest{http.StatusBadRequest, "messages", engine.CodeInvalid, "messages must be a non-empty list of {role, content}"}
		}
		var parts []json.RawMessage
		for i, m := range msgs {
			if m.Role != "user" {
				return nil, &badRequest{http.StatusBadRequest, fmt.Sprintf("messages[%d].role", i), engine.CodeUnsupported,
					fmt.Sprintf("role %s: an embedding input is made of user messages only", echo(m.Role))}
			}
			var one []json.RawMessage
			if len(m.Content) > 0 && m.Content[0] == '"' {
				one = []json.RawMessage{m.Content}
			} else if err := json.Unmarshal(m.Content, &one); err != nil {
				return nil, &badRequest{http.StatusBadRequest, fmt.Sprintf("messages[%d].content", i), engine.CodeInvalid, "content must be a string or a list of parts"}
			}
			parts = append(parts, one...)
		}
		raw, _ := json.Marshal([]map[string]any{{"content": parts}})
		return raw, nil
	}
	switch er.Modality {
	case "", "text":
		return er.Input, nil
	case "image":
		var refs []string
		if err := json.Unmarshal(er.Input, &refs); err != nil {
			var one string
			if err := json.Unmarshal(er.Input, &one); err != nil {
				return nil, &badRequest{http.StatusBadRequest, "input", engine.CodeInvalid, `with "modality": "image", input is a string or a list of strings, each an image`}
			}
			refs = []string{one}
		}
		items := make([]map[string]string, len(refs))
		for i, ref := range refs {
			items[i] = map[string]string{"image": ref}
		}
		raw, _ := json.Marshal(items)
		return raw, nil
	}
	return nil, &badRequest{http.StatusBadRequest, "modality", engine.CodeUnsupported,
		fmt.Sprintf("modality %s is not supported (text or image)", echo(er.Modality))}
}

// loneSurrogate returns the offset of the first \uXXXX escape in a JSON
// text that is a surrogate without its other half, or -1.
func loneSurrogate(body []byte) int {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`\u`))
		if j < 0 {
			return -1
		}
		at := i + j
		// An escaped backslash before it ("\\u") makes it plain text.
		bs := 0
		for k := at - 1; k >= 0 && body[k] == '\\'; k-- {
			bs++
		}
		i = at + 2
		if bs%2 == 1 {
			continue
		}
		u, ok := hex4(body[i:])
		if !ok {
			continue // invalid JSON; the decoder reports it
		}
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return at
		case u >= 0xD800 && u <= 0xDBFF:
			if len(body) < i+10 || body[i+4] != '\\' || body[i+5] != 'u' {
				return at
			}
			if lo, ok := hex4(body[i+6:]); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return at
			}
			i += 10
		}
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
