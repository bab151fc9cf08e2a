package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetriesHonourRetryAfter(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sesame" {
			w.WriteHeader(401)
			w.Write([]byte(`{"error":{"message":"missing or invalid API key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
			return
		}
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
			w.Write([]byte(`{"error":{"message":"busy","type":"rate_limit_error","param":null,"code":"overloaded"}}`))
		case 2:
			w.WriteHeader(503)
			w.Write([]byte(`{"error":{"message":"restarting","type":"server_error","param":null,"code":"shutting_down"}}`))
		default:
			w.Write([]byte(`{"model":"m","data":[{"index":0,"embedding":[0.5,0.5]}],"usage":{"prompt_tokens":3,"total_tokens":3}}`))
		}
	}))
	defer srv.Close()
	c := New(srv.URL, WithAPIKey("sesame"), WithRetries(4, time.Millisecond))
	res, err := c.Embed(context.Background(), EmbedRequest{Inputs: []Input{Text("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || len(res.Data) != 1 || res.Data[0].Vector[0] != 0.5 || res.Usage.PromptTokens != 3 {
		t.Errorf("after %d calls: %+v", calls.Load(), res)
	}

	_, err = New(srv.URL).Embed(context.Background(), EmbedRequest{Inputs: []Input{Text("a")}})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Code != "invalid_api_key" {
		t.Errorf("without the key: %v", err)
	}
}

func TestRetriesStopWithContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := New(srv.URL).Embed(ctx, EmbedRequest{Inputs: []Input{Text("a")}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the context's deadline", err)
	}
	c := New(srv.URL, WithRetries(0, 0))
	if _, err := c.Embed(context.Background(), EmbedRequest{Inputs: []Input{Text("a")}}); err == nil {
		t.Error("no error with retries off")
	}
}

func TestInputForms(t *testing.T) {
	for in, want := range map[*Input]string{
		ptr(Text("a")):                               `{"text":"a"}`,
		ptr(ImageURL("https://x/y.png")):             `{"image":"https://x/y.png"}`,
		ptr(ImageBytes([]byte{1, 2, 3})):             `{"image":"AQID"}`,
		ptr(Parts(Text("a"), ImageBytes([]byte{1}))): `{"content":[{"text":"a"},{"image":"AQ=="}]}`,
	} {
		b, err := in.MarshalJSON()
		if err != nil || string(b) != want {
			t.Errorf("got %s %v, want %s", b, err, want)
		}
	}
}

func ptr(in Input) *Input { return &in }

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"0": 0, "7": 7 * time.Second, "Fri, 02 Jan 2026 03:04:15 GMT": 10 * time.Second, "Fri, 02 Jan 2026 03:00:00 GMT": 0,
	} {
		if d, ok := retryAfter(h, now); !ok || d != want {
			t.Errorf("%q: %v %v, want %v", h, d, ok, want)
		}
	}
	for _, h := range []string{"", "-1", "soon"} {
		if _, ok := retryAfter(h, now); ok {
			t.Errorf("%q read as a delay", h)
		}
	}
}

// TestErrorBodyBounded: a proxy's error page of megabytes becomes an error
// of a few kilobytes at most, read only so far.
func TestErrorBodyBounded(t *testing.T) {
	page := "<html>" + strings.Repeat("<p>bad gateway</p>", 300000) + "</html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		w.Write([]byte(page))
	}))
	defer srv.Close()
	_, err := New(srv.URL, WithRetries(0, 0)).Embed(context.Background(), EmbedRequest{Inputs: []Input{Text("a")}})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || !strings.HasPrefix(apiErr.Message, "<html><p>bad gateway") {
		t.Fatalf("got %v", err)
	}
	if n := len(err.Error()); n > 2200 {
		t.Errorf("an error of %d bytes", n)
	}
}
