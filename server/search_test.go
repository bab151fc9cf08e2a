package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/search"
)

// blockingSearcher is an index whose first search waits until release
// is closed, having said so on scoring; later ones answer at once.
type blockingSearcher struct {
	calls   atomic.Int32
	scoring chan struct{}
	release chan struct{}
}

func (b *blockingSearcher) Info() search.Info { return search.Info{Model: "fake", Dims: 4, Items: 1} }

func (b *blockingSearcher) Search(search.Query, search.Options) (*search.Result, error) {
	if b.calls.Add(1) == 1 {
		b.scoring <- struct{}{}
		<-b.release
	}
	return &search.Result{Hits: []search.Hit{{Meta: search.Meta{ID: "a", Path: "a.txt", Page: 1}, Score: 0.5}}}, nil
}

// TestSearchScoringAdmitted: a search holds one of the --max-pending
// slots while it scores, not only while it embeds its query: at
// max-pending 1, an embedding and another search sent meanwhile get 429;
// the search then answers.
func TestSearchScoringAdmitted(t *testing.T) {
	s := &blockingSearcher{scoring: make(chan struct{}, 1), release: make(chan struct{})}
	h := newTestHandler(&fakeEmbedder{}, Options{MaxPending: 1, Search: &SearchOptions{Index: s}})
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/search", strings.NewReader(`{"query":"a"}`)))
		done <- rec.Code
	}()
	<-s.scoring
	for _, c := range []struct{ path, body string }{{"/v1/embeddings", `{"input":"b"}`}, {"/v1/search", `{"query":"c"}`}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", c.path, strings.NewReader(c.body)))
		if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s while a search scores: status %d, Retry-After %q; want 429", c.path, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	close(s.release)
	if code := <-done; code != 200 {
		t.Errorf("the search: status %d", code)
	}
	if n := len(h.pending); n != 0 {
		t.Errorf("%d slots held after the search", n)
	}
}

type nopReranker struct{}

func (nopReranker) Rerank(context.Context, engine.Input, []engine.Input, string) ([]float64, int, error) {
	return nil, 0, nil
}

// TestIndexInfoReranker: GET /v1/index says whether the server reranks.
func TestIndexInfoReranker(t *testing.T) {
	for _, rr := range []search.Reranker{nil, nopReranker{}} {
		s := &blockingSearcher{}
		h := newTestHandler(&fakeEmbedder{}, Options{Search: &SearchOptions{Index: s, Reranker: rr}})
		status, out := do(t, h, "GET", "/v1/index", "")
		if got, ok := out["reranker"].(bool); status != 200 || !ok || got != (rr != nil) || out["model"] != "fake" {
			t.Errorf("reranker %v: status %d, %v", rr != nil, status, out)
		}
	}
}
