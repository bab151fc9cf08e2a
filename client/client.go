// Package client is a Go client of vembed's HTTP API (package server):
// embeddings of texts, images and interleaved inputs, single or
// multi-vector; rerank and score; the model card and health.
//
// Requests that meet 429 (overloaded) or 503 (shutting down, restarting)
// are retried, waiting what Retry-After says (or a growing backoff), until
// the context ends or MaxRetries is reached. Every call honours its
// context.
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	Dimensions  int    // Matryoshka size; 0 for the full width
	Multivector bool   // one vector per token
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
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// Embed computes embeddings.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error) {
	body := map[string]any{"input": req.Inputs}
	if req.Task != "" {
		body["task"] = req.Task
	}
	if req.Dimensions > 0 {
		body["dimensions"] = req.Dimensions
	}
	if req.Multivector {
		body["return_multivector"] = true
	}
	if req.Truncate {
		body["truncate"] = true
	}
	var out EmbedResponse
	if err := c.do(ctx, "POST", "/v1/embeddings", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RerankRequest is a POST /v1/rerank request.
type RerankRequest struct {
	Query       Input
	Documents   []Input
	TopN        int  // 0: all
	Multivector bool // MaxSim of multi-vectors instead of cosine
}

// RerankResult is one document's score; Index is its place in Documents.
type RerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
}

// Rerank orders documents by relevance to the query, best first.
func (c *Client) Rerank(ctx context.Context, req RerankRequest) ([]RerankResult, error) {
	body := map[string]any{"query": req.Query, "documents": req.Documents, "return_documents": false, "multivector": req.Multivector}
	if req.TopN > 0 {
		body["top_n"] = req.TopN
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
	var out struct {
		Data []struct {
			Index int     `json:"index"`
			Score float64 `json:"score"`
		} `json:"data"`
	}
	if err := c.do(ctx, "POST", "/v1/score", map[string]any{"text_1": query, "text_2": docs, "multivector": multivector}, &out); err != nil {
		return nil, err
	}
	scores := make([]float64, len(docs))
	for _, d := range out.Data {
		if d.Index >= 0 && d.Index < len(scores) {
			scores[d.Index] = d.Score
		}
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
		raw, err := io.ReadAll(resp.Body)
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
		if !retryable(resp.StatusCode) || attempt >= c.maxRetries {
			return apiErr
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			wait = time.Duration(s) * time.Second
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), apiErr)
		case <-time.After(wait):
		}
		wait = min(2*max(wait, c.backoff), 30*time.Second)
	}
}
