package qwenlayout

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Token types as llama.cpp stores them in tokenizer.ggml.token_type.
const (
	TokenNormal      int32 = 1
	TokenControl     int32 = 3
	TokenUserDefined int32 = 4
	TokenUnused      int32 = 5
)

// Vocab is a byte-level BPE vocabulary in the form llama.cpp's gpt2 tokenizer
// reads from GGUF metadata.
type Vocab struct {
	// Pre is tokenizer.ggml.pre: "qwen2" ("" too), or "qwen35", Qwen3.5's
	// pattern, whose words take combining marks.
	Pre    string
	Tokens []string
	Types  []int32
	Merges []string // "left right", in rank order
	BOS    uint32
	EOS    uint32
	PAD    uint32
}

// ByteTokens returns GPT-2's byte-to-unicode table in token-id order: the
// 188 printable bytes first (id 0 = "!"), then the other 68 bytes in
// increasing order, each shown as the code point 256+n. Byte-level BPE
// vocabularies (Qwen's among them) use this order for their first 256 ids.
// The second result maps a byte to its token string.
func ByteTokens() (tokens []string, byByte [256]string) {
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	tokens = make([]string, 0, 256)
	for b := 0; b < 256; b++ {
		if printable(b) {
			byByte[b] = string(rune(b))
			tokens = append(tokens, byByte[b])
		}
	}
	n := 0
	for b := 0; b < 256; b++ {
		if !printable(b) {
			byByte[b] = string(rune(256 + n))
			tokens = append(tokens, byByte[b])
			n++
		}
	}
	return tokens, byByte
}

// Check verifies that the vocabulary is usable by a byte-level BPE
// tokenizer: unique tokens, all 256 byte tokens present, and every merge
// joining two tokens into a token.
func (v *Vocab) Check() error {
	if len(v.Types) != len(v.Tokens) {
		return fmt.Errorf("qwenlayout: %d token types for %d tokens", len(v.Types), len(v.Tokens))
	}
	ids := make(map[string]int, len(v.Tokens))
	for i, t := range v.Tokens {
		if j, dup := ids[t]; dup {
			return fmt.Errorf("qwenlayout: token %q at ids %d and %d", t, j, i)
		}
		ids[t] = i
	}
	_, byByte := ByteTokens()
	for b, t := range byByte {
		if _, ok := ids[t]; !ok {
			return fmt.Errorf("qwenlayout: byte %#02x has no token %q", b, t)
		}
	}
	for i, m := range v.Merges {
		l, r, ok := SplitMerge(m)
		if !ok {
			return fmt.Errorf("qwenlayout: merge %d %q is not two tokens separated by a space", i, m)
		}
		for _, part := range []string{l, r, l + r} {
			if _, ok := ids[part]; !ok {
				return fmt.Errorf("qwenlayout: merge %d %q: %q is not a token", i, m, part)
			}
		}
	}
	for _, id := range []uint32{v.BOS, v.EOS, v.PAD} {
		if int(id) >= len(v.Tokens) {
			return fmt.Errorf("qwenlayout: special token id %d out of range", id)
		}
	}
	return nil
}

// SplitMerge splits a merge rule at the first space after position 0, as
// llama.cpp does (a token can itself start with a space-like character).
func SplitMerge(m string) (l, r string, ok bool) {
	if m == "" {
		return "", "", false
	}
	_, n := utf8.DecodeRuneInString(m)
	i := strings.IndexByte(m[n:], ' ')
	if i < 0 {
		return "", "", false
	}
	l, r = m[:n+i], m[n+i+1:]
	return l, r, l != "" && r != ""
}

// VocabKVs returns the tokenizer.* metadata of v as llama.cpp's converter
// writes it for Qwen (model gpt2, pre-tokenizer qwen2 unless v says
// qwen35), in its order, with the given chat template ("" writes none).
func VocabKVs(v *Vocab, chatTemplate string) []KV {
	pre := v.Pre
	if pre == "" {
		pre = "qwen2"
	}
	kvs := []KV{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", pre},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.token_type", v.Types},
		{"tokenizer.ggml.merges", v.Merges},
		{"tokenizer.ggml.eos_token_id", v.EOS},
		{"tokenizer.ggml.padding_token_id", v.PAD},
		{"tokenizer.ggml.bos_token_id", v.BOS},
		{"tokenizer.ggml.add_bos_token", false},
	}
	if chatTemplate != "" {
		kvs = append(kvs, KV{"tokenizer.chat_template", chatTemplate})
	}
	return kvs
}
