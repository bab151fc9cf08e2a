package tokenizer

import (
	"sync"
	"unicode"
)

// Character classes of the Qwen2 pre-tokenizer pattern
//
//	(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (llama.cpp's form; Hugging Face writes the contractions as a
// case-insensitive group). A code point is a letter (\p{L}), a number
// (\p{N}), white space (\s, the Unicode White_Space set), or "other", which
// includes unassigned code points and surrogates.
const (
	clsOther  uint8 = 0
	clsLetter uint8 = 1 << iota
	clsNumber
	clsSpace
)

var (
	bmpOnce  sync.Once
	bmpClass []uint8 // class of every code point below U+10000
)

func initClasses() {
	bmpOnce.Do(func() {
		t := make([]uint8, 0x10000)
		for r := range rune(0x10000) {
			t[r] = classify(r)
		}
		bmpClass = t
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
	}
	return clsOther
}

func classOf(r rune) uint8 {
	if r < 0x10000 {
		return bmpClass[r]
	}
	return classify(r)
}

// at decodes the code point at s[i:] of a sanitized string and returns it
// with its size and class. It is only called with i < len(s).
func at(s string, i int) (rune, int, uint8) {
	if b := s[i]; b < 0x80 {
		return rune(b), 1, bmpClass[b]
	}
	r, n, ok := decodeLax(s, i)
	if !ok { // cannot happen after sanitize; stay total anyway
		return 0xFFFD, 1, clsOther
	}
	return r, n, classOf(r)
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// nextWord returns the end of the pre-token that starts at s[i:], for a
// sanitized s and i < len(s). The alternatives are tried in the pattern's
// order and each returns the match a backtracking regex engine would find.
func nextWord(s string, i int) int {
	r0, n0, c0 := at(s, i)
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
		return letters(s, j)
	}
	if c0 != clsNumber && !isCRLF(r0) && j < len(s) {
		if _, n1, c1 := at(s, j); c1 == clsLetter {
			return letters(s, j+n1)
		}
	}

	// \p{N}: a single digit, unlike GPT-4's \p{N}{1,3}
	if c0 == clsNumber {
		return j
	}

	// ' '?[^\s\p{L}\p{N}]+[\r\n]*
	k := i
	if r0 == ' ' && j < len(s) {
		if _, _, c1 := at(s, j); c1 == clsOther {
			k = j
		}
	}
	if _, _, ck := at(s, k); ck == clsOther {
		for k < len(s) {
			_, n, c := at(s, k)
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
		r, n, c := at(s, k)
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
func letters(s string, i int) int {
	for i < len(s) {
		_, n, c := at(s, i)
		if c != clsLetter {
			break
		}
		i += n
	}
	return i
}
