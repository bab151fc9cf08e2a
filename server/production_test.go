package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/engine"
)

// statsEmbedder is a fakeEmbedder that reports engine statistics.
type statsEmbedder struct{ fakeEmbedder }

func (s *statsEmbedder) Stats() engine.Stats {
	return engine.Stats{QueuedRequests: 3, LMTokens: 1234,
		StepLMTokens: engine.Histogram{Bounds: []float64{16, 32}, Counts: []uint64{1, 2}, Count: 3, Sum: 70},
		Caches:       []engine.CacheStats{{Name: "embedding", Hits: 7, Misses: 2, Bytes: 4096, Capacity: 1 << 20}}}
}

func get(t *testing.T, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestAPIKeys(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{APIKeys: []string{"alpha-key", " beta-key "}})
	post := func(auth string) (int, map[string]any) {
		r := httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(`{"input":"a"}`))
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "Basic alpha-key", "Bearer alpha-keyx", "Bearer alpha-ke"} {
		code, out := post(auth)
		if code != 401 {
			t.Errorf("Authorization %q: status %d, want 401", auth, code)
			continue
		}
		checkError(t, out, "", "API key")
	}
	for _, auth := range []string{"Bearer alpha-key", "bearer beta-key", "Bearer  beta-key "} {
		if code, out := post(auth); code != 200 {
			t.Errorf("Authorization %q: status %d %v", auth, code, out)
		}
	}
	if rec := get(t, h, "/health"); rec.Code != 200 {
		t.Errorf("/health without a key: %d", rec.Code)
	}
	if rec := get(t, h, "/metrics"); rec.Code != 401 {
		t.Errorf("/metrics without a key: %d, want 401", rec.Code)
	}
	if rec := get(t, h, "/metrics", "Authorization", "Bearer beta-key"); rec.Code != 200 {
		t.Errorf("/metrics with a key: %d", rec.Code)
	}
	open := newTestHandler(&fakeEmbedder{}, Options{APIKeys: []string{"k"}, MetricsPublic: true})
	if rec := get(t, open, "/metrics"); rec.Code != 200 {
		t.Errorf("public /metrics without a key: %d", rec.Code)
	}
	if rec := get(t, open, "/v1/models"); rec.Code != 401 {
		t.Errorf("/v1/models without a key: %d, want 401", rec.Code)
	}
}

