package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/tokenizer"
)

func init() {
	register(&command{
		name:    "tokenize",
		summary: "token ids of texts with a model's tokenizer",
		run:     runTokenize,
	})
}

func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", "--model LM.gguf [--special=BOOL] [--nfc=BOOL] [--json] TEXT...", stderr)
	model := fs.String("model", "", "GGUF file holding the tokenizer (the language model)")
	special := fs.Bool("special", true, "special-token texts such as <|im_start|> become their ids, as in the server and the reference tokenizer; false reads them as plain text")
	nfc := fs.Bool("nfc", true, "normalize text to NFC like the Hugging Face tokenizer; false gives llama.cpp's ids")
	asJSON := fs.Bool("json", false, "print one JSON object per text: text, ids, tokens")
	texts, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *model == "" {
		return usageError(fs, stderr, "--model is required")
	}
	if len(texts) == 0 {
		return usageError(fs, stderr, "give at least one TEXT")
	}
	f, err := gguf.Open(*model)
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{DisableNFC: !*nfc})
	if err != nil {
		return fmt.Errorf("%s: %w", *model, err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, text := range texts {
		ids := tok.Encode(text, *special)
		if *asJSON {
			out := struct {
				Text   string   `json:"text"`
				IDs    []int32  `json:"ids"`
				Tokens []string `json:"tokens"`
			}{Text: text, IDs: ids, Tokens: make([]string, len(ids))}
			for i, id := range ids {
				out.Tokens[i] = tok.Token(id)
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
			continue
		}
		line := make([]byte, 0, 7*len(ids)+1)
		for i, id := range ids {
			if i > 0 {
				line = append(line, ' ')
			}
			line = strconv.AppendInt(line, int64(id), 10)
		}
		if _, err := stdout.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}
