package tokenizer

import "unicode/utf8"

// The reference tokenizer (llama.cpp) does not reject malformed UTF-8: it
// decodes every lead byte by its bit pattern alone, without the overlong,
// surrogate or range checks of a strict decoder, and replaces each byte it
// cannot decode by U+FFFD before it pre-tokenizes. Words are then re-encoded
// from the decoded code points. So "\xC0\xAF" (an overlong "/") becomes "/",
// a UTF-16 surrogate "\xED\xA0\x80" passes through as its three bytes, and a
// truncated sequence becomes one U+FFFD per byte. sanitize reproduces that
// on the bytes, so everything downstream works on one consistent string.

// decodeLax decodes the code point at s[i:] the way the reference does. ok is
// false when the reference would replace s[i] by U+FFFD and move on by one
// byte. Code points above U+10FFFF (lead bytes F4..F7 with large payloads)
// make the reference fail outright; they are treated as undecodable here so
// that any input has a result.
func decodeLax(s string, i int) (r rune, n int, ok bool) {
	b0 := s[i]
	switch {
	case b0 < 0x80:
		return rune(b0), 1, true
	case b0&0x40 == 0: // a continuation byte cannot start a sequence
		return 0, 1, false
	case b0&0x20 == 0:
		if i+1 >= len(s) || !cont(s[i+1]) {
			return 0, 1, false
		}
		return rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F), 2, true
	case b0&0x10 == 0:
		if i+2 >= len(s) || !cont(s[i+1]) || !cont(s[i+2]) {
			return 0, 1, false
		}
		return rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3, true
	case b0&0x08 == 0:
		if i+3 >= len(s) || !cont(s[i+1]) || !cont(s[i+2]) || !cont(s[i+3]) {
			return 0, 1, false
		}
		r = rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
		if r > utf8.MaxRune {
			return 0, 1, false
		}
		return r, 4, true
	}
	return 0, 1, false
}

func cont(b byte) bool { return b&0xC0 == 0x80 }

// appendLax encodes r in the shortest UTF-8 form, surrogates included (the
// reference writes them as three bytes; utf8.AppendRune would not).
func appendLax(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// sanitize returns s with every sequence re-encoded as the reference decodes
// it (see above). Valid UTF-8 is returned unchanged without copying.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/2)
	for i := 0; i < len(s); {
		r, n, ok := decodeLax(s, i)
		if !ok {
			r = utf8.RuneError
		}
		b = appendLax(b, r)
		i += n
	}
	return string(b)
}
