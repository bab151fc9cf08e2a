package search

import "golang.org/x/sys/cpu"

// hasVPOPCNT reports AVX-512 with its 64-bit population count
// (Ice Lake, Zen 4 and later), checked at run time.
var hasVPOPCNT = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPOPCNTDQ

// hammingMinAVX512 is hammingMinGeneric with AVX-512: one block (8
// tokens) a step. q holds whole query codes, blocks whole blocks, out 8
// values a query code.
//
//go:noescape
func hammingMinAVX512(q, blocks, out []uint64)

func hammingMin(q, blocks, out []uint64) {
	if hasVPOPCNT && len(blocks) >= 2*blockTokens {
		hammingMinAVX512(q, blocks, out)
		return
	}
	hammingMinGeneric(q, blocks, out)
}
