package heads_test

import (
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// TestMultiVectorCloseFreesPacked checks that a projector whose weight
// the active tier packed at load gives the packed copy back when its file
// closes (it lives outside the Go heap, so no collection would come for
// it), for a side-car it owns (Close) and one bound in a file the caller
// closes.
func TestMultiVectorCloseFreesPacked(t *testing.T) {
	tier := modeltest.UsePackingTier(t)

	// A Q8_0 weight (the type the VNNI tiers pack) of 128 outputs by 64
	// inputs: per row two blocks of a binary16 scale and 32 codes.
	const in, out = 64, 128
	data := make([]byte, 0, out*2*34)
	for o := 0; o < out; o++ {
		for b := 0; b < in/32; b++ {
			data = append(data, 0x00, 0x24) // 2⁻⁶
			for i := 0; i < 32; i++ {
				data = append(data, byte(int8((o*7+i*3+b)%200-100)))
			}
		}
	}
	gw := gguf.NewWriter()
	gw.Add("general.architecture", "mvproj")
	if err := gw.AddTensor("mvproj.weight", gguf.TypeQ8_0, []int64{in, out}, data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mv.gguf")
	if err := gw.WriteFile(path); err != nil {
		t.Fatal(err)
	}

	hidden := make([]float32, 3*in)
	for i := range hidden {
		hidden[i] = float32(i%9) - 4
	}
	check := func(name string, load func() (*heads.MultiVector, func() error)) {
		before := kernels.PackedBytes()
		p, closeFile := load()
		if loaded := kernels.PackedBytes(); loaded <= before {
			t.Fatalf("%s: loading a Q8_0 projector on %s packed nothing (%d -> %d bytes)", name, tier, before, loaded)
		}
		if vs := p.Project(hidden, 3); len(vs) != 3 || len(vs[0]) != out {
			t.Fatalf("%s: projected %d rows", name, len(vs))
		}
		if err := closeFile(); err != nil {
			t.Fatal(err)
		}
		// Copies of other tests may be collected meanwhile, never added.
		if after := kernels.PackedBytes(); after > before {
			t.Errorf("%s: after closing, %d bytes of packed weights remain, %d before loading", name, after, before)
		}
	}
	check("side-car", func() (*heads.MultiVector, func() error) {
		p, err := heads.LoadMultiVector(path)
		if err != nil {
			t.Fatal(err)
		}
		return p, p.Close
	})
	check("bound", func() (*heads.MultiVector, func() error) {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := heads.MultiVectorFrom(f)
		if err != nil {
			t.Fatal(err)
		}
		return p, f.Close
	})
}
