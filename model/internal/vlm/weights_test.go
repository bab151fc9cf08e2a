package vlm

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// TestBinderPreparesMatrices checks that Matrix prepares a weight for
// products as kernels.Prepare does (packed on the tiers that pack its
// type, its file pages released then) with the same products as the
// unprepared weight, and that View leaves a matrix as stored.
func TestBinderPreparesMatrices(t *testing.T) {
	const rows, cols = 48, 256
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	data, err := gguf.Quantize(gguf.TypeQ8_0, vals)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	w.Add("general.architecture", "test")
	for _, name := range []string{"a", "b"} {
		if err := w.AddTensor(name, gguf.TypeQ8_0, []int64{cols, rows}, data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "w.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	oracle, err := kernels.NewMatrix(gguf.TypeQ8_0, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	kernels.Prepare(oracle)
	b := &Binder{F: f, File: "test"}
	m, v := b.Matrix("a", rows, cols), b.View("b", rows, cols)
	if b.Err != nil {
		t.Fatal(b.Err)
	}
	if m.Packed() != oracle.Packed() || v.Packed() {
		t.Fatalf("Matrix packed %v (kernels.Prepare: %v), View packed %v", m.Packed(), oracle.Packed(), v.Packed())
	}
	t.Logf("tier %s: packed %v", kernels.Active(), m.Packed())
	const n = 7
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	got, want := make([]float32, n*rows), make([]float32, n*rows)
	kernels.MatMul(got, x, n, m, nil)
	kernels.MatMul(want, x, n, v, nil)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("product %d: prepared %v, as stored %v", i, got[i], want[i])
		}
	}
}
