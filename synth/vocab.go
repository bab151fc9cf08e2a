package synth

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/vembed/vembed/qwenlayout"
)

// AddedTokens are the 22 Qwen2 / Qwen2.5(-VL) added tokens in id order; in the
// real vocabulary they are ids 151643..151664.
var AddedTokens = []string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>",
	"<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
	"<|quad_start|>", "<|quad_end|>",
	"<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
	"<tool_call>", "</tool_call>",
	"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
	"<|repo_name|>", "<|file_sep|>",
}

// ChatTemplate is the Qwen2-VL chat template the converter stores as
// tokenizer.chat_template. Embedding prompts do not use it; it is written so
// that synthetic files carry the same keys as converted ones.
const ChatTemplate = "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}" +
	"{% for message in messages %}{% if loop.first and message['role'] != 'system' %}" +
	"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}" +
	"<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n" +
	"{% else %}{% for content in message['content'] %}" +
	"{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}" +
	"{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}" +
	"<|vision_start|><|image_pad|><|vision_end|>" +
	"{% elif content['type'] == 'video' or 'video' in content %}" +
	"{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}" +
	"<|vision_start|><|video_pad|><|vision_end|>" +
	"{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}" +
	"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// SmallVocab builds the small Qwen-style vocabulary: the 256 byte tokens,
// nMerges merges learned from the built-in sample text, the 22 added tokens,
// then "[PAD<id>]" fillers up to size ids (UNUSED, as the converter writes
// ids that have no token).
func SmallVocab(nMerges, size int) (*qwenlayout.Vocab, error) {
	if nMerges < 0 {
		return nil, fmt.Errorf("synth: negative merge count %d", nMerges)
	}
	bytesTok, _ := qwenlayout.ByteTokens()
	merges, learned, err := trainedMerges(nMerges)
	if err != nil {
		return nil, err
	}
	tokens := append(slices.Clone(bytesTok), learned...)
	merges = slices.Clone(merges)
	first := len(tokens)
	if need := first + len(AddedTokens); size < need {
		return nil, fmt.Errorf("synth: vocabulary size %d is smaller than the %d tokens it must hold", size, need)
	}
	tokens = append(tokens, AddedTokens...)
	types := make([]int32, size)
	for i := range first {
		types[i] = qwenlayout.TokenNormal
	}
	for i, t := range AddedTokens {
		types[first+i] = qwenlayout.TokenControl
		if !strings.HasPrefix(t, "<|") {
			types[first+i] = qwenlayout.TokenUserDefined
		}
	}
	for id := len(tokens); id < size; id++ {
		tokens = append(tokens, fmt.Sprintf("[PAD%d]", id))
		types[id] = qwenlayout.TokenUnused
	}
	v := &qwenlayout.Vocab{
		Tokens: tokens,
		Types:  types,
		Merges: merges,
		BOS:    uint32(first),
		EOS:    uint32(first + 2),
		PAD:    uint32(first),
	}
	if err := v.Check(); err != nil {
		return nil, err
	}
	return v, nil
}

// smallVocab is the small vocabulary of c. A reranker's also holds "yes"
// and "no" (as normal tokens in its first filler ids, unless the merges
// learned them), the words whose LM head rows its converter keeps.
func (c *Config) smallVocab() (*qwenlayout.Vocab, error) {
	v, err := SmallVocab(c.Merges, c.LM.Vocab)
	if err != nil || c.LM.Pooling != "rank" {
		return v, err
	}
	for _, w := range []string{"yes", "no"} {
		if slices.Contains(v.Tokens, w) {
			continue
		}
		id := slices.Index(v.Types, qwenlayout.TokenUnused)
		if id < 0 {
			return nil, fmt.Errorf("synth: a reranker's vocabulary of %d ids has no room for %q", c.LM.Vocab, w)
		}
		v.Tokens[id], v.Types[id] = w, qwenlayout.TokenNormal
	}
	return v, v.Check()
}

// trained caches learnMerges on the sample text by merge count: training
// is deterministic, and tests and the demo server write many small models.
var trained struct {
	sync.Mutex
	m map[int][2][]string
}

func trainedMerges(n int) (merges, added []string, err error) {
	trained.Lock()
	defer trained.Unlock()
	if r, ok := trained.m[n]; ok {
		return r[0], r[1], nil
	}
	base, byByte := qwenlayout.ByteTokens()
	merges, added, err = learnMerges(sampleText, byByte, base, n)
	if err != nil {
		return nil, nil, err
	}
	if trained.m == nil {
		trained.m = map[int][2][]string{}
	}
	trained.m[n] = [2][]string{merges, added}
	return merges, added, nil
}

