package quantize_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/quantize"
	"github.com/vembed/vembed/synth"
)

// FuzzQuantize feeds arbitrary GGUF bytes that parse to the re-encoder for
// a block type, a mix and a float type: it must return or fail cleanly,
// never panic, and what it writes must parse again.
func FuzzQuantize(f *testing.F) {
	dir := f.TempDir()
	c, err := synth.Preset("tiny")
	if err != nil {
		f.Fatal(err)
	}
	c.LMType, c.MMProjType = "F32", "F16"
	c.LM.Layers, c.Vision.Blocks, c.Vision.NWAPattern = 1, 1, 1
	lm, mm, err := synth.WritePair(dir, c)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{lm, mm} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	w := gguf.NewWriter()
	w.Add("general.architecture", "clip")
	w.AddTensor("v.blk.0.attn_q.weight", gguf.TypeQ8_0, []int64{32, 2}, make([]byte, 68))
	w.AddTensor("mm.0.weight", gguf.TypeF16, []int64{0, 3}, nil)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes(), uint8(1))
	specs := []string{"Q4_K", "Q4_K_M", "F16", "Q8_0"}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		var total int64
		for _, tt := range file.Tensors {
			total += tt.NumElements()
		}
		if total > 1<<20 {
			return // keep each run fast
		}
		spec, err := quantize.ParseSpec(specs[int(which)%len(specs)])
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := quantize.Write(context.Background(), file, &out, quantize.Options{Spec: spec}); err != nil {
			return
		}
		if _, err := gguf.Parse(out.Bytes()); err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
	})
}
