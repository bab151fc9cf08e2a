package tokenizer

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vembed/vembed/internal/fixtures"
)

// Sentences of the benchmark corpus: prose in several scripts, code,
// numbers, emoji and white-space runs.
var corpusSentences = []string{
	"The quick brown fox jumps over the lazy dog while 42 llamas watch from the hill.",
	"Retrieval systems rank passages by cosine similarity; it's fast, and they're accurate.",
	"海滩上美丽的日落，让人心旷神怡。我们明天再来这里看看吧。",
	"浜辺に沈む美しい夕日を見ながら、コーヒーを飲みました。",
	"한국어 텍스트도 잘 처리되어야 합니다. 정말 그렇습니다!",
	"Привет мир! Как дела? Всё хорошо, спасибо.",
	"مرحبا بالعالم، هذا نص تجريبي باللغة العربية.",
	"नमस्ते दुनिया, यह एक परीक्षण वाक्य है।",
	"Γειά σου Κόσμε — Cửa Việt — Ünïcödé façade naïve café.",
	"func (t *Tokenizer) Encode(text string) []int32 {\n\treturn t.AppendEncode(nil, text)\n}\n",
	"def f(x):\n    return x ** 2  # square\n\n\tprint(f(3.14159))\n",
	"for (int i = 0; i < n; ++i) { sum += a[i] * 1e-10; }   \n",
	"<div class=\"a\">&nbsp;</div> https://example.com/path/to?query=1&x=y#frag",
	"🚀🦙 launch day! 👨‍👩‍👧‍👦 family 👍🏽 ❤️ ✅ done 🇯🇵",
	"Numbers: 1,000,000 and 12:30pm, ½ cup, ① ② ③, ٣٤٥ and १२३.",
	"    indented line with trailing spaces    \n\n\n",
}

// benchCorpus returns about n bytes of sentences in a fixed random order.
func benchCorpus(n int) string {
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(corpusSentences[rng.IntN(len(corpusSentences))])
		b.WriteByte(" \n"[rng.IntN(2)])
	}
	return b.String()
}

// reportCPU adds "cpu-MB/s", the bytes processed per second of processor
// time of the whole process (all cores), to a benchmark that processed
// bytes per iteration from the moment start was taken.
func reportCPU(b *testing.B, start time.Duration, bytes int64) {
	if used := cpuTime() - start; used > 0 && start > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/used.Seconds()/1e6, "cpu-MB/s")
	}
}

// benchTokenizer uses the real vocabulary when present (the figure that
// matters), else a hand-made one.
func benchTokenizer(b *testing.B, opts Options) *Tokenizer {
	v := qwenVocabOrHand(b)
	return mustNew(b, v, opts)
}

func qwenVocabOrHand(tb testing.TB) Vocab {
	if _, ok := fixtures.Root(); ok {
		qwenTokenizer(tb, Options{}) // loads qwenVocab
		return qwenVocab.v
	}
	return handVocab([]string{" |t", "h|e", " t|he", "a|n", "i|n", "e|r"})
}

// BenchmarkEncode reports MB/s of encoding the mixed corpus in 4 KiB
// documents: from a warm word cache (the steady state of a server), with
// no cache at all (every word merged), and on all cores.
func BenchmarkEncode(b *testing.B) {
	corpus := benchCorpus(1 << 20)
	var docs []string
	for s := corpus; len(s) > 0; {
		n := min(4096, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) { // keep every document valid UTF-8
			n--
		}
		docs = append(docs, s[:n])
		s = s[n:]
	}
	run := func(b *testing.B, tok *Tokenizer, parallel bool) {
		for _, d := range docs { // warm the cache
			tok.Encode(d, true)
		}
		b.SetBytes(int64(len(corpus)))
		b.ResetTimer()
		start := cpuTime()
		if !parallel {
			for b.Loop() {
				for _, d := range docs {
					tok.Encode(d, true)
				}
			}
		} else {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					for _, d := range docs {
						tok.Encode(d, true)
					}
				}
			})
		}
		reportCPU(b, start, int64(len(corpus)))
	}
	b.Run("cached", func(b *testing.B) { run(b, benchTokenizer(b, Options{}), false) })
	b.Run("nocache", func(b *testing.B) { run(b, benchTokenizer(b, Options{CacheWords: -1}), false) })
	b.Run("nocache-nfcoff", func(b *testing.B) { run(b, benchTokenizer(b, Options{CacheWords: -1, DisableNFC: true}), false) })
	b.Run("cached-parallel", func(b *testing.B) { run(b, benchTokenizer(b, Options{}), true) })
	b.Run("nocache-parallel", func(b *testing.B) { run(b, benchTokenizer(b, Options{CacheWords: -1}), true) })
}

// BenchmarkSplit is the pre-tokenizer alone.
func BenchmarkSplit(b *testing.B) {
	initClasses()
	corpus := benchCorpus(1 << 20)
	b.SetBytes(int64(len(corpus)))
	start := cpuTime()
	for b.Loop() {
		for i := 0; i < len(corpus); {
			i = nextWord(corpus, i, false)
		}
	}
	reportCPU(b, start, int64(len(corpus)))
}

// BenchmarkLongWord merges single words of growing length: the time per
// byte stays flat when merging is O(n log n), and would grow linearly with
// the length if it were quadratic.
func BenchmarkLongWord(b *testing.B) {
	tok := benchTokenizer(b, Options{CacheWords: -1})
	rng := rand.New(rand.NewPCG(1, 2))
	letters := "abcdefghijklmnopqrstuvwxyz"
	for _, n := range []int{1 << 8, 1 << 12, 1 << 16} {
		w := make([]byte, n)
		for i := range w {
			w[i] = letters[rng.IntN(len(letters))]
		}
		word := string(w)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			start := cpuTime()
			for b.Loop() {
				tok.Encode(word, false)
			}
			reportCPU(b, start, int64(n))
		})
	}
}

// BenchmarkNew is the cost of building the tokenizer from its vocabulary.
func BenchmarkNew(b *testing.B) {
	v := qwenVocabOrHand(b)
	for b.Loop() {
		mustNew(b, v, Options{})
	}
}