// learnMerges trains byte-level BPE on text: words come from a Qwen2-like
// pre-split, and each step merges the most frequent adjacent pair (ties to
// the lexicographically smallest pair, so training is deterministic). Pairs
// whose concatenation is already a token are skipped so that every merge
// adds exactly one new token.
func learnMerges(text string, byByte [256]string, base []string, n int) (merges, added []string, err error) {
	known := make(map[string]bool, len(base)+n)
	for _, t := range base {
		known[t] = true
	}
	counts := map[string]int{}
	for _, w := range preSplit(text) {
		counts[w]++
	}
	type word struct {
		syms  []string
		count int
	}
	words := make([]word, 0, len(counts))
	for w, c := range counts {
		syms := make([]string, 0, len(w))
		for i := 0; i < len(w); i++ {
			syms = append(syms, byByte[w[i]])
		}
		words = append(words, word{syms, c})
	}
	type pair struct{ l, r string }
	for len(merges) < n {
		freq := map[pair]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				p := pair{w.syms[i], w.syms[i+1]}
				if !known[p.l+p.r] {
					freq[p] += w.count
				}
			}
		}
		var best pair
		bestN := 0
		for p, c := range freq {
			if c > bestN || (c == bestN && (p.l < best.l || (p.l == best.l && p.r < best.r))) {
				best, bestN = p, c
			}
		}
		if bestN == 0 {
			return nil, nil, fmt.Errorf("synth: sample text yields only %d merges, %d requested", len(merges), n)
		}
		joined := best.l + best.r
		known[joined] = true
		merges = append(merges, best.l+" "+best.r)
		added = append(added, joined)
		for k := range words {
			s := words[k].syms
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best.l && s[i+1] == best.r {
					out = append(out, joined)
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[k].syms = out
		}
	}
	return merges, added, nil
}

// preSplit cuts text into pre-tokens roughly as the qwen2 pre-tokenizer
// does (letters with one leading non-letter, single digits, punctuation runs
// with an optional leading space, whitespace). It only shapes the training
// statistics; tokenization itself belongs to the tokenizer package.
func preSplit(text string) []string {
	rs := []rune(text)
	var out []string
	isL := func(r rune) bool { return unicode.IsLetter(r) }
	isN := func(r rune) bool { return unicode.IsNumber(r) }
	isS := unicode.IsSpace
	for i := 0; i < len(rs); {
		start := i
		r := rs[i]
		switch {
		case isN(r):
			i++
		case isL(r) || (r != '\r' && r != '\n' && !isN(r) && i+1 < len(rs) && isL(rs[i+1])):
			i++
			for i < len(rs) && isL(rs[i]) {
				i++
			}
		case !isS(r) || (r == ' ' && i+1 < len(rs) && !isS(rs[i+1]) && !isL(rs[i+1]) && !isN(rs[i+1])):
			i++
			for i < len(rs) && !isS(rs[i]) && !isL(rs[i]) && !isN(rs[i]) {
				i++
			}
			for i < len(rs) && (rs[i] == '\r' || rs[i] == '\n') {
				i++
			}
		default:
			for i < len(rs) && isS(rs[i]) {
				i++
			}
			// Leave one trailing space to lead the next word, as \s+(?!\S) does.
			if i < len(rs) && i-start > 1 && rs[i-1] == ' ' {
				i--
			}
		}
		out = append(out, string(rs[start:i]))
	}
	return out
}

// sampleText is the training text of the small vocabulary: a little of
// several scripts, prompt words of the embedding models, code and numbers.
const sampleText = `Query: what is the capital of France?
Passage: Paris is the capital and the largest city of France. The city is known for its museums, its bridges and the river Seine.
Query: how do vision language models read an image?
Passage: A vision encoder cuts the image into patches of fourteen by fourteen pixels, embeds every patch and merges four neighbouring patches into one token for the language model.
Describe the image. The image shows a small red house next to a green tree under a blue sky.
An embedding model turns text and images into vectors; similar documents get similar vectors, so a search engine can rank passages by the cosine of their embeddings.
The quick brown fox jumps over the lazy dog. The dog sleeps in the sun and the fox runs into the forest.
Retrieval, text matching and code search are the tasks of the model; each task has its own adapter.
In 2024 the model was trained on 1.5 billion pairs; it supports 89 languages and images of up to 602112 pixels.
Die Bilder werden in kleine Quadrate zerlegt, und jedes Quadrat wird von dem Modell gelesen. Der Hund und die Katze spielen im Garten.
Le modèle lit le texte et les images ensemble; une requête courte trouve le passage le plus proche. Où est la bibliothèque? Élève naïve, café crème.
El modelo convierte cada imagen en una secuencia de vectores. La búsqueda devuelve los documentos más parecidos a la consulta.
Модель читает текст и изображения. Поиск находит похожие документы по смыслу.
今天天气很好，我们去公园散步。这个模型可以理解图片和文字的内容。
画像とテキストを同じベクトル空間に埋め込むモデルです。検索は速くて正確です。
이 모델은 이미지와 텍스트를 함께 이해합니다.
def embed(texts, images=None):
    """Return one vector per input."""
    vectors = [model.encode(t) for t in texts]
    return [v / norm(v) for v in vectors]

func Embed(ctx context.Context, in []Input) ([][]float32, error) {
	if len(in) == 0 {
		return nil, errors.New("no input")
	}
	return model.Forward(ctx, in)
}
<|im_start|>user
Describe the image.<|im_end|>
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14159 2.71828 -42 +7 50% $19.99 #1 @user (a, b) [x, y] {k: v} a+b=c x*y/z <= >= != == && || -> =>
`
