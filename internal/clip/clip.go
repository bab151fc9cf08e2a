// Package clip shortens strings quoted into messages: an error names the
// value it is about, it never carries a payload (a request's field, a
// record's id, a batch of vectors printed by a driver).
package clip

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// String returns s cut to at most n bytes at a character boundary, saying
// how many bytes were left out.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := max(n, 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%s... (%d bytes more)", s[:end], len(s)-end)
}

// Quote is strconv.Quote of s cut to n bytes by String (the note of what
// was cut inside the quotes).
func Quote(s string, n int) string { return strconv.Quote(String(s, n)) }
