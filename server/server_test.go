package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/engine"
)

// fakeEmbedder is a test double: each input's vector encodes its position
// and its parts, so tests can see what reached the engine. It is never used
// outside tests.
type fakeEmbedder struct {
	last engine.Request
	err  error
	nan  bool // answer with a NaN, as a broken model would
}

func (f *fakeEmbedder) Info() engine.Info {
	return engine.Info{Name: "fake", Hidden: 4, ContextLength: 100, Tasks: []string{"retrieval.query"},
		Modalities: []string{"text", "image"}, RandomWeights: true}
}

func (f *fakeEmbedder) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	f.last = req
	if f.err != nil {
		return nil, f.err
	}
	resp := &engine.Response{}
	for i, in := range req.Inputs {
		v := []float32{float32(i), float32(len(in.Parts)), -0.5, 1.0 / 3}
		if f.nan {
			v[2] = float32(math.NaN())
		}
		e := engine.Embedding{Tokens: 3}
		if req.Multivector {
			e.Multi = [][]float32{v, {1, 2, 0, 0}} // rows as wide as a real model's
		} else {
			e.Vector = v
		}
		resp.Embeddings = append(resp.Embeddings, e)
		resp.PromptTokens += 3
	}
	return resp, nil
}

func newTestHandler(emb Embedder, opts Options) *Handler {
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return New(emb, opts)
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: response is not JSON: %q", method, path, rec.Body.String())
	}
	return rec.Code, out
}

// pngB64 is base64 of bytes that only need to decode as base64 here; the
// fake engine never decodes images.
var pngB64 = base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))

func TestParseInputsForms(t *testing.T) {
	img := []byte("\x89PNG fake")
	for _, tc := range []struct {
		in   string
		want []engine.Input
	}{
		{`"hello"`, []engine.Input{engine.TextInput("hello")}},
		{`["a","b"]`, []engine.Input{engine.TextInput("a"), engine.TextInput("b")}},
		{`[{"text":"a"},{"image":"` + pngB64 + `"}]`, []engine.Input{engine.TextInput("a"), engine.ImageInput(img)}},
		{`[{"image":"data:image/png;base64,` + pngB64 + `"}]`, []engine.Input{engine.ImageInput(img)}},
		{`[{"content":[{"text":"a"},{"image":"` + pngB64 + `"},"b"]}]`,
			[]engine.Input{{Parts: []engine.Part{engine.Text("a"), engine.Image(img), engine.Text("b")}}}},
		{`[[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pngB64 + `"}}]]`,
			[]engine.Input{{Parts: []engine.Part{engine.Text("a"), engine.Image(img)}}}},
		{`{"image":"` + strings.TrimRight(pngB64, "=") + `"}`, []engine.Input{engine.ImageInput(img)}},
		{`[{"template":"<|im_start|>x","images":["` + pngB64 + `"]}]`, []engine.Input{{Template: "<|im_start|>x", Parts: []engine.Part{engine.Image(img)}}}},
		{`{"template":"just text"}`, []engine.Input{{Template: "just text"}}},
	} {
		got, err := ParseInputs(json.RawMessage(tc.in), DecodeImageString)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestBadRequests(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{MaxBodyBytes: 1 << 10, MaxInputs: 3})
	for _, tc := range []struct {
		name, body string
		status     int
		param      string
		msg        string
	}{
		{"invalid json", `{"input": "a"`, 400, "", "invalid JSON"},
		{"empty body", ``, 400, "", "empty request body"},
		{"trailing data", `{"input":"a"} {}`, 400, "", "data after"},
		{"missing input", `{"model":"m"}`, 400, "input", "input is required"},
		{"empty string", `{"input":""}`, 400, "input", "empty text"},
		{"empty list", `{"input":[]}`, 400, "input", "empty list"},
		{"empty item text", `{"input":[{"text":""}]}`, 400, "input[0]", "empty text"},
		{"empty content", `{"input":[{"content":[]}]}`, 400, "input[0].content", "no parts"},
		{"token ids", `{"input":[1,2,3]}`, 400, "input", "token-id"},
		{"broken base64", `{"input":[{"image":"!!!not base64"}]}`, 400, "input[0]", "broken base64"},
		{"url image", `{"input":[{"image":"https://example.com/a.png"}]}`, 400, "input[0]", "not fetched"},
		{"text data uri", `{"input":[{"image":"data:text/plain;base64,aGk="}]}`, 400, "input[0]", "not an image"},
		{"two fields", `{"input":[{"text":"a","image":"` + pngB64 + `"}]}`, 400, "input[0]", "exactly one"},
		{"nested content", `{"input":[{"content":[{"content":[]}]}]}`, 400, "input[0].content[0]", "nested"},
		{"template with text", `{"input":[{"template":"t","text":"a"}]}`, 400, "input[0]", "only \"images\""},
		{"images without template", `{"input":[{"images":[]}]}`, 400, "input[0]", "needs a \"template\""},
		{"empty template", `{"input":[{"template":""}]}`, 400, "input[0].template", "empty template"},
		{"template bad image", `{"input":[{"template":"t","images":["%%"]}]}`, 400, "input[0].images[0]", "broken base64"},
		{"wrong type dimensions", `{"input":"a","dimensions":"64"}`, 400, "dimensions", "must be an integer"},
		{"fractional dimensions", `{"input":"a","dimensions":1.5}`, 400, "dimensions", "must be an integer"},
		{"negative dimensions", `{"input":"a","dimensions":-1}`, 400, "dimensions", "positive"},
		{"wrong type task", `{"input":"a","task":3}`, 400, "task", "must be a string"},
		{"wrong type text", `{"input":[{"text":3}]}`, 400, "input[0]", "must be a string"},
		{"unknown encoding", `{"input":"a","encoding_format":"int4"}`, 400, "encoding_format", "unknown encoding_format"},
		{"unknown field", `{"input":"a","embedding_types":["int8"]}`, 400, "embedding_types", `unknown field "embedding_types"`},
		{"unknown item field", `{"input":[{"text":"a","lang":"en"}]}`, 400, "input[0]", `unknown field "lang"`},
		{"unknown part field", `{"input":[[{"type":"image_url","image_url":{"url":"x","detail":"high"}}]]}`, 400, "input[0][0]", `unknown field "detail"`},
		{"unknown message field", `{"messages":[{"role":"user","content":"a","name":"n"}]}`, 400, "messages", `unknown field "name"`},
		{"disagreeing encodings", `{"input":"a","encoding_format":"float","embedding_type":"base64"}`, 400, "encoding_format", "disagree"},
		{"chat form with a system message", `{"messages":[{"role":"system","content":"a"}]}`, 400, "messages[0].role", "user messages only"},
		{"chat form and input", `{"input":"a","messages":[{"role":"user","content":"a"}]}`, 400, "messages", "not both"},
		{"audio", `{"input":"a","modality":"audio"}`, 400, "modality", "not supported"},
		{"late chunking", `{"input":"a","late_chunking":true}`, 400, "late_chunking", "not supported"},
		{"bad max_pixels", `{"input":"a","max_pixels":0}`, 400, "max_pixels", "positive"},
		{"invalid utf8", "{\"input\":\"a\xff\"}", 400, "", "UTF-8"},
		{"too many inputs", `{"input":["a","b","c","d"]}`, 400, "input", "too many inputs"},
		{"body too large", `{"input":"` + strings.Repeat("a", 2000) + `"}`, 413, "", "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := do(t, h, "POST", "/v1/embeddings", tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d (%v)", status, tc.status, out)
			}
			checkError(t, out, tc.param, tc.msg)
		})
	}
}

