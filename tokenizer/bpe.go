package tokenizer

import "sync"

// Byte-pair merging of one pre-token.
//
// Symbols are ids in an extended space: the vocabulary's token ids, then
// strings that merges produce or consume without being tokens themselves (a
// well-formed vocabulary has none). A word starts as one symbol per byte;
// the applicable merge of lowest rank is applied repeatedly, the leftmost one
// on ties, which is what both reference implementations do. Candidate pairs
// sit in a binary heap and the symbols in a doubly linked list, so a word of
// n bytes costs O(n log n) rather than the O(n²) of rescanning all pairs
// after every merge.
//
// A heap entry is rank<<32 | left position, so plain integer order is the
// merge order. Each live position remembers the rank and result of the pair
// it currently starts; an entry is stale when that rank differs. This is
// exact because a position's pair only ever grows (a merge at it or at its
// right neighbour makes a longer symbol), so its rank never returns to an
// earlier value, and one rank names one rule.

// merge is the value of the pair table: rank in the high half, the merged
// symbol in the low half.
type merge uint64

// noMerge marks the absence of a rule; ranks are below 2^31.
const noMerge = ^merge(0)

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type bpeScratch struct {
	sym, next, prev []int32
	rank, res       []int32 // the pair starting at each position; rank -1: none
	heap            []uint64
}

var scratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

// maxPooledWord keeps the scratch of a huge word from staying in the pool.
const maxPooledWord = 1 << 16

func (s *bpeScratch) push(e uint64) {
	h := append(s.heap, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= e {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
	s.heap = h
}

func (s *bpeScratch) pop() uint64 {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	e := h[last]
	h = h[:last]
	i := 0
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r] < h[c] {
			c = r
		}
		if e <= h[c] {
			break
		}
		h[i] = h[c]
		i = c
	}
	if i < len(h) {
		h[i] = e
	}
	s.heap = h
	return top
}

// setPair records merge m (or noMerge) as the pair starting at position l
// and queues it.
func (s *bpeScratch) setPair(l int32, m merge) {
	if m == noMerge {
		s.rank[l] = -1
		return
	}
	s.rank[l] = int32(m >> 32)
	s.res[l] = int32(uint32(m))
	s.push(uint64(m>>32)<<32 | uint64(l))
}

// lookup returns the merge of the symbols at positions l and r.
func (t *Tokenizer) lookup(s *bpeScratch, l, r int32) merge {
	if m, ok := t.merges.get(pairKey(s.sym[l], s.sym[r])); ok {
		return m
	}
	return noMerge
}

// bpe appends the token ids of one pre-token (raw bytes) to dst.
func (t *Tokenizer) bpe(dst []int32, word string) []int32 {
	n := len(word)
	if n == 1 {
		return t.appendSymbol(dst, t.byteSym[word[0]])
	}
	s := scratchPool.Get().(*bpeScratch)
	if n <= maxPooledWord {
		defer scratchPool.Put(s)
	}
	s.sym = grow(s.sym, n)
	s.next = grow(s.next, n)
	s.prev = grow(s.prev, n)
	s.rank = grow(s.rank, n)
	s.res = grow(s.res, n)
	s.heap = s.heap[:0]
	for i := range n {
		s.sym[i] = t.byteSym[word[i]]
		s.next[i] = int32(i + 1)
		s.prev[i] = int32(i - 1)
	}
	s.rank[n-1] = -1
	for i := range int32(n - 1) {
		s.setPair(i, t.lookup(s, i, i+1))
	}
	for len(s.heap) > 0 {
		e := s.pop()
		l := int32(uint32(e))
		if s.rank[l] != int32(e>>32) {
			continue // stale: the pair at l has changed since
		}
		r := s.next[l]
		s.sym[l] = s.res[l]
		s.rank[r] = -1
		nx := s.next[r]
		s.next[l] = nx
		if nx < int32(n) {
			s.prev[nx] = l
			s.setPair(l, t.lookup(s, l, nx))
		} else {
			s.rank[l] = -1
		}
		if p := s.prev[l]; p >= 0 {
			s.setPair(p, t.lookup(s, p, l))
		}
	}
	for i := int32(0); i < int32(n); i = s.next[i] {
		dst = t.appendSymbol(dst, s.sym[i])
	}
	return dst
}

// appendSymbol appends the token of symbol id. A symbol that is not a token
// falls back, as in the reference, to the single-byte tokens of the bytes of
// its (byte-level encoded) text; bytes without such a token are dropped.
func (t *Tokenizer) appendSymbol(dst []int32, id int32) []int32 {
	if id < int32(len(t.tokens)) {
		return append(dst, id)
	}
	for _, b := range []byte(t.extra[id-int32(len(t.tokens))]) {
		if tok, ok := t.ids[string([]byte{b})]; ok {
			dst = append(dst, tok)
		}
	}
	return dst
}

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
