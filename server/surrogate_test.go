package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLoneSurrogate checks loneSurrogate against encoding/json on JSON
// string literals: it reports an escape exactly when decoding would put a
// U+FFFD that the text did not hold (raw or as \ufffd), and the offset it
// reports is a \u escape.
func FuzzLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud800"`, `"\udc00x"`, `"\ud83d\ude00"`, `"\ud83d\u0041"`, `"\\ud800"`, `"\\\ud800"`,
		`"\ufffd"`, `"�"`, `"\ud800\ud800\udc00"`, `"\uD800\uDC00"`, `"\u"`, `"x\ud83d"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v string
		if !utf8.Valid(b) || json.Unmarshal(b, &v) != nil {
			return
		}
		at := loneSurrogate(b)
		replaced := strings.Count(v, "\ufffd") > bytes.Count(b, []byte("\ufffd"))+countFold(b, `\ufffd`)
		if (at >= 0) != replaced {
			t.Fatalf("%q: loneSurrogate %d, decoded %q", b, at, v)
		}
		if at >= 0 && !bytes.HasPrefix(b[at:], []byte(`\u`)) {
			t.Fatalf("%q: offset %d is not an escape", b, at)
		}
	})
}

// countFold counts the case-insensitive occurrences of sub in b.
func countFold(b []byte, sub string) int {
	return bytes.Count(bytes.ToLower(b), []byte(sub))
}
