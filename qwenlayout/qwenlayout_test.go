package qwenlayout

import "testing"

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int64]string{107072: "107K", 919808: "920K", 3_090_000_000: "3.1B", 1_500_000: "1.5M", 12_000_000: "12M"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSplitMerge(t *testing.T) {
	for m, want := range map[string][2]string{
		"Ġ t": {"Ġ", "t"}, "  x": {" ", "x"}, "a b c": {"a", "b c"}, "é ab": {"é", "ab"},
	} {
		l, r, ok := SplitMerge(m)
		if !ok || l != want[0] || r != want[1] {
			t.Errorf("SplitMerge(%q) = %q %q %v", m, l, r, ok)
		}
	}
	for _, bad := range []string{"", "ab", "a ", " "} {
		if _, _, ok := SplitMerge(bad); ok {
			t.Errorf("SplitMerge(%q) accepted", bad)
		}
	}
}
