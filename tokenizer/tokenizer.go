// Package tokenizer turns text into the token ids of Qwen2-family models
// (byte-level BPE with the Qwen2 pre-tokenizer, as stored in GGUF files) and
// builds the prompts of the embedding models served on top of them.
//
// Two references define the ids: Hugging Face's tokenizer.json (which
// normalizes text to NFC) and llama.cpp (which does not). A Tokenizer
// follows Hugging Face by default; Options.DisableNFC gives llama.cpp's ids.
// Both agree on everything else, including how special tokens written in the
// text are matched. Malformed UTF-8 is tokenized exactly as llama.cpp does.
package tokenizer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TokenType is the kind of a vocabulary entry, as in tokenizer.ggml.token_type.
type TokenType int32

// Token types (llama.cpp's llama_token_type).
const (
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Vocab is a tokenizer's data in plain form, as the GGUF keys
// tokenizer.ggml.* hold it.
type Vocab struct {
	Model      string   // tokenizer.ggml.model; must be "gpt2" (byte-level BPE)
	Pre        string   // tokenizer.ggml.pre: "qwen2", or "qwen35" (Qwen3.5's pattern: combining marks are letters)
	Tokens     []string // token texts in the GPT-2 byte-to-unicode alphabet
	TokenTypes []int32  // one per token; nil means every token is normal
	Merges     []string // "left right", in rank order
	BOS        int      // -1 if absent
	EOS        int      // -1 if absent
	PAD        int      // -1 if absent
	AddBOS     bool     // recorded, not applied: the Qwen2 family adds no BOS
}

// Options adjusts a Tokenizer.
type Options struct {
	// DisableNFC skips the Unicode NFC normalization Hugging Face's Qwen2
	// tokenizer applies, to reproduce llama.cpp, which applies none.
	DisableNFC bool
	// CacheWords bounds the cache of tokenized words: 0 picks a default of
	// 64k words, a negative value disables the cache.
	CacheWords int
}

const defaultCacheWords = 1 << 16

// Tokenizer encodes and decodes text. It is safe for concurrent use.
type Tokenizer struct {
	tokens []string
	types  []TokenType
	ids    map[string]int32

	// extra holds symbols that merges mention but the vocabulary lacks; the
	// symbol id of extra[i] is len(tokens)+i.
	extra    []string
	extraIDs map[string]int32 // only while building
	byteSym  [256]int32
	merges   *pairTable

	specials []special // longest first
	vision   map[int32]bool

	bos, eos, pad int32
	addBOS        bool
	nfc           bool
	marks         bool // Qwen3.5's pre-tokenizer: combining marks are letters
	cache         *wordCache
}

// special is a token matched literally in text before pre-tokenization.
type special struct {
	text string
	id   int32
	// always: matched even when the caller does not parse special tokens,
	// as the reference does for user-defined tokens such as <tool_call>.
	always bool
}

// The vision placeholders of Qwen2-VL prompts. Text supplied by users may
// not contain them: they would break the accounting of image tokens.
var visionTokens = []string{"<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"}

// New builds a Tokenizer from plain vocabulary data.
func New(v Vocab, opts Options) (*Tokenizer, error) {
	if v.Model != "gpt2" {
		return nil, fmt.Errorf("tokenizer: model %q is not supported (want gpt2, byte-level BPE)", v.Model)
	}
	if v.Pre != "qwen2" && v.Pre != "qwen35" {
		return nil, fmt.Errorf("tokenizer: pre-tokenizer %q is not supported (want qwen2 or qwen35)", v.Pre)
	}
	n := len(v.Tokens)
	if n == 0 || n > math.MaxInt32/2 {
		return nil, fmt.Errorf("tokenizer: vocabulary of %d tokens", n)
	}
	// Symbol ids (tokens, then up to three new strings per merge) are int32.
	if int64(n)+3*int64(len(v.Merges))+256 > math.MaxInt32 {
		return nil, fmt.Errorf("tokenizer: %d tokens and %d merges are too many", n, len(v.Merges))
	}
	if v.TokenTypes != nil && len(v.TokenTypes) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.TokenTypes), n)
	}
	t := &Tokenizer{
		tokens: slices.Clone(v.Tokens),
		types:  make([]TokenType, n),
		ids:    make(map[string]int32, n),
		merges: newPairTable(len(v.Merges)),
		vision: map[int32]bool{},
		addBOS: v.AddBOS,
		nfc:    !opts.DisableNFC,
		marks:  v.Pre == "qwen35",
	}
	for _, f := range []struct {
		name string
		in   int
		out  *int32
	}{{"BOS", v.BOS, &t.bos}, {"EOS", v.EOS, &t.eos}, {"PAD", v.PAD, &t.pad}} {
		if f.in < -1 || f.in >= n {
			return nil, fmt.Errorf("tokenizer: %s id %d outside the vocabulary of %d tokens", f.name, f.in, n)
		}
		*f.out = int32(f.in)
	}
	for i, s := range v.Tokens {
		t.types[i] = TypeNormal
		if v.TokenTypes != nil {
			t.types[i] = TokenType(v.TokenTypes[i])
		}
		t.ids[s] = int32(i) // a repeated text maps to its last id, as in llama.cpp
	}
	for b := range 256 {
		t.byteSym[b] = t.intern(string(byteRune[b]))
	}
	for rank, m := range v.Merges {
		sp := strings.IndexByte(m[min(1, len(m)):], ' ') + 1
		if sp <= 0 {
			return nil, fmt.Errorf("tokenizer: merge %d %q has no separating space", rank, m)
		}
		l, r := m[:sp], m[sp+1:]
		res, ok := t.ids[l+r] // usually a token: look up without keeping the concatenation
		if !ok {
			res = t.intern(l + r)
		}
		t.merges.add(pairKey(t.intern(l), t.intern(r)), merge(uint64(rank)<<32|uint64(uint32(res))))
	}
	for i, s := range v.Tokens {
		switch t.types[i] {
		case TypeControl, TypeUserDefined, TypeUnknown:
			if s == "" || t.ids[s] != int32(i) {
				continue
			}
			t.specials = append(t.specials, special{text: s, id: int32(i), always: t.types[i] == TypeUserDefined})
			if slices.Contains(visionTokens, s) {
				t.vision[int32(i)] = true
			}
		}
	}
	t.extraIDs = nil
	slices.SortStableFunc(t.specials, func(a, b special) int { return cmp.Compare(len(b.text), len(a.text)) })
	switch {
	case opts.CacheWords == 0:
		t.cache = newWordCache(defaultCacheWords)
	case opts.CacheWords > 0:
		t.cache = newWordCache(opts.CacheWords)
	}
	initClasses()
	return t, nil
}

