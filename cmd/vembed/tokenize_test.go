package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"

	"github.com/vembed/vembed/internal/fixtures"
)

func TestTokenizeCommand(t *testing.T) {
	model := filepath.Join(fixtures.Dir(t, "tokenizer"), "qwen25-vocab.gguf")
	tokenize := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append([]string{"tokenize", "--model", model}, args...), &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	// Ids from the fixtures' tokenizer_cases.json.
	// Special-token texts are parsed by default, as the server and the
	// reference tokenizer do (DECISIONS.md §3); --special=false reads them
	// as plain text.
	if got, want := tokenize("--special=false", "Hello world", "<|im_start|>"), "9707 1879\n27 91 318 4906 91 29\n"; got != want {
		t.Errorf("plain: %q, want %q", got, want)
	}
	if got, want := tokenize("abc<|im_end|>def"), "13683 151645 750\n"; got != want {
		t.Errorf("default: %q, want %q", got, want)
	}
	decomposed := "e\u0301t\u00e9"
	if got, want := tokenize("--nfc=false", decomposed), "68 53839 128294\n"; got != want {
		t.Errorf("--nfc=false: %q, want %q", got, want)
	}
	if got, want := tokenize(decomposed), "38783\n"; got != want {
		t.Errorf("NFC: %q, want %q", got, want)
	}
	var rec struct {
		Text   string
		IDs    []int32
		Tokens []string
	}
	if err := json.Unmarshal([]byte(tokenize("--json", "Hello world")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Text != "Hello world" || !slices.Equal(rec.IDs, []int32{9707, 1879}) || !slices.Equal(rec.Tokens, []string{"Hello", "Ġworld"}) {
		t.Errorf("--json: %+v", rec)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"tokenize", "Hello"}, &out, &errOut); code != 2 {
		t.Errorf("missing --model: exit %d, want 2", code)
	}
}

// TestTokenizeAgreesWithServer: a special-token text typed in user text
// (<|im_start|>) is read the same way by vembed tokenize and by the engine
// behind the server (DECISIONS.md §3: as the reference tokenizer, one
// special token), and --special=false reads it as plain text. The demo
// model's prompt adds the same tokens around both texts, so the
// difference of the prompts' token counts is that of the texts'.
func TestTokenizeAgreesWithServer(t *testing.T) {
	var cfg engine.Config
	if err := writeDemoModel(t.TempDir(), &cfg); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	prompt := func(text string) int {
		resp, err := eng.Embed(context.Background(), engine.Request{Inputs: []engine.Input{engine.TextInput(text)}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.PromptTokens
	}
	count := func(args ...string) int {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"tokenize", "--model", cfg.Model}, args...), &out, &errOut); code != 0 {
			t.Fatalf("tokenize %v: exit %d: %s", args, code, errOut.String())
		}
		return len(strings.Fields(out.String()))
	}
	const special, plain = "see <|im_start|> here", "see here"
	cli := count(special) - count(plain)
	if got := prompt(special) - prompt(plain); got != cli {
		t.Errorf("%q: the server counts %d more tokens than %q, vembed tokenize %d", special, got, plain, cli)
	}
	if literal := count("--special=false", special) - count("--special=false", plain); literal == cli {
		t.Errorf("--special=false reads %q as the default does (%d tokens more)", special, literal)
	}
}
