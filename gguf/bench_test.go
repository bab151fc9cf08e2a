package gguf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkDequantize decodes 64 Ki values per iteration; the reported
// throughput is bytes of float32 output.
func BenchmarkDequantize(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	dst := make([]float32, len(x))
	for _, typ := range quantTypes {
		q, err := Quantize(typ, x)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(dst)))
			for b.Loop() {
				if err := Dequantize(typ, q, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQuantize encodes 64 Ki values per iteration (throughput in bytes
// of float32 input).
func BenchmarkQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, typ := range quantTypes {
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if _, err := Quantize(typ, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseVocabulary parses a file with a vocabulary of the real
// Qwen2 size: 151936 tokens and as many merges.
func BenchmarkParseVocabulary(b *testing.B) {
	tokens := make([]string, 151936)
	types := make([]int32, len(tokens))
	for i := range tokens {
		tokens[i] = fmt.Sprintf("tok%d", i)
		types[i] = 1
	}
	w := NewWriter()
	w.Add("tokenizer.ggml.tokens", tokens)
	w.Add("tokenizer.ggml.token_type", types)
	w.Add("tokenizer.ggml.merges", tokens)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
