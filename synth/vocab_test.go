package synth

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/qwenlayout"
)

func TestSmallVocab(t *testing.T) {
	v, err := SmallVocab(230, 512)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(); err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != 512 || len(v.Merges) != 230 {
		t.Fatalf("%d tokens, %d merges", len(v.Tokens), len(v.Merges))
	}
	// Byte tokens in GPT-2 order, merges adding one token each, in rank order.
	if v.Tokens[0] != "!" || v.Tokens[187] != "ÿ" || v.Tokens[188] != "Ā" {
		t.Errorf("byte tokens out of order: %q %q %q", v.Tokens[0], v.Tokens[187], v.Tokens[188])
	}
	for i, m := range v.Merges {
		l, r, _ := qwenlayout.SplitMerge(m)
		if v.Tokens[256+i] != l+r {
			t.Errorf("merge %d %q does not produce token %d %q", i, m, 256+i, v.Tokens[256+i])
		}
	}
	if v.Tokens[v.BOS] != "<|endoftext|>" || v.Tokens[v.EOS] != "<|im_end|>" || v.PAD != v.BOS || v.BOS != 486 {
		t.Errorf("special ids bos %d eos %d pad %d", v.BOS, v.EOS, v.PAD)
	}
	for id, typ := range map[int]int32{485: qwenlayout.TokenNormal, 486: qwenlayout.TokenControl, 495: qwenlayout.TokenControl, 500: qwenlayout.TokenUserDefined,
		501: qwenlayout.TokenUserDefined, 507: qwenlayout.TokenControl, 508: qwenlayout.TokenUnused, 511: qwenlayout.TokenUnused} {
		if v.Types[id] != typ {
			t.Errorf("token %d %q: type %d, want %d", id, v.Tokens[id], v.Types[id], typ)
		}
	}
	if v.Tokens[511] != "[PAD511]" {
		t.Errorf("last filler %q", v.Tokens[511])
	}
	// Determinism of the trainer itself (SmallVocab caches it).
	base, byByte := qwenlayout.ByteTokens()
	m1, a1, err := learnMerges(sampleText, byByte, base, 230)
	if err != nil {
		t.Fatal(err)
	}
	m2, a2, _ := learnMerges(sampleText, byByte, base, 230)
	if !reflect.DeepEqual(m1, m2) || !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(m1, v.Merges) {
		t.Error("two trainings gave different merges")
	}
}

// TestVocabMatchesFixture compares the parts of the small vocabulary that
// are fixed by Qwen's layout with the fixtures' small vocabulary.
func TestVocabMatchesFixture(t *testing.T) {
	dir := fixtures.Dir(t, "quant")
	f := open(t, filepath.Join(dir, "q256-F32.gguf"))
	td, err := f.TokenizerData()
	if err != nil {
		t.Fatal(err)
	}
	v, err := SmallVocab(len(td.Merges), len(td.Tokens))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v.Tokens[:256], td.Tokens[:256]) {
		t.Error("byte tokens differ from the fixture's")
	}
	first := 256 + len(td.Merges)
	if !reflect.DeepEqual(v.Tokens[first:], td.Tokens[first:]) || !reflect.DeepEqual(v.Types, td.TokenTypes) {
		t.Error("added tokens, fillers or token types differ from the fixture's")
	}
	if int(v.BOS) != td.BOS || int(v.EOS) != td.EOS || int(v.PAD) != td.PAD {
		t.Errorf("special ids %d/%d/%d, fixture %d/%d/%d", v.BOS, v.EOS, v.PAD, td.BOS, td.EOS, td.PAD)
	}
	tmpl, _ := f.Lookup("tokenizer.chat_template")
	if s, _ := tmpl.AsString(); s != ChatTemplate {
		t.Error("chat template differs from the fixture's")
	}
}

func TestVocabCheckRejects(t *testing.T) {
	v, err := SmallVocab(10, 300)
	if err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*qwenlayout.Vocab){
		"dup":       func(v *qwenlayout.Vocab) { v.Tokens[300-1] = v.Tokens[0] },
		"merge":     func(v *qwenlayout.Vocab) { v.Merges[0] = "x yz" },
		"nospace":   func(v *qwenlayout.Vocab) { v.Merges[0] = "ab" },
		"types":     func(v *qwenlayout.Vocab) { v.Types = v.Types[:1] },
		"bytes":     func(v *qwenlayout.Vocab) { v.Tokens[5] = "zz" },
		"specialid": func(v *qwenlayout.Vocab) { v.EOS = 300 },
	} {
		w := *v
		w.Tokens = append([]string(nil), v.Tokens...)
		w.Merges = append([]string(nil), v.Merges...)
		mod(&w)
		if w.Check() == nil {
			t.Errorf("%s: broken vocabulary passes Check", name)
		}
	}
	if _, err := SmallVocab(100000, 200000); err == nil {
		t.Error("more merges than the sample allows: no error")
	}
}

// FuzzPreSplit checks that pre-splitting loses nothing and never yields an
// empty piece, whatever the input.
func FuzzPreSplit(f *testing.F) {
	for _, s := range []string{sampleText, "", " ", "  a", "a  b\n\n c", "\r\n", "x1.5 $", "\xff\xfe", "é ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		parts := preSplit(s)
		if strings.Join(parts, "") != s {
			t.Fatalf("pieces %q do not rebuild %q", parts, s)
		}
		for _, p := range parts {
			if p == "" {
				t.Fatalf("empty piece in %q", parts)
			}
		}
	})
}
