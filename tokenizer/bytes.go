package tokenizer

// Byte-level BPE writes every byte as one printable code point (GPT-2's
// bytes_to_unicode): bytes that are printable Latin-1 stand for themselves,
// the other 68 take U+0100 onwards in byte order. Token texts and merges in
// the vocabulary are spelled in this alphabet.
var (
	byteRune    [256]rune
	unicodeByte [0x100 + 68]int16 // inverse of byteRune, -1 where undefined
)

func init() {
	for i := range unicodeByte {
		unicodeByte[i] = -1
	}
	n := rune(0)
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = 0x100 + n
			n++
		}
		unicodeByte[byteRune[b]] = int16(b)
	}
}
