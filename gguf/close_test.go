package gguf

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOnClose checks that Close runs the registered functions once each,
// the last registered first, before the mapping goes, for a mapped file
// and one from Parse.
func TestOnClose(t *testing.T) {
	data := writeSample(t, 32)
	path := filepath.Join(t.TempDir(), "sample.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	mapped, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*File{mapped, parsed} {
		var order []int
		tensor := f.Tensors[0]
		for i := range 3 {
			f.OnClose(func() {
				// The tensor data is still readable here.
				_ = tensor.Data[len(tensor.Data)-1]
				order = append(order, i)
			})
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(order, []int{2, 1, 0}) {
			t.Errorf("OnClose functions ran as %v, want [2 1 0] once each", order)
		}
	}
}
