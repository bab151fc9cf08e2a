package engine

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/visionsvc"
)

// Key identifies cached content: a SHA-256 digest, so that no input can be
// made to collide with another's entry.
type Key [sha256.Size]byte

// hasher builds a Key from typed fields. Every field is written with its
// length or a fixed width, so two different field lists never hash alike.
type hasher struct{ h hash.Hash }

func newHasher(domain string) *hasher {
	h := &hasher{h: sha256.New()}
	h.str(domain)
	return h
}

func (h *hasher) str(s string) *hasher {
	h.int(len(s))
	h.h.Write([]byte(s))
	return h
}

func (h *hasher) bytes(b []byte) *hasher {
	h.int(len(b))
	h.h.Write(b)
	return h
}

func (h *hasher) int(v int) *hasher {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	h.h.Write(b[:])
	return h
}

func (h *hasher) key(k Key) *hasher {
	h.h.Write(k[:])
	return h
}

func (h *hasher) sum() Key {
	var k Key
	h.h.Sum(k[:0])
	return k
}

// lru is a byte-budgeted cache with least-recently-used eviction. An entry
// that is pinned (in use by a running request) is never evicted; when the
// budget cannot be met without evicting pinned entries, a new entry is not
// stored, so the cache never holds more than its budget.
type lru[V any] struct {
	name string
	cap  int64

	mu      sync.Mutex
	size    int64
	entries map[Key]*list.Element
	order   *list.List // front: most recently used

	hits, misses, evictions atomic.Int64
}

type lruEntry[V any] struct {
	key  Key
	val  V
	size int64
	pins int
}

func newLRU[V any](name string, capacity int64) *lru[V] {
	return &lru[V]{name: name, cap: capacity, entries: map[Key]*list.Element{}, order: list.New()}
}

// get returns the value under k and, when pin is set, pins it until unpin.
func (c *lru[V]) get(k Key, pin bool) (V, bool) {
	var zero V
	if c == nil || c.cap <= 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		c.misses.Add(1)
		return zero, false
	}
	c.hits.Add(1)
	c.order.MoveToFront(el)
	e := el.Value.(*lruEntry[V])
	if pin {
		e.pins++
	}
	return e.val, true
}

// put stores v under k (size bytes), evicting unpinned entries from the
// least recently used end, and pins it when pin is set. It reports whether
// v was stored; a value that cannot fit is dropped.
func (c *lru[V]) put(k Key, v V, size int64, pin bool) bool {
	if c == nil || c.cap <= 0 || size > c.cap {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*lruEntry[V])
		c.order.MoveToFront(el)
		if pin {
			e.pins++
		}
		return true
	}
	for el := c.order.Back(); c.size+size > c.cap && el != nil; {
		prev := el.Prev()
		if e := el.Value.(*lruEntry[V]); e.pins == 0 {
			c.order.Remove(el)
			delete(c.entries, e.key)
			c.size -= e.size
			c.evictions.Add(1)
		}
		el = prev
	}
	if c.size+size > c.cap {
		return false
	}
	e := &lruEntry[V]{key: k, val: v, size: size}
	if pin {
		e.pins = 1
	}
	c.entries[k] = c.order.PushFront(e)
	c.size += size
	return true
}

// unpin releases one pin of k.
func (c *lru[V]) unpin(k Key) {
	if c == nil || c.cap <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		if e := el.Value.(*lruEntry[V]); e.pins > 0 {
			e.pins--
		}
	}
}

func (c *lru[V]) stats() CacheStats {
	s := CacheStats{Name: c.name, Capacity: max(c.cap, 0)}
	if c.cap <= 0 {
		return s
	}
	c.mu.Lock()
	s.Entries, s.Bytes = len(c.entries), c.size
	c.mu.Unlock()
	s.Hits, s.Misses, s.Evictions = c.hits.Load(), c.misses.Load(), c.evictions.Load()
	return s
}

