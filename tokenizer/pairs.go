package tokenizer

import "math/bits"

// pairTable maps a pair of symbols to its merge. Lookups dominate merging
// and the table (one entry per merge rule, 151k for Qwen2) is far larger
// than the caches, so it is an open-addressing table with key and value
// side by side: a lookup usually touches one cache line, where Go's map
// touches a control word and a slot.
type pairTable struct {
	slots []pairSlot
	shift uint // 64 - log2(len(slots))
}

type pairSlot struct {
	key uint64 // pairKey; emptyKey when unused
	val merge
}

// emptyKey cannot be a pair: symbol ids are below 2^31.
const emptyKey = ^uint64(0)

func newPairTable(n int) *pairTable {
	size := 1 << max(4, bits.Len(uint(n+n/2))) // load factor at most 2/3
	t := &pairTable{slots: make([]pairSlot, size), shift: uint(64 - bits.Len(uint(size-1)))}
	for i := range t.slots {
		t.slots[i].key = emptyKey
	}
	return t
}

func (t *pairTable) home(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

func (t *pairTable) get(key uint64) (merge, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return s.val, true
		}
		if s.key == emptyKey {
			return 0, false
		}
	}
}

// add stores val for key unless key is present (the first rank of a repeated
// rule wins). The table never fills: it is sized for the rules up front.
func (t *pairTable) add(key uint64, val merge) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return
		}
		if s.key == emptyKey {
			s.key, s.val = key, val
			return
		}
	}
}