// intern returns the symbol id of s, adding it to the extra symbols if the
// vocabulary does not have it.
func (t *Tokenizer) intern(s string) int32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	if t.extraIDs == nil {
		t.extraIDs = map[string]int32{}
	}
	if id, ok := t.extraIDs[s]; ok {
		return id
	}
	id := int32(len(t.tokens) + len(t.extra))
	t.extra = append(t.extra, s)
	t.extraIDs[s] = id
	return id
}

// Encode returns the token ids of text. With parseSpecial, special-token
// texts such as "<|im_start|>" become their ids; without it only
// user-defined tokens (e.g. "<tool_call>") do, as in llama.cpp. No BOS or
// EOS is added. Any byte string is accepted.
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int32 {
	return t.AppendEncode(make([]int32, 0, len(text)/3+1), text, parseSpecial)
}

// AppendEncode appends the token ids of text to dst; see Encode.
func (t *Tokenizer) AppendEncode(dst []int32, text string, parseSpecial bool) []int32 {
	dst, _ = t.appendEncode(dst, text, parseSpecial, false)
	return dst
}

// appendEncode is AppendEncode that, with noVision, fails on the first
// vision token found in text (wrapping ErrVisionToken), and reads the
// byte ranges plain of text as Encode without parseSpecial does.
func (t *Tokenizer) appendEncode(dst []int32, text string, parseSpecial, noVision bool, plain ...span) ([]int32, error) {
	for _, f := range t.partition(text, parseSpecial, plain) {
		switch {
		case f.id < 0:
			dst = t.appendText(dst, text[f.start:f.end])
		case noVision && t.vision[f.id]:
			return dst, fmt.Errorf("tokenizer: %w: %s (images are passed as image parts, not as markup)", ErrVisionToken, t.tokens[f.id])
		default:
			dst = append(dst, f.id)
		}
	}
	return dst, nil
}

