package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Character classes of the Qwen2 pre-tokenizer pattern
//
//	(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (llama.cpp's form; Hugging Face writes the contractions as a
// case-insensitive group). A code point is a letter (\p{L}), a number
// (\p{N}), white space (\s, the Unicode White_Space set), or "other", which
// includes unassigned code points and surrogates.
//
// Qwen3.5's pattern (llama.cpp's qwen35) adds the combining marks \p{M}
// to the letters of a word and removes them from the "other" run:
//
//	...|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|...
//
// which is Qwen2's with every mark read as a letter: a mark before a word
// is the optional lead-in or the word's first letter, the match ending at
// the same place either way. Marks get their own class, read as "other"
// or as a letter by the pattern in use.
const (
	clsOther  uint8 = 0
	clsLetter uint8 = 1 << iota
	clsNumber
	clsSpace
	clsMark
	clsMask = clsLetter | clsNumber | clsSpace | clsMark

	// nfcSafe marks a code point that starts a normalization segment (no
	// combining class, never composes with what precedes it) and is NFC on
	// its own: text made only of such code points is already NFC.
	nfcSafe uint8 = 0x80
)

var (
	bmpOnce  sync.Once
	bmpClass [0x10000]uint8 // class and nfcSafe of every code point below U+10000
)

func initClasses() {
	bmpOnce.Do(func() {
		var buf [4]byte
		for r := range rune(0x10000) {
			c := classify(r)
			if r >= 0xD800 && r < 0xE000 {
				bmpClass[r] = c // surrogates: left to the normalizer
				continue
			}
			s := string(utf8.AppendRune(buf[:0], r))
			if norm.NFC.PropertiesString(s).BoundaryBefore() && norm.NFC.IsNormalString(s) {
				c |= nfcSafe
			}
			bmpClass[r] = c
		}
	})
}

func classify(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		return clsSpace
	case unicode.IsMark(r):
		return clsMark
	}
	return clsOther
}

func classOf(r rune) uint8 {
	if r < 0x10000 {
		return bmpClass[r] & clsMask
	}
	return classify(r)
}

// isNFC reports whether s is in NFC. Normalization works on segments that
// start at code points that never interact with what precedes them, and
// nfcSafe code points are such starts and normal on their own. So only the
// stretches around other code points (from the last safe code point before
// them to the next safe one) go through the normalizer's check, which is
// slow compared to a table lookup.
func isNFC(s string) bool {
	last := 0 // start of the last safe code point
	for i := 0; i < len(s); {
		if s[i] < 0x80 {
			last = i
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if safeNFC(r, n) {
			last = i
			i += n
			continue
		}
		j := i + n
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if safeNFC(r, n) {
				break
			}
			j += n
		}
		if !norm.NFC.IsNormalString(s[last:j]) {
			return false
		}
		i = j
	}
	return true
}

// safeNFC reports whether code point r (n bytes long) is nfcSafe. Above the
// BMP it knows the emoji and CJK blocks, where every code point is: these
// have no canonical decompositions (the CJK compatibility ideographs from
// U+2F800 do, and are excluded) and no combining classes.
func safeNFC(r rune, n int) bool {
	switch {
	case r < 0x10000:
		return bmpClass[r]&nfcSafe != 0 && n > 1 || r < 0x80
	case r >= 0x1F000 && r <= 0x1FAFF, r >= 0x20000 && r < 0x2F800, r >= 0x30000 && r <= 0x3134F:
		return true
	}
	return false
}

// at decodes the code point at s[i:] of a sanitized string and returns it
// with its size and class, a mark read as a letter when marks is set
// (Qwen3.5's pattern) and as "other" otherwise. It is only called with
// i < len(s).
func at(s string, i int, marks bool) (rune, int, uint8) {
	if b := s[i]; b < 0x80 {
		return rune(b), 1, bmpClass[b] & clsMask
	}
	r, n, ok := decodeLax(s, i)
	if !ok { // cannot happen after sanitize; stay total anyway
		return 0xFFFD, 1, clsOther
	}
	c := classOf(r)
	if c == clsMark {
		c = clsOther
		if marks {
			c = clsLetter
		}
	}
	return r, n, c
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// nextWord returns the end of the pre-token that starts at s[i:], for a
// sanitized s and i < len(s), under Qwen2's pattern or, with marks,
// Qwen3.5's. The alternatives are tried in the pattern's order and each
// returns the match a backtracking regex engine would find.
func nextWord(s string, i int, marks bool) int {
	r0, n0, c0 := at(s, i, marks)
	j := i + n0

	// '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]: ASCII letters
	// only; b|0x20 folds exactly the upper- and lower-case ASCII letter.
	if r0 == '\'' && j < len(s) {
		switch s[j] | 0x20 {
		case 's', 't', 'm', 'd':
			return j + 1
		}
		if j+1 < len(s) {
			a, b := s[j]|0x20, s[j+1]|0x20
			if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
				return j + 2
			}
		}
	}

	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsLetter {
		return letters(s, j, marks)
	}
	if c0 != clsNumber && !isCRLF(r0) && j < len(s) {
		if _, n1, c1 := at(s, j, marks); c1 == clsLetter {
			return letters(s, j+n1, marks)
		}
	}

	// \p{N}: a single digit, unlike GPT-4's \p{N}{1,3}
	if c0 == clsNumber {
		return j
	}

	// ' '?[^\s\p{L}\p{N}]+[\r\n]*
	k := i
	if r0 == ' ' && j < len(s) {
		if _, _, c1 := at(s, j, marks); c1 == clsOther {
			k = j
		}
	}
	if _, _, ck := at(s, k, marks); ck == clsOther {
		for k < len(s) {
			_, n, c := at(s, k, marks)
			if c != clsOther {
				break
			}
			k += n
		}
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k
	}

	// What is left is white space: \s*[\r\n]+, \s+(?!\S), \s+.
	lastCRLF := -1 // end of the last \r or \n of the run
	lastStart := i // start of the last white-space code point of the run
	count := 0
	k = i
	for k < len(s) {
		r, n, c := at(s, k, marks)
		if c != clsSpace {
			break
		}
		if isCRLF(r) {
			lastCRLF = k + n
		}
		lastStart = k
		count++
		k += n
	}
	switch {
	case count == 0: // not reached: every class is handled above
		return j
	case lastCRLF >= 0:
		return lastCRLF // \s*[\r\n]+ backtracks to the last line break
	case k < len(s) && count > 1:
		return lastStart // \s+(?!\S) leaves one space for the next word
	}
	return k
}

// letters returns the end of the run of letters starting at s[i:].
func letters(s string, i int, marks bool) int {
	for i < len(s) {
		_, n, c := at(s, i, marks)
		if c != clsLetter {
			break
		}
		i += n
	}
	return i
}
