package heads

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestPooling(t *testing.T) {
	h := []float32{
		1, 2, 3,
		3, 4, 5,
		5, 9, -1,
	}
	if got := MeanPool(h, 3, 0, 3); got[0] != 3 || got[1] != 5 || got[2] != 7.0/3 {
		t.Errorf("MeanPool all = %v", got)
	}
	if got := MeanPool(h, 3, 1, 2); got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Errorf("MeanPool [1,2) = %v", got)
	}
	last := LastToken(h, 3)
	if last[0] != 5 || last[1] != 9 || last[2] != -1 {
		t.Errorf("LastToken = %v", last)
	}
	last[0] = 100
	if h[6] != 5 {
		t.Error("LastToken aliases the hidden states")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MeanPool of rows outside the matrix did not panic")
			}
		}()
		MeanPool(h, 3, 2, 4)
	}()
}

func TestNormalizeTruncate(t *testing.T) {
	v := []float32{3, 4, 0, 12}
	Normalize(v)
	if !near(norm(v), 1, 1e-7) || !near(float64(v[0]), 3.0/13, 1e-7) {
		t.Errorf("Normalize = %v", v)
	}
	z := []float32{0, 0}
	Normalize(z)
	if z[0] != 0 || z[1] != 0 {
		t.Errorf("Normalize of zero = %v", z)
	}
	tr, err := Truncate(v, 2)
	if err != nil {
		t.Fatal(err)
	}
	// (3, 4)/13 re-normalized is (0.6, 0.8).
	if len(tr) != 2 || !near(float64(tr[0]), 0.6, 1e-7) || !near(float64(tr[1]), 0.8, 1e-7) {
		t.Errorf("Truncate(2) = %v", tr)
	}
	if !near(float64(v[0]), 3.0/13, 1e-7) {
		t.Error("Truncate modified its input")
	}
	for _, k := range []int{0, -1, 5} {
		if _, err := Truncate(v, k); err == nil {
			t.Errorf("Truncate(%d) of 4 values succeeded", k)
		}
	}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// writeMVProj writes a projector from in to out values with W[o][i] =
// (o+1)·0.01·(i+1) and bias o·0.1, plus the given metadata.
func writeMVProj(t *testing.T, in, out int, meta map[string]any) string {
	t.Helper()
	w := make([]float32, in*out)
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			w[o*in+i] = float32(o+1) * 0.01 * float32(i+1)
		}
	}
	b := make([]float32, out)
	for o := range b {
		b[o] = float32(o) * 0.1
	}
	gw := gguf.NewWriter()
	gw.Add("general.architecture", "mvproj")
	for k, v := range meta {
		gw.Add(k, v)
	}
	if err := gw.AddTensor("mvproj.weight", gguf.TypeF32, []int64{int64(in), int64(out)}, f32Bytes(w)); err != nil {
		t.Fatal(err)
	}
	if err := gw.AddTensor("mvproj.bias", gguf.TypeF32, []int64{int64(out)}, f32Bytes(b)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mv.gguf")
	if err := gw.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMultiVector(t *testing.T) {
	const in, out, n = 8, 128, 3
	p, err := LoadMultiVector(writeMVProj(t, in, out, map[string]any{
		"mvproj.input_dim": uint32(in), "mvproj.output_dim": uint32(out), "mvproj.task": "retrieval",
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.InputDim != in || p.OutputDim != out || !p.Normalize || p.Task != "retrieval" {
		t.Fatalf("projector %+v", p)
	}
	hidden := make([]float32, n*in)
	for i := range hidden {
		hidden[i] = float32(i%5) - 2
	}
	vs := p.Project(hidden, n)
	if len(vs) != n {
		t.Fatalf("%d vectors, want %d", len(vs), n)
	}
	for r, v := range vs {
		if len(v) != out || !near(norm(v), 1, 1e-6) {
			t.Fatalf("row %d: %d values of norm %v", r, len(v), norm(v))
		}
		// Unnormalized y[o] = 0.01(o+1)·Σ_i (i+1)x_i + 0.1·o.
		var s float64
		for i, x := range hidden[r*in : (r+1)*in] {
			s += float64(i+1) * float64(x)
		}
		y := make([]float32, out)
		for o := range y {
			y[o] = float32(0.01*float64(o+1)*s + 0.1*float64(o))
		}
		Normalize(y)
		for o := range y {
			if !near(float64(v[o]), float64(y[o]), 1e-6) {
				t.Fatalf("row %d value %d: %v, want %v", r, o, v[o], y[o])
			}
		}
	}
}

func TestMultiVectorErrors(t *testing.T) {
	_, err := LoadMultiVector(writeMVProj(t, 8, 16, map[string]any{"mvproj.output_dim": uint32(128)}))
	if err == nil || !strings.Contains(err.Error(), "output_dim") {
		t.Errorf("metadata/shape mismatch: err = %v", err)
	}
	gw := gguf.NewWriter()
	gw.Add("general.architecture", "qwen2vl")
	path := filepath.Join(t.TempDir(), "none.gguf")
	if err := gw.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMultiVector(path); err == nil || !strings.Contains(err.Error(), "mvproj.weight") {
		t.Errorf("file without projector: err = %v", err)
	}
	if _, err := LoadMultiVector(filepath.Join(t.TempDir(), "absent.gguf")); err == nil {
		t.Error("absent file: no error")
	}
	p, err := LoadMultiVector(writeMVProj(t, 4, 2, map[string]any{"mvproj.normalize": false}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Without normalization: y = [0.01·10·x... ] for x = 1: Σ(i+1) = 10.
	v := p.Project([]float32{1, 1, 1, 1}, 1)[0]
	if p.Normalize || !near(float64(v[0]), 0.1, 1e-6) || !near(float64(v[1]), 0.3, 1e-6) {
		t.Errorf("unnormalized projection = %v (normalize %v)", v, p.Normalize)
	}
}
