package tokenizer

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// enc spells raw bytes in the byte-level alphabet of token texts.
func enc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteRune[s[i]])
	}
	return b.String()
}

// Specials of the hand-made vocabularies, after the learned tokens.
var handSpecials = []struct {
	text string
	typ  TokenType
}{
	{"<|endoftext|>", TypeControl}, {"<|im_start|>", TypeControl}, {"<|im_end|>", TypeControl},
	{"<|vision_start|>", TypeControl}, {"<|vision_end|>", TypeControl}, {"<|image_pad|>", TypeControl},
	{"<|video_pad|>", TypeControl}, {"<tool_call>", TypeUserDefined}, {"<|im", TypeControl},
}

// handVocab builds a vocabulary: the 256 byte tokens in byte order, the
// results of merges (plain-text pairs "left|right") unless listed in
// missing, then the special tokens.
func handVocab(merges []string, missing ...string) Vocab {
	v := Vocab{Model: "gpt2", Pre: "qwen2", BOS: -1, EOS: -1, PAD: -1}
	seen := map[string]bool{}
	add := func(s string, typ TokenType) {
		if !seen[s] {
			seen[s] = true
			v.Tokens = append(v.Tokens, s)
			v.TokenTypes = append(v.TokenTypes, int32(typ))
		}
	}
	for b := range 256 {
		add(string(byteRune[b]), TypeNormal)
	}
	for _, m := range merges {
		l, r, _ := strings.Cut(m, "|")
		v.Merges = append(v.Merges, enc(l)+" "+enc(r))
		if !slices.Contains(missing, l+r) {
			add(enc(l+r), TypeNormal)
		}
	}
	for _, s := range handSpecials {
		add(s.text, s.typ)
	}
	return v
}

