package tokenizer

// GMEInstruction is GME-Qwen2-VL's default instruction, which documents
// always get and queries get unless the caller gives one.
const GMEInstruction = "You are a helpful assistant."

// GMEPrompt builds GME-Qwen2-VL's input (gme_inference.py):
//
//	<|im_start|>system\n{instruction}<|im_end|>\n<|im_start|>user\n{images}{texts}<|im_end|>\n<|im_start|>assistant\n<|endoftext|>
//
// with the instruction verbatim ("" for GMEInstruction), the input's images
// (<|vision_start|><|image_pad|>…<|vision_end|>) before its texts whatever
// their order in parts (the reference takes one image and one text), the
// texts joined. Special tokens written in the text or instruction are
// parsed, as the reference's processor does, except the vision tokens,
// which give an error wrapping ErrVisionToken. The input's vector is the
// hidden state of the final <|endoftext|>.
func (t *Tokenizer) GMEPrompt(instruction string, parts []Part) (*Prompt, error) {
	c, err := t.qwen3Chat(parts)
	if err != nil {
		return nil, err
	}
	if instruction == "" {
		instruction = GMEInstruction
	}
	c.turn("system", instruction)
	c.special(imStart)
	c.write("user\n")
	for _, p := range parts {
		if p.ImageTokens > 0 {
			c.flush()
			c.b.image(p.ImageTokens)
		}
	}
	for _, p := range parts {
		if p.ImageTokens == 0 {
			c.text(p)
		}
	}
	c.special(imEnd)
	c.write("\n")
	c.special(imStart)
	c.write("assistant\n")
	c.special(endOfText)
	return c.prompt()
}
