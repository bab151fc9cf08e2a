package tokenizer

import (
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestSafeNFCAboveBMP checks the blocks safeNFC declares safe against the
// normalizer's properties, code point by code point.
func TestSafeNFCAboveBMP(t *testing.T) {
	initClasses()
	for _, blk := range [][2]rune{{0x1F000, 0x1FAFF}, {0x20000, 0x2F7FF}, {0x30000, 0x3134F}, {0x2F800, 0x2FA1D}} {
		for r := blk[0]; r <= blk[1]; r++ {
			s := string(r)
			want := norm.NFC.PropertiesString(s).BoundaryBefore() && norm.NFC.IsNormalString(s)
			if safeNFC(r, 4) && !want {
				t.Fatalf("U+%04X is not NFC-safe", r)
			}
		}
	}
}

func TestIsNFC(t *testing.T) {
	initClasses()
	for _, s := range []string{
		"", "abc", "e\u0301t\u00e9", "\u00e9", "\u212b", "\u1112\u1161\u11ab", "\uac00\u11a8", "한국어",
		"नमस्ते", "\u0915\u093c", "🚀\u0301", "\U0002F800", "a\u0328\u0301", "a\u0301\u0328", "\xed\xa0\x80\u0301",
		"Cửa Việt", "Ünïcödé", "\u0958", "x\u0345", "\ufffd\u0301",
	} {
		if got, want := isNFC(s), norm.NFC.IsNormalString(s); got != want {
			t.Errorf("isNFC(%q) = %v, normalizer %v", s, got, want)
		}
	}
	n := 0
	for r := rune(0x80); r < 0x10000; r++ {
		if bmpClass[r]&nfcSafe != 0 {
			n++
			if !utf8.ValidRune(r) {
				t.Fatalf("U+%04X marked safe", r)
			}
		}
	}
	if n < 50000 {
		t.Errorf("only %d BMP code points are NFC-safe", n)
	}
}
