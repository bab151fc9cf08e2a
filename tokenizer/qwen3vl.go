package tokenizer

import (
	"strings"
	"unicode"
)

// Default instructions of the official Qwen3-VL-Embedding and -Reranker
// code.
const (
	Qwen3VLEmbedInstruction  = "Represent the user's input."
	Qwen3VLRerankInstruction = "Given a search query, retrieve relevant candidates that answer the query."
	qwen3VLRerankSystem      = `Judge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be "yes" or "no".`
)

// NormalizeInstruction applies Qwen3-VL-Embedding's rule to an embedding
// instruction: surrounding space is stripped and "." appended unless the
// last character is Unicode punctuation; empty means the default.
func NormalizeInstruction(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return Qwen3VLEmbedInstruction
	}
	r := []rune(s)
	if !unicode.IsPunct(r[len(r)-1]) {
		s += "."
	}
	return s
}

// Qwen3VLEmbedPrompt builds the official Qwen3-VL-Embedding input:
//
//	<|im_start|>system\n{instruction}<|im_end|>\n<|im_start|>user\n{images}{texts}<|im_end|>\n<|im_start|>assistant\n
//
// with the instruction normalized by NormalizeInstruction, every image
// (<|vision_start|><|image_pad|>…<|vision_end|>) before the texts whatever
// their order in parts, the texts joined, and "NULL" for an input with
// neither. Special tokens written in the text or instruction are parsed, as
// the reference's chat template and tokenizer do, except the vision
// tokens, which give an error wrapping ErrVisionToken. The input's vector
// is the last token's hidden state.
func (t *Tokenizer) Qwen3VLEmbedPrompt(instruction string, parts []Part) (*Prompt, error) {
	c, err := t.qwen3Chat(parts)
	if err != nil {
		return nil, err
	}
	c.turn("system", NormalizeInstruction(instruction))
	c.special(imStart)
	c.write("user\n")
	c.items(parts)
	c.special(imEnd)
	c.write("\n")
	c.special(imStart)
	c.write("assistant\n")
	return c.prompt()
}

// Qwen3VLRerankPrompt builds the official Qwen3-VL-Reranker input for one
// (query, document) pair:
//
//	<|im_start|>system\n{judge}<|im_end|>\n<|im_start|>user\n<Instruct>: {instruction}<Query>:{query}\n<Document>:{document}<|im_end|>\n<|im_start|>assistant\n
//
// where query and document are their images then their texts ("NULL" when
// empty) and the instruction (default Qwen3VLRerankInstruction) is used as
// given. The pair's score is read at the last token.
func (t *Tokenizer) Qwen3VLRerankPrompt(instruction string, query, doc []Part) (*Prompt, error) {
	c, err := t.qwen3Chat(append(append([]Part(nil), query...), doc...))
	if err != nil {
		return nil, err
	}
	if instruction == "" {
		instruction = Qwen3VLRerankInstruction
	}
	c.turn("system", qwen3VLRerankSystem)
	c.special(imStart)
	c.write("user\n<Instruct>: " + instruction + "<Query>:")
	c.items(query)
	c.write("\n<Document>:")
	c.items(doc)
	c.special(imEnd)
	c.write("\n")
	c.special(imStart)
	c.write("assistant\n")
	return c.prompt()
}

// chat writes a chat-template rendering: text is gathered and tokenized in
// one piece up to the next special token or image, as the reference
// tokenizes the rendered string (pre-tokenization would split pieces
// differently at their seams).
type chat struct {
	b   *builder
	run Template
}

// qwen3Chat checks parts and returns a chat sized for their images, with
// the prompt kind they make.
func (t *Tokenizer) qwen3Chat(parts []Part) (*chat, error) {
	total, images, texts, err := partCounts(parts)
	if err != nil {
		return nil, err
	}
	c := &chat{b: t.newBuilder(total)}
	switch {
	case images == 0:
		c.b.kind = TextOnly
	case texts == 0:
		c.b.kind = ImageOnly
	default:
		c.b.kind = Interleaved
	}
	return c, nil
}

// write adds text; special tokens in it are parsed, vision tokens refused.
func (c *chat) write(s string) { c.run.Markup(s) }

// text adds a part's text: write's reading, or plain text for a plain part.
func (c *chat) text(p Part) { c.run.Text(p) }

func (c *chat) flush() {
	if len(c.run.s) > 0 {
		c.b.template(&c.run, true)
		c.run = Template{}
	}
}

func (c *chat) special(tok string) {
	c.flush()
	c.b.special(tok)
}

// turn writes a whole message: <|im_start|>role\ncontent<|im_end|>\n.
func (c *chat) turn(role, content string) {
	c.special(imStart)
	c.write(role + "\n" + content)
	c.special(imEnd)
	c.write("\n")
}

// items writes the images of parts, then their texts joined, or "NULL"
// when there are neither: the order of the official Qwen3-VL formatting.
func (c *chat) items(parts []Part) {
	n := 0
	for _, p := range parts {
		if p.ImageTokens > 0 {
			c.flush()
			c.b.image(p.ImageTokens)
			n++
		}
	}
	for _, p := range parts {
		if p.ImageTokens == 0 && p.Text != "" {
			c.text(p)
			n++
		}
	}
	if n == 0 {
		c.write("NULL")
	}
}

func (c *chat) prompt() (*Prompt, error) {
	c.flush()
	return c.b.prompt()
}
