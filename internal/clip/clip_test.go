package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 4, "abcd... (7 bytes more)"},
		{"aé", 2, "a... (2 bytes more)"}, // é is two bytes: not cut inside
		{"xyz", 0, "... (3 bytes more)"},
		{"xyz", -1, "... (3 bytes more)"},
	} {
		if got := String(c.in, c.n); got != c.want {
			t.Errorf("String(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	long := strings.Repeat("日本", 1000)
	for n := range 20 {
		got := String(long, n)
		if !utf8.ValidString(got) || len(got) > n+len("... (6000 bytes more)") {
			t.Errorf("String(long, %d) = %q", n, got)
		}
	}
	if got := Quote("a\"b"+strings.Repeat("c", 100), 3); got != `"a\"b... (100 bytes more)"` {
		t.Errorf("Quote = %s", got)
	}
}