// A store is a cache level below memory that keeps values as bytes,
// encoded: the disk (bbolt, results only) and the server shared by
// replicas (Valkey or Redis, results and encoder outputs). Memory stays in
// front of them holding decoded values, so that its hits cost nothing and
// its entries can be pinned. A store's reads may wait on I/O and run on
// the request's goroutine; its writes never wait (they are queued, and
// dropped when the queue is full) because the scheduler makes them; it
// turns its own failures into misses, so no request fails because of it.
type store interface {
	// holds reports whether the store keeps values of kind.
	holds(kind byte) bool
	// get returns the value of kind under k; false on a miss or error.
	get(ctx context.Context, kind byte, k Key) ([]byte, bool)
	// put queues the value encode returns (called off the caller's
	// goroutine when the store can) for writing under k.
	put(kind byte, k Key, encode func() []byte)
	stats() []CacheStats
	close() error
}

// Kinds of stored values.
const (
	kindResult  = 'e' // an input's result (embedding cache)
	kindEncoded = 'v' // an image's encoder output (encoder cache)
)

// openStores opens the levels below memory that cfg asks for, nearest
// first.
func openStores(cfg Config) ([]store, error) {
	var out []store
	if cfg.CacheDir != "" {
		d, err := openDiskCache(filepath.Join(cfg.CacheDir, "embeddings.db"), cfg.DiskCacheBytes)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		out = append(out, d)
	}
	if cfg.CacheURL != "" {
		s, err := openSharedCache(cfg.CacheURL, cfg.CacheTTL, cfg.CacheMaxValue)
		if err != nil {
			for _, st := range out {
				st.close()
			}
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// fetch reads a value of kind from the stores, nearest first; a hit is
// copied into the nearer stores that missed (a shared hit lands on disk).
func (e *Engine) fetch(ctx context.Context, kind byte, k Key) ([]byte, bool) {
	for i, st := range e.stores {
		if !st.holds(kind) {
			continue
		}
		b, ok := st.get(ctx, kind, k)
		if !ok {
			continue
		}
		for _, near := range e.stores[:i] {
			if near.holds(kind) {
				near.put(kind, k, func() []byte { return b })
			}
		}
		return b, true
	}
	return nil, false
}

// keep queues a value of kind for every store that holds such values.
func (e *Engine) keep(kind byte, k Key, encode func() []byte) {
	for _, st := range e.stores {
		if st.holds(kind) {
			st.put(kind, k, encode)
		}
	}
}

// lookupEmbedding finds an input's result in memory, then in the stores;
// a stored hit is kept in memory.
func (e *Engine) lookupEmbedding(ctx context.Context, k Key) (*result, bool) {
	if r, ok := e.embeddingCache.get(k, false); ok {
		return r, true
	}
	b, ok := e.fetch(ctx, kindResult, k)
	if !ok {
		return nil, false
	}
	r, err := decodeResult(b)
	if err != nil {
		return nil, false
	}
	e.embeddingCache.put(k, r, r.bytes(), false)
	return r, true
}

// storeEmbedding keeps an input's result in memory and the stores.
func (e *Engine) storeEmbedding(k Key, r *result) {
	e.embeddingCache.put(k, r, r.bytes(), false)
	e.keep(kindResult, k, func() []byte { return encodeResult(r) })
}

// lookupEncoded finds an image's encoder output in memory (pinning it),
// then in the stores, whose hit becomes a pinned memory entry.
func (e *Engine) lookupEncoded(ctx context.Context, k Key) (model.EncodedImage, bool) {
	if enc, ok := e.encoderCache.get(k, true); ok {
		return enc, true
	}
	b, ok := e.fetch(ctx, kindEncoded, k)
	if !ok {
		return model.EncodedImage{}, false
	}
	enc, err := visionsvc.DecodeEncoded(b)
	if err != nil {
		return model.EncodedImage{}, false
	}
	e.encoderCache.put(k, enc, enc.Bytes(), true)
	return enc, true
}

// storeEncoded keeps an image's encoder output in memory and the stores.
func (e *Engine) storeEncoded(k Key, enc model.EncodedImage) {
	e.encoderCache.put(k, enc, enc.Bytes(), false)
	e.keep(kindEncoded, k, func() []byte { return visionsvc.AppendEncoded(nil, enc) })
}
