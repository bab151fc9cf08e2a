package tokenizer

import (
	"strings"
	"sync"
)

// wordCache maps pre-tokens to their token ids. Text repeats words heavily,
// so most words skip merging. It is split into shards, each behind its own
// lock, so concurrent encoders rarely touch the same lock; a shard that
// reaches its bound is emptied, which bounds memory without the bookkeeping
// of an LRU list (a hot word is back after one miss).
type wordCache struct {
	perShard int
	shards   [cacheShards]cacheShard
}

const (
	cacheShards = 64 // 1<<6, see shard
	// maxCachedWord keeps pathological words (a megabyte without a space)
	// out of the cache; they are rare and would pin memory.
	maxCachedWord = 128
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
	_  [40]byte // keeps neighbouring shards' locks off one cache line
}

func newWordCache(entries int) *wordCache {
	c := &wordCache{perShard: max(1, entries/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
	return c
}

// shard picks a shard from a few bytes of the word: the map hashes the
// whole word anyway, and a second full hash would cost more than an uneven
// spread of words over shards. word is never empty.
func (c *wordCache) shard(word string) *cacheShard {
	h := uint64(len(word)) | uint64(word[0])<<8 | uint64(word[len(word)/2])<<16 | uint64(word[len(word)-1])<<24
	return &c.shards[(h*0x9E3779B97F4A7C15)>>(64-6)]
}

func (c *wordCache) get(word string) ([]int32, bool) {
	sh := c.shard(word)
	sh.mu.RLock()
	ids, ok := sh.m[word]
	sh.mu.RUnlock()
	return ids, ok
}

// put stores ids, which the cache then owns. The word is copied so the
// cache does not pin the text it was cut from.
func (c *wordCache) put(word string, ids []int32) {
	sh := c.shard(word)
	sh.mu.Lock()
	if len(sh.m) >= c.perShard {
		clear(sh.m)
	}
	sh.m[strings.Clone(word)] = ids
	sh.mu.Unlock()
}