// checkError checks the OpenAI error shape and that the message says what
// is wrong.
func checkError(t *testing.T, out map[string]any, param, msg string) {
	t.Helper()
	e, ok := out["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %v", out)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Errorf("error lacks %q: %v", k, e)
		}
	}
	if m, _ := e["message"].(string); !strings.Contains(m, msg) {
		t.Errorf("message %q does not mention %q", m, msg)
	}
	got, _ := e["param"].(string)
	if got != param {
		t.Errorf("param %q, want %q", got, param)
	}
}

func TestEngineErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		param  string
	}{
		{&engine.InputError{Param: "task", Code: engine.CodeInvalid, Err: errors.New("unknown task")}, 400, "task"},
		{&engine.InputError{Param: "input[1]", Code: engine.CodeImageTooLarge, Err: errors.New("too big")}, 413, "input[1]"},
		{&engine.InputError{Param: "input[0]", Code: engine.CodeTooLong, Err: errors.New("longer than the context")}, 400, "input[0]"},
		{errors.New("boom"), 500, ""},
	} {
		h := newTestHandler(&fakeEmbedder{err: tc.err}, Options{})
		status, out := do(t, h, "POST", "/v1/embeddings", `{"input":"a"}`)
		if status != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, status, tc.status)
		}
		checkError(t, out, tc.param, "")
	}
}

func TestNonFiniteIsServerError(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{nan: true}, Options{})
	status, out := do(t, h, "POST", "/v1/embeddings", `{"input":"a","encoding_format":"base64"}`)
	if status != 500 {
		t.Errorf("status %d", status)
	}
	checkError(t, out, "", "non-finite")
}

