package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
)

// readVocab reads the tokenizer data of a GGUF file.
func readVocab(path string) (Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Vocab{}, err
	}
	defer f.Close()
	return vocabFromGGUF(f)
}

var qwenVocab struct {
	once sync.Once
	v    Vocab
	err  error
}

// qwenTokenizer returns a tokenizer over the real Qwen2.5 vocabulary of the
// fixtures, or skips the test when they are absent.
func qwenTokenizer(t testing.TB, opts Options) *Tokenizer {
	t.Helper()
	dir := fixtures.Dir(t, "tokenizer")
	qwenVocab.once.Do(func() {
		qwenVocab.v, qwenVocab.err = readVocab(filepath.Join(dir, "qwen25-vocab.gguf"))
	})
	if qwenVocab.err != nil {
		t.Fatal(qwenVocab.err)
	}
	tok, err := New(qwenVocab.v, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type tokenizerCase struct {
	ID                string  `json:"id"`
	Text              *string `json:"text"`
	UTF8Hex           string  `json:"utf8_hex"`
	IDs               []int32 `json:"ids"`
	IDsNoParseSpecial []int32 `json:"ids_no_parse_special"`
	IDsAfterNFC       []int32 `json:"ids_after_nfc"`
	NFCChangesText    bool    `json:"nfc_changes_text"`
}

func loadTokenizerCases(t *testing.T) []tokenizerCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "tokenizer"), "tokenizer_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []tokenizerCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("no cases in tokenizer_cases.json")
	}
	return doc.Cases
}

// TestFixtureCases checks every string of tokenizer_cases.json: llama.cpp's
// ids with NFC off (with and without special-token parsing), and Hugging
// Face's (ids_after_nfc where NFC changes the text) with NFC on.
func TestFixtureCases(t *testing.T) {
	cases := loadTokenizerCases(t)
	off := qwenTokenizer(t, Options{DisableNFC: true})
	on := qwenTokenizer(t, Options{})
	var checks, passed int
	check := func(c tokenizerCase, what string, got, want []int32) {
		t.Helper()
		checks++
		if slices.Equal(got, want) {
			passed++
			return
		}
		t.Errorf("%s (%s): got %v, want %v", c.ID, what, got, want)
	}
	for _, c := range cases {
		b, err := hex.DecodeString(c.UTF8Hex)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		s := string(b)
		if c.Text != nil && *c.Text != s {
			t.Fatalf("%s: text and utf8_hex disagree", c.ID)
		}
		check(c, "llama.cpp, NFC off", off.Encode(s, true), c.IDs)
		if c.IDsNoParseSpecial != nil {
			check(c, "llama.cpp, NFC off, no special parsing", off.Encode(s, false), c.IDsNoParseSpecial)
		}
		want := c.IDs
		if c.NFCChangesText {
			if c.IDsAfterNFC == nil {
				t.Fatalf("%s: nfc_changes_text without ids_after_nfc", c.ID)
			}
			want = c.IDsAfterNFC
		}
		check(c, "HF, NFC on", on.Encode(s, true), want)
		if c.Text != nil {
			if got, err := off.Decode(c.IDs); err != nil || got != s {
				t.Errorf("%s: decode of the ids = %q, %v; want the text", c.ID, got, err)
			}
		}
		if c.IDsNoParseSpecial != nil && !c.NFCChangesText {
			check(c, "HF, NFC on, no special parsing", on.Encode(s, false), c.IDsNoParseSpecial)
		}
	}
	t.Logf("%d cases, %d/%d id sequences identical", len(cases), passed, checks)
}

// TestLlamaCppQwen2Pairs runs llama.cpp's own qwen2 tokenizer test
// (parse_special off, no NFC).
func TestLlamaCppQwen2Pairs(t *testing.T) {
	dir := filepath.Join(fixtures.Dir(t, "tokenizer"), "llama.cpp-qwen2-test")
	inp, err := os.ReadFile(filepath.Join(dir, "ggml-vocab-qwen2.gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "ggml-vocab-qwen2.gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	// The input file ends with a separator and the output file with a line
	// break: the last input is the empty string, its ids the empty line.
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	lines := strings.Split(string(out), "\n")
	if len(texts) != len(lines) {
		t.Fatalf("%d inputs, %d output lines", len(texts), len(lines))
	}
	tok := qwenTokenizer(t, Options{DisableNFC: true})
	passed := 0
	for i, text := range texts {
		var want []int32
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("line %d: %v", i, err)
			}
			want = append(want, int32(id))
		}
		got := tok.Encode(text, false)
		if len(got) == 0 && len(want) == 0 || slices.Equal(got, want) {
			passed++
			continue
		}
		t.Errorf("input %d %q: got %v, want %v", i, text, got, want)
	}
	t.Logf("%d/%d llama.cpp qwen2 test pairs identical", passed, len(texts))
}

// TestConcurrentEncode encodes the fixture strings from several goroutines
// through one small shared cache (so shards are cleared while others read)
// and checks every result; run with -race.
func TestConcurrentEncode(t *testing.T) {
	cases := loadTokenizerCases(t)
	tok := qwenTokenizer(t, Options{DisableNFC: true, CacheWords: 64})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := cases[(g*31+i)%len(cases)]
				b, _ := hex.DecodeString(c.UTF8Hex)
				if got := tok.Encode(string(b), true); !slices.Equal(got, c.IDs) {
					errs <- c.ID
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for id := range errs {
		t.Errorf("%s: wrong ids under concurrent use", id)
	}
}
