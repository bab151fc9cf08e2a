// Package client is a Go client of vembed's HTTP API (package server):
// embeddings of texts, images and interleaved inputs, single or
// multi-vector; rerank and score; the model card and health.
//
// Vectors travel as base64 of little-endian float32 (about half the bytes
// of JSON numbers, and exact) and are decoded by the client. Requests that
// meet 429 (overloaded) or 503 (shutting down, restarting) are retried,
// waiting what Retry-After says (seconds or an HTTP date; else a growing
// backoff), until the context ends or the retries set by WithRetries are
// spent. Every call honours its context.
//
//	c := client.New("http://localhost:8080", client.WithAPIKey(os.Getenv("VEMBED_API_KEY")))
//	res, err := c.Embed(ctx, client.EmbedRequest{
//		Inputs: []client.Input{client.Text("a cat"), client.ImageBytes(png)},
//	})
package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/vembed/vembed/internal/clip"
)

// An error answer's body is read up to maxErrorBody bytes and its message
// kept up to maxErrorMessage: an error names what failed, it does not
// carry a page.
const (
	maxErrorBody    = 64 << 10
	maxErrorMessage = 2048
)

// Client talks to one vembed server. It is safe for concurrent use.
type Client struct {
	base       string
	key        string
	http       *http.Client
	maxRetries int
	backoff    time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends the key as "Authorization: Bearer KEY".
func WithAPIKey(key string) Option { return func(c *Client) { c.key = key } }

// WithHTTPClient uses hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetries sets how many times a 429 or 503 answer is retried (default
// 4; 0 disables) and the first backoff when no Retry-After is given
// (default 500 ms, doubling).
func WithRetries(n int, backoff time.Duration) Option {
	return func(c *Client) { c.maxRetries, c.backoff = n, backoff }
}

// New returns a client of the server at baseURL ("http://host:port").
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), http: http.DefaultClient, maxRetries: 4, backoff: 500 * time.Millisecond}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Input is one input: a text, an image, or parts of both in order.
type Input struct {
	parts []part
}

type part struct {
	Text  string `json:"text,omitempty"`
	Image string `json:"image,omitempty"`
}

// Text is a text input (or part).
func Text(s string) Input { return Input{parts: []part{{Text: s}}} }

// ImageBytes is an image input from its encoded file bytes (PNG, JPEG…).
func ImageBytes(data []byte) Input {
	return Input{parts: []part{{Image: base64.StdEncoding.EncodeToString(data)}}}
}

// ImageURL is an image the server fetches (when it allows URLs).
func ImageURL(url string) Input { return Input{parts: []part{{Image: url}}} }

// Parts joins inputs into one interleaved input ("figure 3:", an image…).
func Parts(in ...Input) Input {
	var out Input
	for _, i := range in {
		out.parts = append(out.parts, i.parts...)
	}
	return out
}

// MarshalJSON writes the input in the server's "input" element form.
func (in Input) MarshalJSON() ([]byte, error) {
	if len(in.parts) == 1 {
		return json.Marshal(in.parts[0])
	}
	return json.Marshal(map[string]any{"content": in.parts})
}

// EmbedRequest is a POST /v1/embeddings request.
type EmbedRequest struct {
	Inputs      []Input
	Task        string // the model's task; "" for its default
	Instruction string // the instruction of models that take one (Qwen3-VL-Embedding)
	Dimensions  int    // Matryoshka size; 0 for the full width
	Multivector bool   // one vector per token
	PoolFactor  int    // with Multivector: cluster each input's vectors down to n/PoolFactor
	PerSpan     bool   // also one vector per image span, in SpanVector
	Truncate    bool   // cut texts over the model's limit instead of failing
}

// Embedding is one input's result.
type Embedding struct {
	Index      int         `json:"index"`
	Vector     []float32   `json:"embedding"`
	Multi      [][]float32 `json:"embeddings"`
	SpanVector [][]float32 `json:"span_embeddings"`
}