// fragment is a piece of the input: a special token (id >= 0) or text.
type fragment struct {
	start, end int
	id         int32
}

// span is a byte range [start, end) of a text.
type span struct{ start, end int }

// inSpans reports whether [start, end) overlaps one of spans (sorted,
// disjoint).
func inSpans(spans []span, start, end int) bool {
	for _, s := range spans {
		if s.start >= end {
			return false
		}
		if s.end > start && s.end > s.start {
			return true
		}
	}
	return false
}

// partition splits text at special-token literals. Like llama.cpp it takes
// the special tokens longest first and splits every remaining text piece at
// each occurrence, left to right. An occurrence overlapping a plain span
// (sorted, disjoint) is text unless the token is always parsed, as
// without parseSpecial.
func (t *Tokenizer) partition(text string, parseSpecial bool, plain []span) []fragment {
	if len(text) == 0 {
		return nil
	}
	frags := []fragment{{0, len(text), -1}}
	var next []fragment
	for _, sp := range t.specials {
		if !parseSpecial && !sp.always {
			continue
		}
		if !strings.Contains(text, sp.text) {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			for from := f.start; from < f.end; {
				k := strings.Index(text[from:f.end], sp.text)
				if k < 0 {
					break
				}
				at := from + k
				if !sp.always && inSpans(plain, at, at+len(sp.text)) {
					from = at + 1
					continue
				}
				if at > f.start {
					next = append(next, fragment{f.start, at, -1})
				}
				next = append(next, fragment{at, at + len(sp.text), sp.id})
				f.start = at + len(sp.text)
				from = f.start
			}
			if f.start < f.end {
				next = append(next, f)
			}
		}
		frags, next = next, frags
	}
	return frags
}

// appendText tokenizes text that holds no special tokens.
func (t *Tokenizer) appendText(dst []int32, s string) []int32 {
	s = sanitize(s)
	if t.nfc && !isNFC(s) {
		s = norm.NFC.String(s)
	}
	for i := 0; i < len(s); {
		j := nextWord(s, i, t.marks)
		dst = t.appendWord(dst, s[i:j])
		i = j
	}
	return dst
}

func (t *Tokenizer) appendWord(dst []int32, w string) []int32 {
	if len(w) == 1 || t.cache == nil || len(w) > maxCachedWord {
		return t.bpe(dst, w)
	}
	if ids, ok := t.cache.get(w); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.bpe(dst, w)
	t.cache.put(w, slices.Clone(dst[start:]))
	return dst
}

// Decode returns the text of ids: byte-level tokens become their bytes,
// special and other added tokens their literal text. The result is not
// necessarily valid UTF-8 (a token may hold part of a character).
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	var b []byte
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) {
			return "", fmt.Errorf("tokenizer: decode: token id %d outside the vocabulary of %d tokens", id, len(t.tokens))
		}
		s := t.tokens[id]
		switch t.types[id] {
		case TypeNormal, TypeByte:
			for _, r := range s {
				if r < rune(len(unicodeByte)) && unicodeByte[r] >= 0 {
					b = append(b, byte(unicodeByte[r]))
				} else {
					b = utf8.AppendRune(b, r)
				}
			}
		default:
			b = append(b, s...)
		}
	}
	return string(b), nil
}

// TokenID returns the id of the token with text s.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// Token returns the text of token id (in the byte-level alphabet), or ""
// if id is outside the vocabulary.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Type returns the type of token id, or 0 if id is outside the vocabulary.
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.tokens) {
		return 0
	}
	return t.types[id]
}

// NumTokens returns the size of the vocabulary.
func (t *Tokenizer) NumTokens() int { return len(t.tokens) }

// BOS, EOS and PAD return the ids of those tokens, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// PAD returns the padding id, or -1.
func (t *Tokenizer) PAD() int32 { return t.pad }

// AddBOS reports the file's add_bos_token flag. Encode never adds a BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// NFC reports whether text is normalized to NFC before tokenization.
func (t *Tokenizer) NFC() bool { return t.nfc }

// ErrVisionToken is reported when text supplied by a user contains a vision
// placeholder token; images must be passed as image parts instead.
var ErrVisionToken = errors.New("text contains a vision special token")
