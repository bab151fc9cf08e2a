package visionsvc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vembed/vembed/model"
)

// fakeEncoder answers every item with one row holding its key's first
// byte, or with a fixed status.
type fakeEncoder struct {
	status atomic.Int32 // 0: answer
	calls  atomic.Int32
	mu     sync.Mutex
	kinds  []byte
}

func (f *fakeEncoder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if s := f.status.Load(); s != 0 {
		http.Error(w, `{"error":{"message":"no"}}`, int(s))
		return
	}
	if r.URL.Path == "/health" {
		return
	}
	req, err := ReadRequest(r.Body, r.Header.Get("Content-Encoding"), 1<<20)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.kinds = append(f.kinds, req.Kind)
	f.mu.Unlock()
	res := make([]Result, len(req.Items))
	for i, it := range req.Items {
		if req.Kind == KindPatches || it.Key[0]%2 == 0 {
			res[i] = Result{Found: true, Image: model.EncodedImage{Rows: []float32{float32(it.Key[0])}}}
		}
	}
	w.Write(AppendResponse(nil, res))
}

func newTestClient(t *testing.T, urls ...string) *Client {
	t.Helper()
	c, err := NewClient(ClientOptions{URLs: urls, Timeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func items(keys ...byte) []Item {
	var out []Item
	for _, k := range keys {
		out = append(out, Item{Key: Key{k}, GridT: 1, GridH: 2, GridW: 2, Patches: []float32{float32(k), 1, 2}})
	}
	return out
}

// TestClientFailover: a replica that fails is skipped (the call goes to
// the other) and left alone during its backoff; one serving another
// vision tower is left alone; a refused frame is not retried; with every
// replica down calls fail at once.
func TestClientFailover(t *testing.T) {
	good, bad := &fakeEncoder{}, &fakeEncoder{}
	bad.status.Store(http.StatusInternalServerError)
	gs, bs := httptest.NewServer(good), httptest.NewServer(bad)
	defer gs.Close()
	defer bs.Close()
	c := newTestClient(t, bs.URL, gs.URL)
	ctx := context.Background()
	for range 4 {
		res, err := c.Encode(ctx, Key{}, items(3, 4))
		if err != nil || !res[0].Found || res[1].Image.Rows[0] != 4 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	if n := bad.calls.Load(); n != 1 {
		t.Errorf("the failing replica got %d calls during its backoff, want 1", n)
	}
	res, err := c.Lookup(ctx, Key{}, items(2, 3))
	if err != nil || !res[0].Found || res[1].Found {
		t.Errorf("lookup: %+v %v", res, err)
	}
	if good.kinds[len(good.kinds)-1] != KindKeys {
		t.Error("a lookup sent patches")
	}

	good.status.Store(http.StatusBadRequest)
	if _, err := c.Encode(ctx, Key{}, items(1)); err == nil {
		t.Error("a refused frame succeeded")
	}
	good.status.Store(http.StatusConflict)
	c.Encode(ctx, Key{}, items(1))
	good.status.Store(0)
	before := good.calls.Load()
	if _, err := c.Encode(ctx, Key{}, items(1)); err == nil || good.calls.Load() != before {
		t.Errorf("a replica serving another vision tower was called during its pause (%v)", err)
	}

	// A replica that is gone: refused, then not called during its
	// backoff, so the caller learns it at once.
	gone := httptest.NewServer(good)
	gone.Close()
	c = newTestClient(t, gone.URL)
	if _, err := c.Encode(ctx, Key{}, items(1)); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("first call to a closed port: %v", err)
	}
	start := time.Now()
	if _, err := c.Encode(ctx, Key{}, items(1)); !errors.Is(err, ErrUnavailable) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("every replica down: %v after %v", err, time.Since(start))
	}
}

// TestClientSplitsFrames: more patches than one frame holds go out as
// several calls, and every result comes back in order.
func TestClientSplitsFrames(t *testing.T) {
	f := &fakeEncoder{}
	s := httptest.NewServer(f)
	defer s.Close()
	c, err := NewClient(ClientOptions{URLs: []string{s.URL}, MaxFrameBytes: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Encode(context.Background(), Key{}, items(1, 2, 3, 4, 5))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Found || r.Image.Rows[0] != float32(i+1) {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("%d calls for 5 items of 12 bytes in 24-byte frames, want 3", n)
	}
}

// TestClientProbe: a replica far into its backoff is used again soon
// after its /health answers 200 again, one that stays sick stays out, and
// one serving another vision tower is not brought back by its health.
func TestClientProbe(t *testing.T) {
	sick, other := &fakeEncoder{}, &fakeEncoder{}
	sick.status.Store(http.StatusServiceUnavailable)
	ss, so := httptest.NewServer(sick), httptest.NewServer(other)
	defer ss.Close()
	defer so.Close()
	c, err := NewClient(ClientOptions{URLs: []string{ss.URL, so.URL}, Timeout: time.Second, ProbeInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 6 { // 1, 2, 4, 8, 16, 30 s
		c.failed(c.eps[0], errors.New("down"), 0)
	}
	c.failed(c.eps[1], errors.New("other tower"), 5*time.Minute)
	time.Sleep(200 * time.Millisecond)
	if c.eps[0].available(time.Now()) {
		t.Fatal("a replica whose /health fails was brought back")
	}
	sick.status.Store(0)
	deadline := time.Now().Add(5 * time.Second)
	for !c.eps[0].available(time.Now()) {
		if time.Now().After(deadline) {
			t.Fatal("a replica healthy again stayed out for its 30 s backoff")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.eps[1].available(time.Now()) {
		t.Error("a replica serving another vision tower was brought back by its /health")
	}
	res, err := c.Encode(context.Background(), Key{}, items(3))
	if err != nil || !res[0].Found {
		t.Errorf("after the probe: %v %v", res, err)
	}
	c.Close()
	c.Close() // twice is fine
}
