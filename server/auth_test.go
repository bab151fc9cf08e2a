package server

import (
	"encoding/json"
	"net/http"
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

// TestSearchPageWithoutKey: with keys, the search page at / loads without
// one (it holds no data and asks for the key itself), and only it: the
// search routes, other paths and other methods on / still need the key.
func TestSearchPageWithoutKey(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<!doctype html>")) })
	h := newTestHandler(&fakeEmbedder{}, Options{APIKeys: []string{"k"}, Search: &SearchOptions{Page: page}})
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", http.StatusOK},
		{"HEAD", "/", http.StatusOK},
		{"POST", "/", http.StatusUnauthorized},
		{"GET", "/v1/index", http.StatusUnauthorized},
		{"POST", "/v1/search", http.StatusUnauthorized},
		{"GET", "/v1/pages/x", http.StatusUnauthorized},
		{"GET", "/index.html", http.StatusUnauthorized},
		// Other spellings of the search routes, and of / with a path behind it.
		{"HEAD", "/v1/pages/x", http.StatusUnauthorized},
		{"GET", "/v1/pages/..%2f..%2fv1%2findex", http.StatusUnauthorized},
		{"GET", "//v1/index", http.StatusUnauthorized},
		{"GET", "/./v1/index", http.StatusUnauthorized},
		{"GET", "/v1/../v1/index", http.StatusUnauthorized},
		{"GET", "/%2e/v1/index", http.StatusUnauthorized},
		{"GET", "/%2Fv1%2Findex", http.StatusUnauthorized},
		{"OPTIONS", "/", http.StatusUnauthorized},
		{"GET", "/?q=x&filter=*.pdf", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.want {
			t.Errorf("%s %s without a key: %d, want %d", c.method, c.path, rec.Code, c.want)
		}
	}
	// Without a page, / is the API's 404 behind the key like any path.
	h = newTestHandler(&fakeEmbedder{}, Options{APIKeys: []string{"k"}, Search: &SearchOptions{}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("GET / without a page or a key: %d", rec.Code)
	}
}