func TestMetrics(t *testing.T) {
	h := newTestHandler(&statsEmbedder{}, Options{})
	for range 2 {
		do(t, h, "POST", "/v1/embeddings", `{"input":"a"}`)
	}
	do(t, h, "POST", "/v1/embeddings", `{"input":`)
	body := get(t, h, "/metrics").Body.String()
	for _, want := range []string{
		`vembed_http_requests_total{code="200",route="POST /v1/embeddings"} 2`,
		`vembed_http_requests_total{code="400",route="POST /v1/embeddings"} 1`,
		`vembed_http_request_duration_seconds_count{route="POST /v1/embeddings"} 3`,
		`vembed_engine_queued_requests 3`,
		`vembed_engine_lm_tokens_total 1234`,
		`vembed_engine_step_lm_tokens_bucket{le="32"} 2`,
		`vembed_engine_step_lm_tokens_count 3`,
		`vembed_cache_hits_total{cache="embedding"} 7`,
		`vembed_cache_misses_total{cache="embedding"} 2`,
		`vembed_cache_bytes{cache="embedding"} 4096`,
		`go_goroutines`, `process_resident_memory_bytes`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestRequestID(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	if got := get(t, h, "/health", "X-Request-ID", "abc-123").Header().Get("X-Request-ID"); got != "abc-123" {
		t.Errorf("echoed request ID %q", got)
	}
	a, b := get(t, h, "/health").Header().Get("X-Request-ID"), get(t, h, "/health").Header().Get("X-Request-ID")
	if len(a) < 16 || a == b {
		t.Errorf("generated request IDs %q, %q", a, b)
	}
	// An ID that could forge a log line is replaced.
	if got := get(t, h, "/health", "X-Request-ID", "x\nlevel=ERROR").Header().Get("X-Request-ID"); strings.ContainsAny(got, "\n =") {
		t.Errorf("unsafe request ID kept: %q", got)
	}
	var logs bytes.Buffer
	h = New(&fakeEmbedder{}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	get(t, h, "/health", "X-Request-ID", "trace-me")
	if !strings.Contains(logs.String(), "id=trace-me") {
		t.Errorf("request ID not logged: %s", logs.String())
	}
}

// TestRefusalsLoggedOncePerInterval: 200 refused requests under overload
// make one log line with their count, not 200.
func TestRefusalsLoggedOncePerInterval(t *testing.T) {
	var logs syncBuffer
	block := make(chan struct{})
	h := New(blockingEmbedder{block}, Options{MaxPending: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(`{"input":"a"}`)))
		close(done)
	}()
	for len(h.pending) == 0 {
		time.Sleep(time.Millisecond)
	}
	for range 200 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(`{"input":"b"}`)))
		if rec.Code != 429 {
			t.Fatalf("status %d, want 429", rec.Code)
		}
	}
	close(block)
	<-done
	if n := strings.Count(logs.String(), "requests refused"); n != 1 {
		t.Errorf("%d refusal lines for 200 refusals, want 1:\n%s", n, logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ctxEmbedder waits for its context, as the engine does for a request
// whose deadline passes mid-computation, and counts the ones that stopped.
type ctxEmbedder struct {
	mu      sync.Mutex
	stopped int
}

func (c *ctxEmbedder) Info() engine.Info { return engine.Info{Name: "ctx"} }

func (c *ctxEmbedder) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	<-ctx.Done()
	c.mu.Lock()
	c.stopped++
	c.mu.Unlock()
	return nil, ctx.Err()
}

func TestRequestTimeout(t *testing.T) {
	emb := &ctxEmbedder{}
	h := newTestHandler(emb, Options{RequestTimeout: 50 * time.Millisecond})
	status, out := do(t, h, "POST", "/v1/embeddings", `{"input":"a"}`)
	if status != 504 {
		t.Fatalf("status %d, want 504", status)
	}
	checkError(t, out, "", "limit")
	if emb.stopped != 1 {
		t.Errorf("embedder stopped %d times", emb.stopped)
	}
}

// TestSlowBodiesHoldNoSlot: 64 clients trickling their bodies at a byte a
// second do not stop a normal request, because a request is admitted only
// once its body is read. Before, each held one of the MaxPending slots
// while it sent, and the normal request got 503.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{MaxPending: 4})
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"in")
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// A byte a second on every connection, until the test ends.
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			for _, c := range conns {
				c.Write([]byte(" "))
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // every slow request is in its handler
	for i := range 3 {
		resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(`{"input":"normal"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("normal request %d beside 64 slow senders: %d %s", i, resp.StatusCode, b)
		}
	}
}

// limitEmbedder is a fakeEmbedder with a text limit.
type limitEmbedder struct{ fakeEmbedder }

func (l *limitEmbedder) Info() engine.Info {
	i := l.fakeEmbedder.Info()
	i.ContextLength, i.MaxTextBytes = 8192, 163840
	return i
}

// TestHugeTextRefusedUndecoded: a 50 MB text is refused as too long
// without decoding the JSON or reaching the engine (it took 1.1 s through
// the decoder; see refuseLongText), while a request that truncates, and
// long base64 that may be an image, take the ordinary path.
func TestHugeTextRefusedUndecoded(t *testing.T) {
	emb := &limitEmbedder{}
	h := newTestHandler(emb, Options{})
	body := `{"input": "` + strings.Repeat("lorem ipsum ", 50<<20/12) + `"}`
	start := time.Now()
	status, out := do(t, h, "POST", "/v1/embeddings", body)
	took := time.Since(start)
	if status != 400 {
		t.Fatalf("status %d", status)
	}
	checkError(t, out, "input", "over the model's limit")
	if emb.last.Inputs != nil {
		t.Error("the engine saw the refused request")
	}
	t.Logf("50 MB text refused in %v", took)

	do(t, h, "POST", "/v1/embeddings", `{"truncate": true, "input": "`+strings.Repeat("lorem ipsum ", 20000)+`"}`)
	if !emb.last.Truncate || len(emb.last.Inputs) != 1 {
		t.Errorf("a truncating request did not reach the engine: %+v", emb.last.Truncate)
	}
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"input": "` + strings.Repeat("QUJD", 50000) + `"}`, 0},
		{`{"input": [{"image": "data:image/png;base64,` + strings.Repeat("QUJD", 50000) + `"}]}`, 0},
		{`{"input": "` + strings.Repeat(`a\"b`, 60000) + `"}`, 240000},
		{`{"input": "` + strings.Repeat("é", 90000) + `"}`, 180000},
		{`{"input": "short", "x": "` + strings.Repeat("ab", 10) + `"}`, 0},
		{`{"input": "unterminated ` + strings.Repeat("ab ", 90000), 0},
	} {
		if got := longTextString([]byte(c.body), 163840); got != c.want {
			t.Errorf("longTextString(%.40q...) = %d, want %d", c.body, got, c.want)
		}
	}
}

