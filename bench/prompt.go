package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/tokenizer"
)

// prompter counts the prompt tokens of a text input as the engine builds
// its prompt: the LM's tokenizer and recipe, the request defaults (no
// task, no instruction).
type prompter struct {
	tok  *tokenizer.Tokenizer
	rc   recipe.Recipe
	task recipe.Task
}

// lmPrompter loads the tokenizer and recipe the engine uses, from the LM
// GGUF.
func lmPrompter(path string) (*prompter, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := &prompter{}
	if p.tok, err = tokenizer.FromGGUF(f, tokenizer.Options{}); err != nil {
		return nil, err
	}
	if p.rc, err = recipe.Select(f); err != nil {
		return nil, err
	}
	if p.task, err = p.rc.Task(""); err != nil {
		return nil, err
	}
	return p, nil
}

// count returns the prompt length of text s.
func (p *prompter) count(s string) (int, error) {
	pr, err := p.rc.Prompt(p.tok, p.task, []tokenizer.Part{{Text: s}})
	if err != nil {
		return 0, err
	}
	return len(pr.IDs), nil
}

// benchWords are common English words; texts are random sequences of them,
// like prose to the tokenizer.
var benchWords = strings.Fields(`the of and to in is was for that with as on by at from
his her they which this have are were not but one all new more their first also after
time year two who people can only over such into other some than many most these city
water world system under between during state three where house number school music
river small light power early great line game story paper model image north field`)

// fillers are short texts, tried in order, that complete a prompt to its
// exact length when the next word would overshoot it.
var fillers = []string{" a", " I", ".", ",", "a", "1"}

// textOfTokens returns a text whose default prompt (for jina-v4 the
// retrieval query, "Query: " included; for Qwen3-VL-Embedding the
// instruction's chat prompt) is exactly n tokens long, built from words
// drawn with seed. The prompt is re-tokenized as a whole after each
// addition, since byte-level BPE may merge a word with its neighbours.
func textOfTokens(p *prompter, n int, seed uint64) (string, error) {
	count := p.count
	rng := rand.New(rand.NewPCG(seed, 7))
	var sb strings.Builder
	// No baseline from the empty text: a recipe may stand in for it
	// (Qwen3-VL writes NULL), so the first word is taken at any length
	// that fits.
	have := 0
	for have < n {
		grew := false
		cands := append([]string{" " + benchWords[rng.IntN(len(benchWords))]}, fillers...)
		for _, add := range cands {
			if sb.Len() == 0 {
				add = strings.TrimPrefix(add, " ") // the prompt's text starts here
			}
			k, err := count(sb.String() + add)
			if err != nil {
				return "", err
			}
			if k > have && k <= n {
				sb.WriteString(add)
				have, grew = k, true
				break
			}
		}
		switch {
		case !grew && sb.Len() == 0:
			return "", fmt.Errorf("text of %d tokens: the prompt around a one-word text is longer", n)
		case !grew:
			return "", fmt.Errorf("text of %d tokens: stuck at %d tokens", n, have)
		}
	}
	return sb.String(), nil
}