func TestRequestOptionsReachEngine(t *testing.T) {
	f := &fakeEmbedder{}
	h := newTestHandler(f, Options{})
	status, _ := do(t, h, "POST", "/v1/embeddings",
		`{"input":["a"],"model":"x","user":"u","task":"code.query","dimensions":2,"normalized":false,"min_pixels":10,"max_pixels":20,"per_span":true}`)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := engine.Request{Inputs: []engine.Input{engine.TextInput("a")}, Task: "code.query", Dimensions: 2,
		Unnormalized: true, MinPixels: 10, MaxPixels: 20, PerSpan: true}
	if !reflect.DeepEqual(f.last, want) {
		t.Errorf("engine got %+v, want %+v", f.last, want)
	}
}

func TestResponseShapeAndBase64RoundTrip(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	_, plain := do(t, h, "POST", "/v1/embeddings", `{"input":["a",{"content":["b",{"image":"`+pngB64+`"}]}]}`)
	_, b64 := do(t, h, "POST", "/v1/embeddings", `{"input":["a",{"content":["b",{"image":"`+pngB64+`"}]}],"encoding_format":"base64"}`)
	if plain["object"] != "list" || plain["model"] != "fake" {
		t.Errorf("response header fields: %v", plain)
	}
	if u := plain["usage"].(map[string]any); u["prompt_tokens"] != 6.0 || u["total_tokens"] != 6.0 {
		t.Errorf("usage %v", u)
	}
	pd, bd := plain["data"].([]any), b64["data"].([]any)
	if len(pd) != 2 || len(bd) != 2 {
		t.Fatalf("data lengths %d %d", len(pd), len(bd))
	}
	for i := range pd {
		p, b := pd[i].(map[string]any), bd[i].(map[string]any)
		if p["index"] != float64(i) || p["object"] != "embedding" {
			t.Errorf("item %d: %v", i, p)
		}
		raw, err := base64.StdEncoding.DecodeString(b["embedding"].(string))
		if err != nil {
			t.Fatal(err)
		}
		floats := p["embedding"].([]any)
		if len(raw) != 4*len(floats) {
			t.Fatalf("item %d: %d base64 bytes for %d floats", i, len(raw), len(floats))
		}
		for k, f := range floats {
			// Both encodings carry the same float32: JSON prints the
			// shortest decimal that round-trips through float32.
			got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
			if got != float32(f.(float64)) {
				t.Errorf("item %d dim %d: base64 %v, float %v", i, k, got, f)
			}
		}
	}
	if parts := pd[1].(map[string]any)["embedding"].([]any)[1]; parts != 2.0 {
		t.Errorf("interleaved item reached the engine with %v parts, want 2", parts)
	}
}

func TestMultivectorResponse(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	status, out := do(t, h, "POST", "/v1/embeddings", `{"input":["a"],"return_multivector":true}`)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	d := out["data"].([]any)[0].(map[string]any)
	if _, ok := d["embedding"]; ok {
		t.Errorf("multi-vector item has a single embedding: %v", d)
	}
	if rows := d["embeddings"].([]any); len(rows) != 2 {
		t.Errorf("got %d rows, want 2", len(rows))
	}
}

func TestBinaryEncodings(t *testing.T) {
	v := []float32{1, -1, 0, 2, 0.5, -3, 1, 1, 7}
	// Bits 1 0 0 1 1 0 1 1 | 1 (then zero padding): 0x9B, 0x80.
	if got := encodeVector(v, encUbinary); !reflect.DeepEqual(got, []int{0x9B, 0x80}) {
		t.Errorf("ubinary %v", got)
	}
	if got := encodeVector(v, encBinary); !reflect.DeepEqual(got, []int{0x9B - 128, 0}) {
		t.Errorf("binary %v", got)
	}
}

func TestModelsAndHealth(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	status, out := do(t, h, "GET", "/v1/models", "")
	if status != 200 {
		t.Fatalf("models status %d", status)
	}
	card := out["data"].([]any)[0].(map[string]any)
	if card["id"] != "fake" || card["random_weights"] != true || !strings.Contains(card["description"].(string), "random weights") {
		t.Errorf("model card %v", card)
	}
	if status, out = do(t, h, "GET", "/health", ""); status != 200 || out["status"] != "ok" {
		t.Errorf("health %d %v", status, out)
	}
	status, out = do(t, h, "GET", "/v1/embeddings", "")
	if status != 405 {
		t.Errorf("GET /v1/embeddings: status %d", status)
	}
	checkError(t, out, "", "not allowed")
	status, out = do(t, h, "GET", "/nope", "")
	if status != 404 {
		t.Errorf("GET /nope: status %d", status)
	}
	checkError(t, out, "", "no route")
}