// EmbedResponse is the answer to an EmbedRequest.
type EmbedResponse struct {
	Model string      `json:"model"`
	Data  []Embedding `json:"data"`
	Usage Usage       `json:"usage"`
}

// Usage counts the language-model tokens of a request, image placeholder
// tokens included.
type Usage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Embed computes embeddings. Vectors travel as base64 of little-endian
// float32, a quarter of the size of JSON numbers, and are decoded here.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error) {
	body := map[string]any{"input": req.Inputs, "encoding_format": "base64"}
	for k, v := range map[string]any{"task": req.Task, "instruction": req.Instruction, "dimensions": req.Dimensions,
		"return_multivector": req.Multivector, "pool_factor": req.PoolFactor, "per_span": req.PerSpan, "truncate": req.Truncate} {
		if !reflect.ValueOf(v).IsZero() {
			body[k] = v
		}
	}
	var wire struct {
		Model string `json:"model"`
		Data  []struct {
			Index int      `json:"index"`
			Vec   b64Vec   `json:"embedding"`
			Multi []b64Vec `json:"embeddings"`
			Spans []b64Vec `json:"span_embeddings"`
		} `json:"data"`
		Usage Usage `json:"usage"`
	}
	if err := c.do(ctx, "POST", "/v1/embeddings", body, &wire); err != nil {
		return nil, err
	}
	out := &EmbedResponse{Model: wire.Model, Usage: wire.Usage, Data: make([]Embedding, len(wire.Data))}
	rows := func(vs []b64Vec) [][]float32 {
		if vs == nil {
			return nil
		}
		out := make([][]float32, len(vs))
		for i, v := range vs {
			out[i] = v
		}
		return out
	}
	for i, d := range wire.Data {
		out.Data[i] = Embedding{Index: d.Index, Vector: d.Vec, Multi: rows(d.Multi), SpanVector: rows(d.Spans)}
	}
	return out, nil
}

// b64Vec is a vector sent as base64 of little-endian float32, or as JSON
// numbers.
type b64Vec []float32

func (v *b64Vec) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		return json.Unmarshal(b, (*[]float32)(v))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("vembed: a vector is neither numbers nor a base64 string: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%4 != 0 {
		return fmt.Errorf("vembed: a vector's base64 does not hold float32 values (%d bytes, %v)", len(raw), err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	*v = out
	return nil
}

// RerankRequest is a POST /v1/rerank request.
type RerankRequest struct {
	Query       Input
	Documents   []Input // at most 1000
	TopN        int     // 0: all
	Multivector bool    // MaxSim of multi-vectors instead of cosine (embedding models)
	Instruction string  // a reranker model's instruction, or the query's for embedding models that take one
}

// RerankResult is one document's score; Index is its place in Documents.
type RerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
}

