package tokenizer

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// words splits s with the hand-written pre-tokenizer (Qwen2's pattern).
func words(s string) []string { return splitWords(s, false) }

// splitWords splits s with Qwen2's pattern, or Qwen3.5's with marks.
func splitWords(s string, marks bool) []string {
	initClasses()
	s = sanitize(s)
	var out []string
	for i := 0; i < len(s); {
		j := nextWord(s, i, marks)
		if j <= i {
			panic("nextWord made no progress")
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"it's they're WE'VE i'M you'LL he'D don'T", []string{"it", "'s", " they", "'re", " WE", "'VE", " i", "'M", " you", "'LL", " he", "'D", " don", "'T"}},
		{"o'clock 'n'", []string{"o", "'clock", " '", "n", "'"}},
		{"'x 're", []string{"'x", " '", "re"}},
		{"1234", []string{"1", "2", "3", "4"}},
		{"v2.0", []string{"v", "2", ".", "0"}},
		{"①½²٣", []string{"①", "½", "²", "٣"}}, // \p{N} covers No and other scripts' digits
		{"a  b", []string{"a", " ", " b"}},
		{"a   ", []string{"a", "   "}}, // \s+(?!\S) takes all at the end
		{"a \n b", []string{"a", " \n", " b"}},
		{"x\r\n\r\ny", []string{"x", "\r\n\r\n", "y"}},
		{" \n \n  \n", []string{" \n \n  \n"}},
		{"\n  a", []string{"\n", " ", " a"}},
		{"foo!!\n\nbar", []string{"foo", "!!\n\n", "bar"}},
		{" !!", []string{" !!"}},
		{"  !!", []string{" ", " !!"}},
		{"\t(", []string{"\t", "("}},
		{"\t\ttab", []string{"\t", "\ttab"}},
		{"$x", []string{"$x"}},
		{"\nx", []string{"\n", "x"}},
		{"1a", []string{"1", "a"}},
		{"中\u3000文", []string{"中", "\u3000文"}},
		{"a\u00a0b", []string{"a", "\u00a0b"}},
		{"e\u0301té", []string{"e", "\u0301té"}}, // a combining mark is not a letter
		{"a\u0378b", []string{"a", "\u0378b"}},   // unassigned counts as "other"
		{"🚀🚀 x", []string{"🚀🚀", " x"}},
		{"\xff\xfeA", []string{"\ufffd\ufffd", "A"}},
		{"\xc0\xaf", []string{"/"}},
		{"\xed\xa0\x80", []string{"\xed\xa0\x80"}},
		{"a\xe2\x82", []string{"a", "\ufffd\ufffd"}},
		{"\xf4\x90\x80\x80", []string{"\ufffd\ufffd\ufffd\ufffd"}}, // beyond U+10FFFF
		{"", nil},
	} {
		if got := words(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("split %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The pattern with Go's regexp, as a test oracle: RE2 has no (?!\S), so the
// last alternative is \s+ and its match is shortened afterwards by the rule
// of \s+(?!\S). \s is spelled out as Unicode White_Space (Go's \s is ASCII).
const white = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

var oracle = regexp.MustCompile(`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])` +
	`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^` + white + `\p{L}\p{N}]+[\r\n]*` +
	`|[` + white + `]*[\r\n]+|([` + white + `]+)`)

// oracle35 is Qwen3.5's pattern (llama.cpp's qwen35) likewise.
var oracle35 = regexp.MustCompile(`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])` +
	`|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^` + white + `\p{L}\p{M}\p{N}]+[\r\n]*` +
	`|[` + white + `]*[\r\n]+|([` + white + `]+)`)

func oracleWords(s string) []string { return oracleSplit(oracle, s) }

func oracleSplit(re *regexp.Regexp, s string) []string {
	var out []string
	for len(s) > 0 {
		m := re.FindStringSubmatchIndex(s)
		if m == nil || m[0] != 0 {
			panic("oracle: no match at the start of " + s)
		}
		end := m[1]
		if m[2] >= 0 && end < len(s) && utf8.RuneCountInString(s[:end]) > 1 {
			_, n := utf8.DecodeLastRuneInString(s[:end])
			end -= n
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func TestSplitMatchesRegexp(t *testing.T) {
	corpus := benchCorpus(1 << 14)
	if got, want := words(corpus), oracleWords(corpus); !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("word %d: got %q, regexp %q", i, got[i], want[i])
			}
		}
		t.Fatalf("%d words, regexp %d", len(got), len(want))
	}
}

// TestSplitQwen35 checks Qwen3.5's pattern, where combining marks join
// words, against the regexp on the corpus and on texts of marks.
func TestSplitQwen35(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"e\u0301té", []string{"e\u0301té"}},
		{"हिन्दी भाषा", []string{"हिन्दी", " भाषा"}}, // virama and vowel signs are marks
		{"\u0301a", []string{"\u0301a"}},
		{"$\u0301", []string{"$\u0301"}},
		{"x \u0301\u0302!", []string{"x", " \u0301\u0302", "!"}},
		{"1\u0301", []string{"1", "\u0301"}},
	} {
		if got := splitWords(tc.in, true); !slices.Equal(got, tc.want) {
			t.Errorf("qwen35 split %q = %q, want %q", tc.in, got, tc.want)
		}
		if got, want := splitWords(tc.in, true), oracleSplit(oracle35, tc.in); !slices.Equal(got, want) {
			t.Errorf("qwen35 split %q = %q, regexp %q", tc.in, got, want)
		}
	}
	corpus := benchCorpus(1<<14) + " ค่ะ ครับ नमस्ते e\u0301 \u0301\u0301 a\u20dd"
	if got, want := splitWords(corpus, true), oracleSplit(oracle35, corpus); !slices.Equal(got, want) {
		t.Fatalf("qwen35 split of the corpus differs from the regexp's (%d words, %d)", len(got), len(want))
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"Hello world", "it's  \n\n x", "1,000 ½ ①", " !!\r\n", "中\u3000文 🚀", "e\u0301té", "\t\v\f\u2028 a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := words(s)
		if strings.Join(got, "") != sanitize(s) {
			t.Fatalf("words of %q do not concatenate to the input", s)
		}
		if !utf8.ValidString(s) {
			return
		}
		if want := oracleWords(s); !slices.Equal(got, want) {
			t.Fatalf("split %q = %q, regexp %q", s, got, want)
		}
		if got, want := splitWords(s, true), oracleSplit(oracle35, s); !slices.Equal(got, want) {
			t.Fatalf("qwen35 split %q = %q, regexp %q", s, got, want)
		}
	})
}
