package search

import "math/bits"

// The first stage's codes of 128-dimension tokens (ColPali's and
// ColQwen's width) are laid out in blocks of 8 tokens: the 8 tokens'
// first words, then their second words (16 words a block), so that a
// vector unit computes 8 Hamming distances at once. A row's last block is
// padded with copies of its last token, which leave its minima as they
// are.

// blockTokens is the tokens of a block.
const blockTokens = 8

// planar lays the 2-word codes of a row's tokens out in blocks.
func planar(dst, codes []uint64) []uint64 {
	n := len(codes) / 2
	if n == 0 {
		return dst
	}
	for b := 0; b < n; b += blockTokens {
		var lo, hi [blockTokens]uint64
		for k := range blockTokens {
			t := min(b+k, n-1)
			lo[k], hi[k] = codes[2*t], codes[2*t+1]
		}
		dst = append(dst, lo[:]...)
		dst = append(dst, hi[:]...)
	}
	return dst
}

// hammingMinGeneric writes, for each query code (2 words each), the
// smallest Hamming distance to a token of each lane of the blocks: out
// holds 8 values a query code, whose minimum is the code's smallest
// distance to the row.
func hammingMinGeneric(q, blocks, out []uint64) {
	for i := 0; i+1 < len(q); i += 2 {
		acc := out[i/2*blockTokens : i/2*blockTokens+blockTokens]
		for k := range acc {
			acc[k] = ^uint64(0)
		}
		for b := 0; b+2*blockTokens <= len(blocks); b += 2 * blockTokens {
			for k := range blockTokens {
				h := uint64(bits.OnesCount64(blocks[b+k]^q[i]) + bits.OnesCount64(blocks[b+blockTokens+k]^q[i+1]))
				acc[k] = min(acc[k], h)
			}
		}
	}
}

// hammingSum is the sum over query codes of their smallest Hamming
// distance to a row's tokens (its blocks); scratch holds 8 values a query
// code.
func hammingSum(q, blocks, scratch []uint64) int {
	hammingMin(q, blocks, scratch)
	sum := 0
	for i := 0; i < len(scratch); i += blockTokens {
		m := scratch[i]
		for _, v := range scratch[i+1 : i+blockTokens] {
			m = min(m, v)
		}
		sum += int(m)
	}
	return sum
}
