package kernels

import "github.com/vembed/vembed/gguf"

//go:noescape
func decodeQ4KU8NEON(qs *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeQ6KU8NEON(blk *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeQ5KU8NEON(blk *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeQ3KU8NEON(blk *byte, nsb int, q *int8, sum *int32)

//go:noescape
func decodeNib4U8NEON(qs *byte, nb int, stride int, bias int, q *int8, sum *int32)

//go:noescape
func decodeNib5U8NEON(qs *byte, qh *byte, nb int, stride int, bias int, q *int8, sum *int32)

// u8RowsNEON are the integer tiers' decoders of the u8 path's types with
// the per-value work on NEON, equal to the u8Decoders rows (tested).
var u8RowsNEON = func() map[gguf.Type]u8Row {
	m := u8RowsWith(u8ValueKernels{
		q4k: decodeQ4KU8NEON, q5k: decodeQ5KU8NEON, q6k: decodeQ6KU8NEON, q3k: decodeQ3KU8NEON,
		nib4: decodeNib4U8NEON, nib5: decodeNib5U8NEON,
	})
	m[gguf.TypeQ2_K] = q2kRowNEON
	return m
}()
