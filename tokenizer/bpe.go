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

// merge is the value of the pair table: rank in the high half, the merged
// symbol in the low half.
type merge uint64

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// cand is a merge candidate between the symbols at positions left and
// right, valid while both still hold sl and sr and are adjacent.
type cand struct {
	rank        int32
	left, right int32
	sl, sr, res int32
}

func (a cand) less(b cand) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

type bpeScratch struct {
	sym, next, prev []int32
	heap            []cand
}

var scratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

func (s *bpeScratch) push(c cand) {
	h := append(s.heap, c)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	s.heap = h
}

func (s *bpeScratch) pop() cand {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
	return top
}

// candidate pushes the merge of the symbols at positions l and r, if any.
func (t *Tokenizer) candidate(s *bpeScratch, l, r int32) {
	m, ok := t.merges.get(pairKey(s.sym[l], s.sym[r]))
	if !ok {
		return
	}
	s.push(cand{rank: int32(m >> 32), left: l, right: r, sl: s.sym[l], sr: s.sym[r], res: int32(uint32(m))})
}

// bpe appends the token ids of one pre-token (raw bytes) to dst.
func (t *Tokenizer) bpe(dst []int32, word string) []int32 {
	n := len(word)
	if n == 1 {
		return t.appendSymbol(dst, t.byteSym[word[0]])
	}
	s := scratchPool.Get().(*bpeScratch)
	defer scratchPool.Put(s)
	s.sym = grow(s.sym, n)
	s.next = grow(s.next, n)
	s.prev = grow(s.prev, n)
	s.heap = s.heap[:0]
	for i := range n {
		s.sym[i] = t.byteSym[word[i]]
		s.next[i] = int32(i + 1)
		s.prev[i] = int32(i - 1)
	}
	for i := range int32(n - 1) {
		t.candidate(s, i, i+1)
	}
	for len(s.heap) > 0 {
		c := s.pop()
		if s.sym[c.left] != c.sl || s.next[c.left] != c.right || s.sym[c.right] != c.sr {
			continue // stale: one side has been merged since
		}
		s.sym[c.left] = c.res
		s.sym[c.right] = -1
		nx := s.next[c.right]
		s.next[c.left] = nx
		if nx < int32(n) {
			s.prev[nx] = c.left
		}
		if p := s.prev[c.left]; p >= 0 {
			t.candidate(s, p, c.left)
		}
		if nx < int32(n) {
			t.candidate(s, c.left, nx)
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
