package search

// hammingMinNEON is hammingMinGeneric on NEON (every ARMv8-A core has
// it): one block (8 tokens) a step. q holds whole query codes, blocks
// whole blocks (at least one), out 8 values a query code.
//
//go:noescape
func hammingMinNEON(q, blocks, out []uint64)

func hammingMin(q, blocks, out []uint64) {
	if len(blocks) >= 2*blockTokens {
		_ = out[len(q)/2*blockTokens-1]
		hammingMinNEON(q, blocks, out)
		return
	}
	hammingMinGeneric(q, blocks, out)
}