func TestOverloadGets429(t *testing.T) {
	block := make(chan struct{})
	h := newTestHandler(blockingEmbedder{block}, Options{MaxPending: 1})
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(`{"input":"a"}`)))
		done <- rec.Code
	}()
	// Wait until the first request holds the only slot.
	for len(h.pending) == 0 {
		runtime.Gosched()
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(`{"input":"b"}`)))
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	var out map[string]any
	json.Unmarshal(rec.Body.Bytes(), &out)
	checkError(t, out, "", "requests in flight")
	close(block)
	if code := <-done; code != 200 {
		t.Errorf("first request status %d", code)
	}
}

type blockingEmbedder struct{ block chan struct{} }

func (b blockingEmbedder) Info() engine.Info { return engine.Info{Name: "block"} }

func (b blockingEmbedder) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	<-b.block
	return &engine.Response{Embeddings: []engine.Embedding{{Vector: []float32{1}}}}, nil
}

func FuzzParseInputs(f *testing.F) {
	for _, s := range []string{`"a"`, `["a","b"]`, `[{"text":"a"},{"image":"` + pngB64 + `"}]`,
		`[{"content":[{"text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`,
		`[[1,2]]`, `[[{"text":""}]]`, `[{"template":"a<|vision_start|>","images":["AAAA"]}]`, `{"content":null}`, `[{"image":"data:,"}]`, `[null]`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ins, err := ParseInputs(data, DecodeImageString)
		if err != nil {
			if _, ok := engine.AsInputError(err); !ok {
				t.Fatalf("error is not an InputError: %v", err)
			}
			return
		}
		if len(ins) == 0 {
			t.Fatal("no inputs and no error")
		}
		for _, in := range ins {
			if len(in.Parts) == 0 && in.Template == "" {
				t.Fatal("input without parts or template and no error")
			}
			for _, p := range in.Parts {
				if !p.IsImage() && p.Text == "" || p.IsImage() && len(p.Image) == 0 {
					t.Fatalf("empty part accepted: %+v", p)
				}
			}
		}
	})
}

// wideEmbedder answers with jina-v4-sized vectors, so the benchmarks below
// measure request parsing and response encoding at the real width.
type wideEmbedder struct{}

func (wideEmbedder) Info() engine.Info { return engine.Info{Name: "wide", Hidden: 2048} }

func (wideEmbedder) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	resp := &engine.Response{Embeddings: make([]engine.Embedding, len(req.Inputs))}
	for i := range resp.Embeddings {
		v := make([]float32, 2048)
		for k := range v {
			v[k] = float32(k%97)/97 - 0.5
		}
		resp.Embeddings[i].Vector = v
	}
	return resp, nil
}

func benchmarkHandler(b *testing.B, body string) {
	h := newTestHandler(wideEmbedder{}, Options{})
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(body)))
		if rec.Code != 200 {
			b.Fatal(rec.Body.String())
		}
	}
}

func BenchmarkHandler32Float(b *testing.B) {
	benchmarkHandler(b, `{"input":[`+strings.TrimSuffix(strings.Repeat(`"a text",`, 32), ",")+`]}`)
}

func BenchmarkHandler32Base64(b *testing.B) {
	benchmarkHandler(b, `{"encoding_format":"base64","input":[`+strings.TrimSuffix(strings.Repeat(`"a text",`, 32), ",")+`]}`)
}

func TestRequestLog(t *testing.T) {
	var buf strings.Builder
	h := New(&fakeEmbedder{}, Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	do(t, h, "POST", "/v1/embeddings", `{"input":["a","b"]}`)
	do(t, h, "POST", "/v1/embeddings", `{"input":""}`)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines: %q", len(lines), buf.String())
	}
	var ok, bad map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ok); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &bad); err != nil {
		t.Fatal(err)
	}
	if ok["status"] != 200.0 || ok["inputs"] != 2.0 || ok["tokens"] != 6.0 || ok["path"] != "/v1/embeddings" {
		t.Errorf("success line %v", ok)
	}
	if bad["status"] != 400.0 || !strings.Contains(fmt.Sprint(bad["error"]), "empty text") {
		t.Errorf("refusal line %v", bad)
	}
}

// TestGracefulShutdown cancels Run while a request is in the engine: the
// request must still complete, and Run must return cleanly.
func TestGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	entered := make(chan struct{})
	h := newTestHandler(enteringEmbedder{blockingEmbedder{block}, entered}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, ln, h, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Second) }()

	result := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/embeddings", "application/json", strings.NewReader(`{"input":"a"}`))
		if err != nil {
			result <- -1
			return
		}
		resp.Body.Close()
		result <- resp.StatusCode
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(block)
	if code := <-result; code != 200 {
		t.Errorf("in-flight request got %d", code)
	}
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil {
		t.Errorf("server still answers after shutdown")
	}
}

type enteringEmbedder struct {
	blockingEmbedder
	entered chan struct{}
}

func (e enteringEmbedder) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	close(e.entered)
	return e.blockingEmbedder.Embed(ctx, req)
}