func mustNew(t testing.TB, v Vocab, opts Options) *Tokenizer {
	t.Helper()
	tok, err := New(v, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// texts returns the plain-text pieces of ids.
func texts(t *testing.T, tok *Tokenizer, ids []int32) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		s, err := tok.Decode([]int32{id})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestBPEHandVocab(t *testing.T) {
	merges := []string{"a|a", "b|c", "aa|a", "b|b", " |t", "h|e", " t|he", "x|y", "xy|z"}
	tok := mustNew(t, handVocab(merges, "xy"), Options{DisableNFC: true, CacheWords: -1})
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"bbb", []string{"bb", "b"}},             // leftmost of equal-rank pairs first
		{"aaa", []string{"aaa"}},                 // then "aa a"
		{"aaaa", []string{"aa", "aa"}},           // "aa a" ranks after "a a"
		{"abc", []string{"a", "bc"}},             // no rule joins a and bc
		{"the the", []string{"t", "he", " the"}}, // chained merges
		{"xyz", []string{"xyz"}},                 // through "xy", which is not a token
		{"xy", []string{"x", "y"}},               // a non-token result falls back to bytes
		{"aa<|im_end|>aa", []string{"aa", "<|im_end|>", "aa"}},
		{"<|im_start|>", []string{"<|im_start|>"}}, // longest special first, not "<|im"
		{"<|im_sta", []string{"<|im", "_", "s", "t", "a"}},
	} {
		got := texts(t, tok, tok.Encode(tc.in, true))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Without special parsing only user-defined tokens are matched.
	ids := tok.Encode("<tool_call><|im_end|>", false)
	if got := texts(t, tok, ids); got[0] != "<tool_call>" || len(got) < 5 {
		t.Errorf("no special parsing: %q", got)
	}
}

func TestBPEFallbackDropsUnknownBytes(t *testing.T) {
	// A vocabulary without the token for byte 0x01: the reference skips it.
	v := handVocab(nil)
	v.Tokens[1] = "[REMOVED]"
	tok := mustNew(t, v, Options{})
	if got := texts(t, tok, tok.Encode("a\x01b", false)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got %q", got)
	}
}

func TestDuplicateMergeKeepsFirstRank(t *testing.T) {
	tok := mustNew(t, handVocab([]string{"b|c", "a|b", "b|c"}), Options{})
	if got := texts(t, tok, tok.Encode("abc", false)); !slices.Equal(got, []string{"a", "bc"}) {
		t.Errorf("got %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	good := handVocab([]string{"a|b"})
	for name, mod := range map[string]func(*Vocab){
		"model":       func(v *Vocab) { v.Model = "llama" },
		"pre":         func(v *Vocab) { v.Pre = "llama3" },
		"empty":       func(v *Vocab) { v.Tokens, v.TokenTypes = nil, nil },
		"types":       func(v *Vocab) { v.TokenTypes = v.TokenTypes[:3] },
		"merge space": func(v *Vocab) { v.Merges = []string{"ab"} },
		"merge empty": func(v *Vocab) { v.Merges = []string{""} },
		"bos":         func(v *Vocab) { v.BOS = len(v.Tokens) },
		"eos":         func(v *Vocab) { v.EOS = -2 },
	} {
		v := good
		v.Tokens = slices.Clone(good.Tokens)
		v.TokenTypes = slices.Clone(good.TokenTypes)
		mod(&v)
		if _, err := New(v, Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	tok := mustNew(t, good, Options{})
	if _, err := tok.Decode([]int32{int32(tok.NumTokens())}); err == nil {
		t.Error("Decode accepted an id outside the vocabulary")
	}
	if _, err := tok.RawPrompt("x", nil); err != nil {
		t.Error(err)
	}
	if _, err := tok.JinaV4Prompt(TaskRetrievalQuery, []Part{{Text: "<|image_pad|>"}}); !errors.Is(err, ErrVisionToken) {
		t.Errorf("vision token in text: %v", err)
	}
}

// naiveBPE is the textbook algorithm: rescan all pairs after every merge.
func naiveBPE(tok *Tokenizer, word string, ranks map[[2]string]int) []int32 {
	syms := make([]string, len(word))
	for i := range len(word) {
		syms[i] = string(byteRune[word[i]])
	}
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms = slices.Replace(syms, at, at+2, syms[at]+syms[at+1])
	}
	var ids []int32
	for _, s := range syms {
		if id, ok := tok.ids[s]; ok {
			ids = append(ids, id)
			continue
		}
		for _, b := range []byte(s) {
			if id, ok := tok.ids[string([]byte{b})]; ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// randomVocab returns a vocabulary of random merges over a small alphabet,
// some of whose results are not tokens, and the merge ranks.
func randomVocab(seed uint64) (Vocab, map[[2]string]int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	pieces := []string{"a", "b", "c", "é"}
	var merges, missing []string
	for range 60 {
		l, r := pieces[rng.IntN(len(pieces))], pieces[rng.IntN(len(pieces))]
		if len(l+r) > 6 {
			continue
		}
		merges = append(merges, l+"|"+r)
		if rng.IntN(8) == 0 {
			missing = append(missing, l+r)
		}
		pieces = append(pieces, l+r)
	}
	v := handVocab(merges, missing...)
	ranks := map[[2]string]int{}
	for i, m := range v.Merges {
		l, r, _ := strings.Cut(m, " ")
		if _, dup := ranks[[2]string{l, r}]; !dup {
			ranks[[2]string{l, r}] = i
		}
	}
	return v, ranks
}

// randomTokenizers caches the 64 random vocabularies FuzzBPE draws from.
var randomTokenizers sync.Map // seed -> *randomTok

type randomTok struct {
	tok   *Tokenizer
	ranks map[[2]string]int
}

func FuzzBPE(f *testing.F) {
	f.Add(uint64(1), "abcabcaaabbbccc")
	f.Add(uint64(2), "ééaébcaéé")
	f.Add(uint64(3), strings.Repeat("ab", 40))
	f.Fuzz(func(t *testing.T, seed uint64, word string) {
		if len(word) == 0 || len(word) > 512 {
			return
		}
		seed %= 64
		rt, ok := randomTokenizers.Load(seed)
		if !ok {
			v, ranks := randomVocab(seed)
			rt, _ = randomTokenizers.LoadOrStore(seed, &randomTok{mustNew(t, v, Options{CacheWords: -1}), ranks})
		}
		tok, ranks := rt.(*randomTok).tok, rt.(*randomTok).ranks
		if got, want := tok.bpe(nil, word), naiveBPE(tok, word, ranks); !slices.Equal(got, want) {
			t.Fatalf("bpe(%q) = %v, rescanning gives %v", word, got, want)
		}
	})
}
