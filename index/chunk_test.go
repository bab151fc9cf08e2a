package index

import (
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/tokenizer"
)

var (
	demoTokOnce sync.Once
	demoTok     *tokenizer.Tokenizer
	demoTokErr  error
)

// demoCount counts tokens with the demo model's tokenizer (written once
// per test process).
func demoCount(t testing.TB) func(string) int {
	demoTokOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			demoTokErr = err
			return
		}
		files, err := synth.WriteDemo(dir)
		if err != nil {
			demoTokErr = err
			return
		}
		f, err := gguf.Open(files.LM)
		if err != nil {
			demoTokErr = err
			return
		}
		demoTok, demoTokErr = tokenizer.FromGGUF(f, tokenizer.Options{})
	})
	if demoTokErr != nil {
		t.Fatal(demoTokErr)
	}
	return func(s string) int { return len(demoTok.Encode(s, false)) }
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// checkChunks holds Chunk to its rule: every chunk within the limit (a
// lone rune aside), none empty or padded, and no text lost but white
// space.
func checkChunks(t *testing.T, text string, limit int, count func(string) int) []string {
	t.Helper()
	chunks := Chunk(text, limit, count)
	for i, c := range chunks {
		if c == "" || strings.TrimSpace(c) != c {
			t.Fatalf("chunk %d %q is empty or padded", i, c)
		}
		if n := count(c); n > limit && utf8.RuneCountInString(c) > 1 {
			t.Fatalf("chunk %d has %d tokens, over the limit of %d: %q", i, n, limit, c)
		}
	}
	if got, want := stripSpace(strings.Join(chunks, "")), stripSpace(strings.ToValidUTF8(text, "\uFFFD")); got != want {
		t.Fatalf("chunks lose text:\n got %q\nwant %q", got, want)
	}
	return chunks
}

func TestChunk(t *testing.T) {
	count := demoCount(t)
	para := "The first sentence is here. The second one follows it! Does a third? Yes."
	text := para + "\n\n" + para + "\n\n" + strings.Repeat("word ", 200) + "\n\n" + strings.Repeat("x", 500)
	chunks := checkChunks(t, text, 24, count)
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	// A paragraph that fits stays whole; two that fit together are packed.
	whole := checkChunks(t, para+"\n\n"+para, 1000, count)
	if len(whole) != 1 || whole[0] != para+"\n\n"+para {
		t.Fatalf("packing: %q", whole)
	}
	// Sentences are kept whole when a paragraph does not fit.
	n := count(para)
	sent := checkChunks(t, para, n-1, count)
	if len(sent) < 2 || !strings.HasSuffix(sent[0], ".") && !strings.HasSuffix(sent[0], "!") && !strings.HasSuffix(sent[0], "?") {
		t.Fatalf("sentence split: %q", sent)
	}
	checkChunks(t, "日本語の文。二つ目の文！三つ目？", 3, count)
	checkChunks(t, "bad \xff\xfe utf8 \x80 here", 2, count)
	if got := Chunk(" \n\n \t ", 5, count); len(got) != 0 {
		t.Fatalf("white space gave %q", got)
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("Hello world. A second sentence!\n\nNew paragraph with more words than fit.", 4)
	f.Add(strings.Repeat("a", 300), 1)
	f.Add("😀😀😀 ok. ？？", 1)
	f.Add("\xff\xfe\x00 x", 2)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || limit > 64 || len(text) > 4096 {
			t.Skip()
		}
		checkChunks(t, text, limit, demoCount(t))
	})
}
