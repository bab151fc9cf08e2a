package server

import (
	"bytes"
	"encoding/json"
	"unicode"
)

// duplicateKey returns the first object key of a valid JSON text that
// repeats a key of its object, as encoding/json matches names: exactly,
// after unescaping, or by case folding ("texts", "Texts" and
// "\u0074exts" are one field). encoding/json keeps the last of them
// silently, so a client (or a proxy that reads the first) would believe
// another value was used. It scans strings by jumps to the next quote or
// backslash: a pass costs little beside the decoding.
func duplicateKey(data []byte) (string, bool) {
	type frame struct {
		object bool
		keys   map[string]struct{}
	}
	var stack []frame
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '"':
			start := i
			escaped := false
			for i++; i < len(data); i++ {
				k := bytes.IndexAny(data[i:], `"\`)
				if k < 0 {
					return "", false // not valid JSON: the decoder said so already
				}
				i += k
				if data[i] == '"' {
					break
				}
				escaped = true
				i++ // the escaped byte
			}
			end := i + 1
			j := end
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
				j++
			}
			if j >= len(data) || data[j] != ':' || len(stack) == 0 || !stack[len(stack)-1].object {
				continue
			}
			key := string(data[start+1 : end-1])
			if escaped {
				if json.Unmarshal(data[start:end], &key) != nil {
					continue
				}
			}
			f := &stack[len(stack)-1]
			if f.keys == nil {
				f.keys = map[string]struct{}{}
			}
			folded := foldKey(key)
			if _, dup := f.keys[folded]; dup {
				return key, true
			}
			f.keys[folded] = struct{}{}
		}
	}
	return "", false
}

// foldKey maps each character of s to the smallest of its case-folding
// orbit (unicode.SimpleFold), so that keys encoding/json takes for one
// field name map to one string.
func foldKey(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = append(b, m)
	}
	return string(b)
}

// arrayLen returns the number of elements of a valid JSON array, or -1
// when raw is not an array, without decoding them.
func arrayLen(raw []byte) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return -1
	}
	if len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0 {
		return 0
	}
	n, depth := 1, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		case '"':
			for i++; i < len(raw); i++ {
				k := bytes.IndexAny(raw[i:], `"\`)
				if k < 0 {
					return -1
				}
				i += k
				if raw[i] == '"' {
					break
				}
				i++
			}
		}
	}
	return n
}
