package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct {
		json, key string
	}{
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"a":2}`, "a"},
		{`{"texts":1,"TEXTS":2}`, "TEXTS"},
		{`{"texts":1,"\u0074exts":2}`, "texts"},
		{`{"kind":1,"\u212aind":2}`, "\u212aind"}, // Kelvin sign folds to k
		{`{"a":{"b":1},"b":2}`, ""},
		{`{"a":[{"b":1},{"b":2}]}`, ""},
		{`{"a":[{"b":1,"b":2}]}`, "b"},
		{`{"a":"b","c":"b"}`, ""},
		{`{"a":"x\":","b" : 1, "b" :2}`, "b"},
		{`["a","a"]`, ""},
	} {
		key, dup := duplicateKey([]byte(c.json))
		if key != c.key || dup != (c.key != "") {
			t.Errorf("%s: %q %v, want %q", c.json, key, dup, c.key)
		}
	}
}

// FuzzArrayLen: arrayLen counts a valid array's elements as decoding it
// does.
func FuzzArrayLen(f *testing.F) {
	for _, s := range []string{`[]`, ` [ ] `, `[1]`, `["a,b",[1,2],{"c":[3,4]}]`, `["\"]",","]`, `{"a":1}`, `"x"`, `[[],[]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var elems []json.RawMessage
		if !json.Valid([]byte(s)) {
			return
		}
		err := json.Unmarshal([]byte(s), &elems)
		n := arrayLen([]byte(s))
		if err != nil {
			if n >= 0 {
				t.Fatalf("%q: %d elements of a non-array", s, n)
			}
			return
		}
		if strings.TrimSpace(s) != "null" && n != len(elems) {
			t.Fatalf("%q: %d elements, decoding finds %d", s, n, len(elems))
		}
	})
}
