package convert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/gguf"
)

// Tokenizer is a byte-level BPE tokenizer as llama.cpp's GGUF stores it.
type Tokenizer struct {
	Tokens       []string
	Types        []int32
	Merges       []string
	BOS, EOS     int
	ChatTemplate string
}

// Token types of tokenizer.ggml.token_type.
const (
	tokNormal      = 1
	tokControl     = 3
	tokUserDefined = 4
	tokUnused      = 5
)

// ReadTokenizer reads tokenizer.json (and tokenizer_config.json for the
// chat template) as llama.cpp's converter does: the vocabulary padded to
// the model's vocab_size with "[PAD<id>]" tokens, added tokens typed
// CONTROL when special (or shaped <|…|>) else USER_DEFINED, the merges in
// rank order as "left right".
func ReadTokenizer(dir string, cfg *TextConfig) (*Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	var tj struct {
		Model struct {
			Type   string            `json:"type"`
			Vocab  map[string]int    `json:"vocab"`
			Merges []json.RawMessage `json:"merges"`
		} `json:"model"`
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, fmt.Errorf("convert: %s/tokenizer.json: %w", dir, err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("convert: %s/tokenizer.json: model type %q (want BPE)", dir, tj.Model.Type)
	}
	n := cfg.Vocab
	for _, id := range tj.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range tj.AddedTokens {
		n = max(n, a.ID+1)
	}
	if n > 4<<20 {
		return nil, fmt.Errorf("convert: %s/tokenizer.json: %d tokens", dir, n)
	}
	t := &Tokenizer{Tokens: make([]string, n), Types: make([]int32, n), BOS: -1, EOS: -1}
	set := make([]bool, n)
	for tok, id := range tj.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("convert: tokenizer.json: token %q has id %d", tok, id)
		}
		t.Tokens[id], t.Types[id], set[id] = tok, tokNormal, true
	}
	for _, a := range tj.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("convert: tokenizer.json: added token %q has id %d", a.Content, a.ID)
		}
		typ := int32(tokUserDefined)
		if a.Special || (strings.HasPrefix(a.Content, "<|") && strings.HasSuffix(a.Content, "|>")) {
			typ = tokControl
		}
		t.Tokens[a.ID], t.Types[a.ID], set[a.ID] = a.Content, typ, true
	}
	for id := range t.Tokens {
		if !set[id] {
			t.Tokens[id], t.Types[id] = fmt.Sprintf("[PAD%d]", id), tokUnused
		}
	}
	for i, m := range tj.Model.Merges {
		var s string
		if json.Unmarshal(m, &s) == nil {
			t.Merges = append(t.Merges, s)
			continue
		}
		var pair []string
		if err := json.Unmarshal(m, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("convert: tokenizer.json: merge %d is neither \"a b\" nor [a, b]", i)
		}
		t.Merges = append(t.Merges, pair[0]+" "+pair[1])
	}
	if cfg.BOS != nil {
		t.BOS = *cfg.BOS
	}
	switch e := cfg.EOS.(type) {
	case float64:
		t.EOS = int(e)
	case []any:
		if len(e) > 0 {
			if f, ok := e[0].(float64); ok {
				t.EOS = int(f)
			}
		}
	}
	if tc, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var c struct {
			ChatTemplate any `json:"chat_template"`
		}
		if json.Unmarshal(tc, &c) == nil {
			if s, ok := c.ChatTemplate.(string); ok {
				t.ChatTemplate = s
			}
		}
	}
	return t, nil
}

func (t *Tokenizer) add(w *gguf.Writer) {
	w.Add("tokenizer.ggml.model", "gpt2")
	w.Add("tokenizer.ggml.pre", "qwen2")
	w.Add("tokenizer.ggml.tokens", t.Tokens)
	w.Add("tokenizer.ggml.token_type", t.Types)
	w.Add("tokenizer.ggml.merges", t.Merges)
	if t.EOS >= 0 {
		w.Add("tokenizer.ggml.eos_token_id", uint32(t.EOS))
	}
	if t.BOS >= 0 {
		w.Add("tokenizer.ggml.bos_token_id", uint32(t.BOS))
		w.Add("tokenizer.ggml.padding_token_id", uint32(t.BOS))
	}
	w.Add("tokenizer.ggml.add_bos_token", false)
	if t.ChatTemplate != "" {
		w.Add("tokenizer.chat_template", t.ChatTemplate)
	}
}
