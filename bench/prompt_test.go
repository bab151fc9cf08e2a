package bench

import (
	"testing"

	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/tokenizer"
)

// TestTextOfTokens checks that the generated texts have exactly the asked
// prompt length under the engine's tokenizer and the model's prompt (jina-v4
// "Query: ", Qwen3-VL-Embedding's instruction chat), over lengths that need
// the fillers (a word overshooting by one or more tokens).
func TestTextOfTokens(t *testing.T) {
	for _, tc := range []struct {
		preset   string
		min      int
		tokenize func(tok *tokenizer.Tokenizer, s string) int
	}{
		{"tiny", 5, func(tok *tokenizer.Tokenizer, s string) int { return len(tok.Encode("Query: "+s, true)) }},
		{"tiny-qwen3vl", 40, func(tok *tokenizer.Tokenizer, s string) int {
			const pre = "<|im_start|>system\nRepresent the user's input.<|im_end|>\n<|im_start|>user\n"
			return len(tok.Encode(pre+s+"<|im_end|>\n<|im_start|>assistant\n", true))
		}},
	} {
		cfg, err := synth.Preset(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		lm, _, err := synth.WritePair(t.TempDir(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := lmPrompter(lm)
		if err != nil {
			t.Fatal(err)
		}
		for n := tc.min; n <= tc.min+65; n++ {
			s, err := textOfTokens(pr, n, uint64(n))
			if err != nil {
				t.Fatalf("%s, %d tokens: %v", tc.preset, n, err)
			}
			if k := tc.tokenize(pr.tok, s); k != n {
				t.Errorf("%s, %d tokens: the text %q tokenizes to %d", tc.preset, n, s, k)
			}
		}
		if _, err := textOfTokens(pr, 1, 0); err == nil {
			t.Errorf("%s: a 1-token text (shorter than the prompt around it) gave no error", tc.preset)
		}
	}
}
