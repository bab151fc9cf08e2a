package tokenizer

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/vembed/vembed/internal/fixtures"
	"golang.org/x/text/unicode/norm"
)

var fuzzTok struct {
	once sync.Once
	tok  *Tokenizer
}

// roundTripTokenizer is the small Qwen-style vocabulary of the model
// fixtures when present (it builds fast enough for every fuzz worker; the
// real vocabulary's round trip is checked on the fixture strings), else a
// hand-made one; NFC is off so that text is not changed.
func roundTripTokenizer(t testing.TB) *Tokenizer {
	fuzzTok.once.Do(func() {
		if root, ok := fixtures.Root(); ok {
			if v, err := readVocab(filepath.Join(root, "model", "qwen25vl-tiny-sv-lm-F32.gguf")); err == nil {
				fuzzTok.tok, _ = New(v, Options{DisableNFC: true})
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		if fuzzTok.tok == nil {
			fuzzTok.tok = mustNew(t, handVocab([]string{"a|b", "ab|c", " |t", "h|e"}), Options{DisableNFC: true})
		}
	})
	return fuzzTok.tok
}

// FuzzRoundTrip checks decode(encode(s)) == s for valid UTF-8, and for any
// bytes that encoding never panics and decodes to the text as the
// reference reads it (malformed sequences replaced, see sanitize).
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		"Hello, World!", "def f(x):\n    return x ** 2\n", "海滩上美丽的日落", "👨\u200d👩\u200d👧 🇯🇵",
		"<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>", "<|im_start <|IM_START|>",
		"it's  \r\n\r\n\t x", "\xff\xfeA", "\xc0\xaf", "\xed\xa0\x80", "a\xe2\x82", "\xf4\x90\x80\x80", "e\u0301té",
	} {
		f.Add(s)
	}
	tok := roundTripTokenizer(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, special := range []bool{false, true} {
			ids := tok.Encode(s, special)
			got, err := tok.Decode(ids)
			if err != nil {
				t.Fatal(err)
			}
			want := s
			if !utf8.ValidString(s) {
				want = sanitize(s)
			}
			if got != want {
				t.Fatalf("decode(encode(%q, %v)) = %q", s, special, got)
			}
		}
	})
}

// FuzzNFC checks that normalization never panics and that the result
// decodes to the NFC form of valid text.
func FuzzNFC(f *testing.F) {
	for _, s := range []string{"<|im_end|>\u0338", "e\u0301té", "\u212b vs \u00c5", "\u1112\u1161\u11ab", "\xed\xa0\x80\u0301", "a\u0301\xff"} {
		f.Add(s)
	}
	v := handVocab([]string{"a|b"})
	tok := mustNew(f, v, Options{})
	f.Fuzz(func(t *testing.T, s string) {
		got, err := tok.Decode(tok.Encode(s, true))
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(s) {
			return
		}
		if isNFC(s) != norm.NFC.IsNormalString(s) {
			t.Fatalf("isNFC(%q) = %v, the normalizer says otherwise", s, isNFC(s))
		}
		// Special tokens are cut out before normalization (so "<" and a
		// following U+0338 do not compose across the cut), as in HF.
		var want strings.Builder
		for _, fr := range tok.partition(s, true, nil) {
			if fr.id >= 0 {
				want.WriteString(s[fr.start:fr.end])
			} else {
				want.WriteString(norm.NFC.String(s[fr.start:fr.end]))
			}
		}
		if got != want.String() {
			t.Fatalf("decode(encode(%q)) = %q, want %q", s, got, want.String())
		}
	})
}

// FuzzPlainSpans checks partition with a plain span: the fragments cover
// the text in order, no special token that is not always parsed is cut
// out of the plain span, and outside it the cuts are those without one.
func FuzzPlainSpans(f *testing.F) {
	for _, s := range []string{"a<|im_end|>b<|im_end|>", "<|im_end|><|im_end|>", "x<|im_e"} {
		f.Add(s, 3, 12)
	}
	tok := mustNew(f, handVocab([]string{"a|b"}), Options{})
	f.Fuzz(func(t *testing.T, s string, i, j int) {
		if len(s) == 0 {
			return
		}
		i, j = (i%len(s)+len(s))%len(s), (j%len(s)+len(s))%len(s)
		if i > j {
			i, j = j, i
		}
		plain := []span{{i, j}}
		frags := tok.partition(s, true, plain)
		at := 0
		for _, fr := range frags {
			if fr.start != at || fr.end <= fr.start {
				t.Fatalf("%q plain [%d,%d): fragments %v do not cover it in order", s, i, j, frags)
			}
			at = fr.end
			if fr.id >= 0 && inSpans(plain, fr.start, fr.end) {
				t.Fatalf("%q plain [%d,%d): special token at [%d,%d) cut out of the plain span", s, i, j, fr.start, fr.end)
			}
		}
		if at != len(s) {
			t.Fatalf("%q: fragments end at %d", s, at)
		}
		if i == j && fmt.Sprint(frags) != fmt.Sprint(tok.partition(s, true, nil)) {
			t.Fatalf("%q: an empty plain span changed the cuts", s)
		}
	})
}
