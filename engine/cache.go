package engine

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"sync/atomic"
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
