package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAuthorization: a request is let in exactly when its Authorization
// header is "Bearer" (any case), then the key, with optional surrounding
// white space; and a request ID taken from a client is always a safe
// token for a log line.
func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer key-1", "bearer  key-1 ", "Bearer key-", "Basic key-1", "Bearer", "", "BEARER key-1\t", "Bearer key-1x"} {
		f.Add(s)
	}
	const key = "key-1"
	k := newKeyring([]string{key, "other key"})
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{header}
		r.Header["X-Request-Id"] = []string{header}
		want := false
		if len(header) > 7 && strings.EqualFold(header[:7], "bearer ") {
			tok := strings.TrimSpace(header[7:])
			want = tok == key || tok == "other key"
		}
		if got := k.allows(r); got != want {
			t.Fatalf("Authorization %q: allowed %v, want %v", header, got, want)
		}
		id := requestID(r)
		if id == "" || len(id) > 128 || strings.ContainsFunc(id, func(c rune) bool { return c <= ' ' || c > '~' }) {
			t.Fatalf("request ID %q from %q", id, header)
		}
	})
}

// TestRequestIDInErrorBody: an error body names the request as its
// X-Request-ID header does.
func TestRequestIDInErrorBody(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{APIKeys: []string{"k"}})
	for _, c := range []struct{ auth, body string }{{"", `{"input":"a"}`}, {"Bearer k", `{"input":`}} {
		r := httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(c.body))
		r.Header.Set("Authorization", c.auth)
		r.Header.Set("X-Request-ID", "req-42")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var out struct {
			Error struct {
				RequestID string `json:"request_id"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code < 400 {
			t.Fatalf("%d %s: %v", rec.Code, rec.Body.Bytes(), err)
		}
		if out.Error.RequestID != "req-42" || rec.Header().Get("X-Request-ID") != "req-42" {
			t.Errorf("status %d: request_id %q, header %q", rec.Code, out.Error.RequestID, rec.Header().Get("X-Request-ID"))
		}
	}
}
