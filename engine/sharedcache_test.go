package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vembed/vembed/internal/redistest"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/visionsvc"
)

// waitWritten waits until e's shared cache has stored n values (writes
// are asynchronous).
func waitWritten(t *testing.T, e *Engine, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); sharedOf(e).written.Load() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("the shared cache stored %d values, want %d", sharedOf(e).written.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sharedOf(e *Engine) *sharedCache {
	for _, st := range e.stores {
		if s, ok := st.(*sharedCache); ok {
			return s
		}
	}
	return nil
}

func sharedStats(e *Engine) CacheStats {
	for _, c := range e.Stats().Caches {
		if c.Name == "shared" {
			return c
		}
	}
	return CacheStats{}
}

// TestSharedCacheAcrossReplicas: two engines on the same model share a
// Redis server: an image and a text one of them computed are hits on the
// other, with the same bits and no vision work; an image seen with another
// task hits the shared encoder cache; when the server dies every request
// is still answered.
func TestSharedCacheAcrossReplicas(t *testing.T) {
	url, kill := redistest.Start(t)
	a := newEngine(t, func(c *Config) { c.CacheURL = url })
	b := newEngine(t, func(c *Config) { c.CacheURL = url })
	img := testPNG(t, 90, 60, 7)
	req := Request{Inputs: []Input{ImageInput(img), TextInput("shared across replicas")}}
	want := embed(t, a, req)
	waitWritten(t, a, 3) // two results and the image's encoder output
	got := embed(t, b, req)
	if s := sharedStats(b); s.Hits != 2 {
		t.Errorf("the second replica's shared cache: %+v, want 2 hits", s)
	}
	for i := range want.Embeddings {
		if !slices.Equal(got.Embeddings[i].Vector, want.Embeddings[i].Vector) {
			t.Errorf("input %d differs across replicas", i)
		}
	}
	if n := b.Stats().Images; n != 0 {
		t.Errorf("the second replica encoded %d images", n)
	}
	// Another task: the embedding differs, the encoder output is shared.
	c := newEngine(t, func(c *Config) { c.CacheURL = url })
	embed(t, c, Request{Inputs: []Input{ImageInput(img)}, Task: "text-matching"})
	if n := c.Stats().Images; n != 0 {
		t.Errorf("an image seen with another task was encoded again (%d)", n)
	}

	kill()
	start := time.Now()
	for i := range 3 {
		embed(t, b, Request{Inputs: []Input{ImageInput(testPNG(t, 56, 56, 20+i)), TextInput(fmt.Sprint("after the cache died ", i))}})
	}
	if s := sharedStats(b); s.Errors == 0 {
		t.Errorf("no errors counted with the cache server dead: %+v", s)
	}
	t.Logf("three requests with the cache dead in %v", time.Since(start))
}

func FuzzSharedEntry(f *testing.F) {
	c := &sharedCache{}
	var err error
	if c.enc, c.dec, err = zstdPair(); err != nil {
		f.Fatal(err)
	}
	f.Add(c.pack(kindEncoded, visionsvc.AppendEncoded(nil, model.EncodedImage{Rows: []float32{1, 2}, Deep: [][]float32{{3}}})))
	f.Add(c.pack(kindResult, encodeResult(&result{Vector: []float32{1}})))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := c.unpack(kindEncoded, b); err == nil {
			visionsvc.DecodeEncoded(v)
		}
		if v, err := c.unpack(kindResult, b); err == nil {
			decodeResult(v)
		}
	})
}

// TestSharedCacheFlushedAtClose: the writes still queued when an engine
// closes reach the server, so the last results of a batch job (vembed
// index) are hits for the next worker instead of being computed again.
func TestSharedCacheFlushedAtClose(t *testing.T) {
	url, _ := redistest.Start(t)
	lm, mmproj, mv := modelFiles(t)
	a, err := New(Config{Model: lm, MMProj: mmproj, MVProj: mv, CacheURL: url})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []Input
	for i := range 200 {
		inputs = append(inputs, TextInput(fmt.Sprint("queued when the engine closes ", i)))
	}
	want := embed(t, a, Request{Inputs: inputs})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := newEngine(t, func(c *Config) { c.CacheURL = url })
	got := embed(t, b, Request{Inputs: inputs})
	if s := sharedStats(b); s.Hits != int64(len(inputs)) {
		t.Errorf("the next engine's shared cache: %+v, want %d hits", s, len(inputs))
	}
	for i := range want.Embeddings {
		if !slices.Equal(got.Embeddings[i].Vector, want.Embeddings[i].Vector) {
			t.Fatalf("input %d differs through the shared cache", i)
		}
	}
}