// Rerank orders documents by relevance to the query, best first.
func (c *Client) Rerank(ctx context.Context, req RerankRequest) ([]RerankResult, error) {
	body := map[string]any{"query": req.Query, "documents": req.Documents, "return_documents": false}
	if req.TopN > 0 {
		body["top_n"] = req.TopN
	}
	if req.Multivector {
		body["multivector"] = true
	}
	if req.Instruction != "" {
		body["instruction"] = req.Instruction
	}
	var out struct {
		Results []RerankResult `json:"results"`
	}
	if err := c.do(ctx, "POST", "/v1/rerank", body, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// Score scores each document against the query, in the documents' order.
func (c *Client) Score(ctx context.Context, query Input, docs []Input, multivector bool) ([]float64, error) {
	return c.score(ctx, query, docs, len(docs), multivector)
}

// ScorePairs scores documents[i] against queries[i] for every i.
func (c *Client) ScorePairs(ctx context.Context, queries, docs []Input, multivector bool) ([]float64, error) {
	if len(queries) != len(docs) {
		return nil, fmt.Errorf("vembed: %d queries for %d documents", len(queries), len(docs))
	}
	return c.score(ctx, queries, docs, len(docs), multivector)
}

func (c *Client) score(ctx context.Context, text1, text2 any, n int, multivector bool) ([]float64, error) {
	var out struct {
		Data []struct {
			Index int     `json:"index"`
			Score float64 `json:"score"`
		} `json:"data"`
	}
	body := map[string]any{"text_1": text1, "text_2": text2}
	if multivector {
		body["multivector"] = true
	}
	if err := c.do(ctx, "POST", "/v1/score", body, &out); err != nil {
		return nil, err
	}
	if len(out.Data) != n {
		return nil, fmt.Errorf("vembed: %d scores for %d documents", len(out.Data), n)
	}
	scores := make([]float64, n)
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= n {
			return nil, fmt.Errorf("vembed: a score for document %d of %d", d.Index, n)
		}
		scores[d.Index] = d.Score
	}
	return scores, nil
}

// Model is the served model's card (GET /v1/models).
type Model struct {
	ID                   string   `json:"id"`
	Architecture         string   `json:"architecture"`
	Modalities           []string `json:"modalities"`
	Dimensions           int      `json:"dimensions"`
	MatryoshkaDimensions []int    `json:"matryoshka_dimensions"`
	MultivectorDimension int      `json:"multivector_dimension"`
	Tasks                []string `json:"tasks"`
	ContextLength        int      `json:"context_length"`
	RandomWeights        bool     `json:"random_weights"`
}

// Models lists the served models (one).
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var out struct {
		Data []Model `json:"data"`
	}
	if err := c.do(ctx, "GET", "/v1/models", nil, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// Model returns the card of the model id (GET /v1/models/{id}); an
// *Error with Status 404 when the server serves another.
func (c *Client) Model(ctx context.Context, id string) (*Model, error) {
	var out Model
	if err := c.do(ctx, "GET", "/v1/models/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Health returns nil when the server answers GET /health.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, "GET", "/health", nil, nil)
}

// Error is an error answer of the server, in the OpenAI error shape.
type Error struct {
	Status    int
	Message   string `json:"message"`
	Type      string `json:"type"`
	Param     string `json:"param"`
	Code      string `json:"code"`
	RequestID string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("vembed: %d %s", e.Status, e.Message)
	if e.Param != "" {
		msg += " (" + e.Param + ")"
	}
	return msg
}

// retryable reports whether a status may succeed later.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// do sends a request, retrying 429 and 503, and decodes a 200 answer into
// out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return fmt.Errorf("vembed: encoding the request: %w", err)
		}
	}
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(data))
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("vembed: %s %s: %w", method, path, err)
		}
		var answer io.Reader = resp.Body
		if resp.StatusCode != http.StatusOK {
			// An error's body is a message: a proxy's page of any size
			// is read only so far.
			answer = io.LimitReader(resp.Body, maxErrorBody)
		}
		raw, err := io.ReadAll(answer)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("vembed: %s %s: reading the answer: %w", method, path, err)
		}
		if resp.StatusCode == http.StatusOK {
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(raw, out); err != nil {
				return fmt.Errorf("vembed: %s %s: decoding the answer: %w", method, path, err)
			}
			return nil
		}
		apiErr := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-ID")}
		var env struct {
			Error *Error `json:"error"`
		}
		env.Error = apiErr
		if json.Unmarshal(raw, &env) != nil || apiErr.Message == "" {
			apiErr.Message = strings.TrimSpace(string(raw))
		}
		apiErr.Message = clip.String(apiErr.Message, maxErrorMessage)
		if !retryable(resp.StatusCode) || attempt >= c.maxRetries {
			return apiErr
		}
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			wait = d
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), apiErr)
		case <-time.After(wait):
		}
		wait = min(2*max(wait, c.backoff), 30*time.Second)
	}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
