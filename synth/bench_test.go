package synth

import (
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/qwenlayout"
)

func BenchmarkSmallVocab(b *testing.B) {
	for b.Loop() {
		if _, err := SmallVocab(230, 512); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerate measures drawing and encoding one 1024×1024 matrix, per
// storage type; b.SetBytes counts the float32 values produced.
func BenchmarkGenerate(b *testing.B) {
	for _, typ := range []string{"F32", "F16", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS"} {
		b.Run(typ, func(b *testing.B) {
			s, err := ParseTypeSpec(typ)
			if err != nil {
				b.Fatal(err)
			}
			f := &fileSpec{Layout: &qwenlayout.Layout{Tensors: []qwenlayout.TensorLayout{{Name: "w", NE: []int64{1024, 1024}, Type: s.Base}}}, seed: 1, std: 0.02}
			vals := make([]float32, chunkValues)
			c := &chunk{t: &f.Tensors[0], rows: chunkValues / 1024}
			b.SetBytes(4 * chunkValues)
			for b.Loop() {
				if _, err := f.generate(c, vals); err != nil {
					b.Skip(err)
				}
			}
		})
	}
}

// BenchmarkWriteTinyPair measures writing the tiny LM and mmproj, as tests
// and the demo server do on start.
func BenchmarkWriteTinyPair(b *testing.B) {
	c, err := Preset("tiny")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for b.Loop() {
		if _, _, err := WritePair(filepath.Join(dir, "m"), c); err != nil {
			b.Fatal(err)
		}
	}
}
