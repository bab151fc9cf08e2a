package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vembed/vembed/qwenlayout"
)

// maxTokens bounds the vocabulary a tokenizer.json may declare (a
// variable so that the fuzz test can keep each run small).
var maxTokens = 4 << 20

// readTokenizer reads tokenizer.json and tokenizer_config.json as
// llama.cpp's converter does for Qwen: the pre-tokenizer qwen2, or qwen35
// when the split pattern admits combining marks (Qwen3.5's); the BPE
// vocabulary padded to the
// model's vocab_size with "[PAD<id>]" tokens (UNUSED), added tokens typed
// CONTROL when special (or shaped <|…|>) else USER_DEFINED, the merges in
// rank order as "left right"; the end, padding and start tokens named by
// tokenizer_config.json, else config.json's ids; the chat template.
func readTokenizer(dir string, cfg *hfConfig) (*qwenlayout.Vocab, string, error) {
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, "", fmt.Errorf("convert: %w", err)
	}
	tc, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("convert: %w", err)
	}
	return parseTokenizer(tj, tc, cfg)
}

// parseTokenizer reads tokenizer.json and tokenizer_config.json (nil when
// absent); see readTokenizer.
func parseTokenizer(tokJSON, tokCfgJSON []byte, cfg *hfConfig) (*qwenlayout.Vocab, string, error) {
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
		PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	}
	if err := json.Unmarshal(tokJSON, &tj); err != nil {
		return nil, "", fmt.Errorf("convert: tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" {
		return nil, "", fmt.Errorf("convert: tokenizer.json: model type %q (want BPE)", tj.Model.Type)
	}
	n := cfg.Vocab
	for _, id := range tj.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range tj.AddedTokens {
		n = max(n, a.ID+1)
	}
	if n > maxTokens || n <= 0 {
		return nil, "", fmt.Errorf("convert: tokenizer.json: %d tokens", n)
	}
	v := &qwenlayout.Vocab{Tokens: make([]string, n), Types: make([]int32, n), Pre: "qwen2"}
	// Qwen3.5's split pattern admits combining marks in words (\p{M}),
	// which llama.cpp names qwen35; Qwen2's has none.
	if bytes.Contains(tj.PreTokenizer, []byte(`p{M}`)) {
		v.Pre = "qwen35"
	}
	set := make([]bool, n)
	for tok, id := range tj.Model.Vocab {
		if id < 0 {
			return nil, "", fmt.Errorf("convert: tokenizer.json: token %q has id %d", tok, id)
		}
		v.Tokens[id], v.Types[id], set[id] = tok, qwenlayout.TokenNormal, true
	}
	for _, a := range tj.AddedTokens {
		if a.ID < 0 {
			return nil, "", fmt.Errorf("convert: tokenizer.json: added token %q has id %d", a.Content, a.ID)
		}
		typ := qwenlayout.TokenUserDefined
		if a.Special || (strings.HasPrefix(a.Content, "<|") && strings.HasSuffix(a.Content, "|>")) {
			typ = qwenlayout.TokenControl
		}
		v.Tokens[a.ID], v.Types[a.ID], set[a.ID] = a.Content, typ, true
	}
	for id := range v.Tokens {
		if !set[id] {
			v.Tokens[id], v.Types[id] = fmt.Sprintf("[PAD%d]", id), qwenlayout.TokenUnused
		}
	}
	for i, m := range tj.Model.Merges {
		var s string
		if json.Unmarshal(m, &s) == nil {
			v.Merges = append(v.Merges, s)
			continue
		}
		var pair []string
		if err := json.Unmarshal(m, &pair); err != nil || len(pair) != 2 {
			return nil, "", fmt.Errorf("convert: tokenizer.json: merge %d is neither \"a b\" nor [a, b]", i)
		}
		v.Merges = append(v.Merges, pair[0]+" "+pair[1])
	}

	var tc struct {
		ChatTemplate any `json:"chat_template"`
		BOS          any `json:"bos_token"`
		EOS          any `json:"eos_token"`
		PAD          any `json:"pad_token"`
	}
	if tokCfgJSON != nil {
		if err := json.Unmarshal(tokCfgJSON, &tc); err != nil {
			return nil, "", fmt.Errorf("convert: tokenizer_config.json: %w", err)
		}
	}
	byName := func(t any) int {
		if m, ok := t.(map[string]any); ok {
			t = m["content"]
		}
		s, ok := t.(string)
		if !ok {
			return -1
		}
		return slices.Index(v.Tokens, s)
	}
	bos, eos, pad := byName(tc.BOS), byName(tc.EOS), byName(tc.PAD)
	if bos < 0 && cfg.BOS != nil {
		bos = *cfg.BOS
	}
	if eos < 0 {
		switch e := cfg.EOS.(type) {
		case float64:
			eos = int(e)
		case []any:
			if f, ok := firstNumber(e); ok {
				eos = f
			}
		}
	}
	switch {
	case eos < 0 || eos >= n:
		return nil, "", fmt.Errorf("convert: no end-of-text token (tokenizer_config.json eos_token or config.json eos_token_id; got id %d of %d)", eos, n)
	case bos >= n || pad >= n:
		return nil, "", fmt.Errorf("convert: special token ids (bos %d, pad %d) beyond the %d tokens", bos, pad, n)
	}
	if bos < 0 {
		bos = eos
	}
	if pad < 0 {
		pad = bos
	}
	v.BOS, v.EOS, v.PAD = uint32(bos), uint32(eos), uint32(pad)
	tmpl, _ := tc.ChatTemplate.(string)
	return v, tmpl, nil
}

func firstNumber(list []any) (int, bool) {
	if len(list) == 0 {
		return 0, false
	}
	f, ok := list[0].(float64)
	return int(f), ok
}