func FuzzLongTextString(f *testing.F) {
	for _, s := range []string{`{"input":"a b"}`, `"\\"`, `"a\"`, `""""`, `"\\\"x"`} {
		f.Add([]byte(s), 1)
	}
	f.Fuzz(func(t *testing.T, body []byte, lim int) {
		if lim < 0 {
			lim = -lim
		}
		if n := longTextString(body, lim); n < 0 || n > len(body) || (n > 0 && n <= lim) {
			t.Fatalf("longTextString = %d for a body of %d bytes, limit %d", n, len(body), lim)
		}
	})
}

func TestLoneSurrogateRefused(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	for body, ok := range map[string]bool{
		`{"input":"a\ud800b"}`:        false,
		`{"input":"a\udc00"}`:         false,
		`{"input":"\ud83d"}`:          false,
		`{"input":"\ud83d\u0041"}`:    false,
		`{"input":"\ud83d\ude00 ok"}`: true,
		`{"input":"\\ud800 literal"}`: true,
		`{"input":"\\\ud800"}`:        false,
		`{"input":"caf\u00e9"}`:       true,
	} {
		status, out := do(t, h, "POST", "/v1/embeddings", body)
		if ok && status != 200 {
			t.Errorf("%s: status %d %v", body, status, out)
		}
		if !ok {
			if status != 400 {
				t.Errorf("%s: status %d, want 400", body, status)
				continue
			}
			checkError(t, out, "", "surrogate")
		}
	}
}

// TestDeploymentScalesOnExportedMetric: the Kubernetes autoscaler scales
// on a metric /metrics really exports, and probes a route that exists.
func TestDeploymentScalesOnExportedMetric(t *testing.T) {
	// The chart's servers, their probes and autoscalers are one template.
	hpa, err := os.ReadFile(filepath.Join("..", "deploy", "helm", "vembed", "templates", "_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	lm := hpa
	body := get(t, newTestHandler(&statsEmbedder{}, Options{}), "/metrics").Body.String()
	for _, line := range strings.Split(string(hpa), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "name: vembed_"); ok {
			if !strings.Contains(body, "\nvembed_"+name+" ") {
				t.Errorf("the autoscaler's metric vembed_%s is not in /metrics", name)
			}
		}
	}
	if !strings.Contains(string(lm), "path: /health") || get(t, newTestHandler(&fakeEmbedder{}, Options{APIKeys: []string{"k"}}), "/health").Code != 200 {
		t.Error("the probes' /health is missing or needs a key")
	}
}
