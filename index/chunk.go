package index

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunk splits text into passages of at most limit tokens as count
// measures them (the model's tokenizer on the bare text, without the
// model's prompt around it). The rule: paragraphs (separated by a blank
// line) are packed greedily, in order, into a chunk while the packed
// text stays within the limit; a paragraph over the limit is split into
// sentences (ending in . ! ? or their CJK forms, followed by a space or
// the end), packed the same way; a sentence over the limit is cut at the
// longest prefix within the limit, preferring a space, else at a rune
// boundary. No chunk is ever over the limit, no text is lost except the
// whitespace between pieces, and empty chunks are dropped. limit must be
// positive.
func Chunk(text string, limit int, count func(string) int) []string {
	// The splitting below walks runes by their encoded length.
	text = strings.ToValidUTF8(text, "\uFFFD")
	var out []string
	var cur string
	flush := func() {
		if s := strings.TrimSpace(cur); s != "" {
			out = append(out, s)
		}
		cur = ""
	}
	// pack adds piece to the chunk being built, or starts a new one; sep
	// joins pieces of the same level.
	var pack func(piece, sep string, level int)
	pack = func(piece, sep string, level int) {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			return
		}
		if cur != "" {
			if joined := cur + sep + piece; count(joined) <= limit {
				cur = joined
				return
			}
		}
		if count(piece) <= limit {
			flush()
			cur = piece
			return
		}
		flush()
		switch level {
		case 2:
			// A single rune over the limit (longestPrefix's pieces are
			// otherwise within it): a chunk of its own.
			out = append(out, piece)
		case 0:
			for _, s := range sentences(piece) {
				pack(s, " ", 1)
			}
		case 1:
			for rest := piece; rest != ""; {
				n := longestPrefix(rest, limit, count)
				pack(rest[:n], " ", 2)
				flush()
				rest = strings.TrimSpace(rest[n:])
			}
		}
	}
	for _, p := range paragraphs(text) {
		pack(p, "\n\n", 0)
	}
	flush()
	return out
}

// paragraphs splits at blank lines.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// sentences splits after a sentence end followed by white space (or,
// for the CJK full stops, directly).
func sentences(p string) []string {
	var out []string
	start := 0
	for i, r := range p {
		end := i + utf8.RuneLen(r)
		switch r {
		case '.', '!', '?':
			if end < len(p) {
				next, _ := utf8.DecodeRuneInString(p[end:])
				if unicode.IsSpace(next) {
					out = append(out, p[start:end])
					start = end
				}
			}
		case '。', '！', '？':
			out = append(out, p[start:end])
			start = end
		}
	}
	if start < len(p) {
		out = append(out, p[start:])
	}
	return out
}

// longestPrefix returns the byte length of the longest prefix of s that
// counts at most limit tokens, cut after a space when one lies in the
// second half of it, else at a rune boundary; at least one rune, so the
// caller always moves on (a single rune over the limit is a chunk of its
// own, the only case a chunk could exceed the limit; no tokenizer gives
// one rune more than a few tokens).
func longestPrefix(s string, limit int, count func(string) int) int {
	// ends[k] is the byte length of the first k+1 runes.
	ends := make([]int, 0, len(s))
	for i, r := range s {
		ends = append(ends, i+utf8.RuneLen(r))
	}
	// The largest k with count(s[:ends[k]]) <= limit, by bisection.
	lo, hi := -1, len(ends)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if count(s[:ends[mid]]) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo < 0 {
		return ends[0]
	}
	n := ends[lo]
	if n < len(s) {
		if sp := strings.LastIndexFunc(s[:n], unicode.IsSpace); sp > n/2 && count(s[:sp]) <= limit {
			return sp
		}
	}
	return n
}
