package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	vals := []float32{1, -2.5, 3.140625, 0, 65504, 1e-5}
	err := Write(filepath.Join(dir, "model.safetensors"), []Data{
		{"b.weight", BF16, []int64{2, 3}, vals},
		{"a.bias", F32, []int64{6}, vals},
		{"c.half", F16, []int64{3, 2}, vals},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := strings.Join(c.Names(), ","); got != "a.bias,b.weight,c.half" {
		t.Fatalf("names %s", got)
	}
	for name, tol := range map[string]float64{"a.bias": 0, "b.weight": 1.0 / 128, "c.half": 1.0 / 1024} {
		_, f, _ := c.Tensor(name)
		got, err := f.Float64(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if d := math.Abs(got[i] - float64(v)); d > tol*math.Abs(float64(v))+1e-7 {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[i], v)
			}
		}
	}
	if _, f, _ := c.Tensor("a.bias"); f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
}

// header builds a file from a header object and data bytes.
func header(t *testing.T, h any, data []byte) []byte {
	j, _ := json.Marshal(h)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(j)))
	b.Write(j)
	b.Write(data)
	return b.Bytes()
}

func TestMalformed(t *testing.T) {
	ok := map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{0, 8}}}
	for name, file := range map[string][]byte{
		"empty":         nil,
		"short length":  {1, 2, 3},
		"huge header":   append(binary.LittleEndian.AppendUint64(nil, 1<<40), '{', '}'),
		"not json":      header(t, nil, nil)[:8],
		"truncated":     header(t, ok, make([]byte, 4)),
		"lying size":    header(t, map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{3}, "data_offsets": []int{0, 8}}}, make([]byte, 8)),
		"unknown dtype": header(t, map[string]any{"x": map[string]any{"dtype": "F8_E9", "shape": []int{2}, "data_offsets": []int{0, 2}}}, make([]byte, 2)),
		"overlap": header(t, map[string]any{
			"x": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{0, 8}},
			"y": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{4, 12}}}, make([]byte, 12)),
		"negative shape": header(t, map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{-1}, "data_offsets": []int{0, 0}}}, nil),
		"overflow shape": header(t, map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int64{1 << 40, 1 << 40}, "data_offsets": []int{0, 0}}}, nil),
	} {
		_, err := Parse(bytes.NewReader(file), int64(len(file)))
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
	f, err := Parse(bytes.NewReader(header(t, map[string]any{"i": map[string]any{"dtype": "I64", "shape": []int{1}, "data_offsets": []int{0, 8}}}, make([]byte, 8))), 8+80)
	if err == nil {
		if _, err := f.Float64("i"); err == nil || !strings.Contains(err.Error(), "I64") {
			t.Errorf("reading an I64 tensor as floats: %v", err)
		}
	}
}

func TestShardedIndex(t *testing.T) {
	dir := t.TempDir()
	Write(filepath.Join(dir, "model-00001-of-00002.safetensors"), []Data{{"a", F32, []int64{1}, []float32{1}}}, nil)
	Write(filepath.Join(dir, "model-00002-of-00002.safetensors"), []Data{{"b", F32, []int64{1}, []float32{2}}}, nil)
	index := func(m map[string]string) {
		b, _ := json.Marshal(map[string]any{"weight_map": m})
		os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), b, 0o644)
	}
	index(map[string]string{"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"})
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, f, ok := c.Tensor("b"); !ok || !strings.HasSuffix(f.Path, "00002-of-00002.safetensors") {
		t.Error("b not found in its shard")
	}
	c.Close()
	index(map[string]string{"a": "model-00001-of-00002.safetensors", "c": "model-00003-of-00003.safetensors"})
	if _, err := OpenCheckpoint(dir); err == nil || !strings.Contains(err.Error(), "model-00003") {
		t.Errorf("missing shard: %v", err)
	}
	index(map[string]string{"b": "model-00001-of-00002.safetensors"})
	if _, err := OpenCheckpoint(dir); err == nil {
		t.Error("a tensor in the wrong shard was accepted")
	}
	index(map[string]string{"a": "../evil.safetensors"})
	if _, err := OpenCheckpoint(dir); err == nil {
		t.Error("a shard outside the directory was accepted")
	}
}

func FuzzHeader(f *testing.F) {
	f.Add(header(&testing.T{}, map[string]any{"x": map[string]any{"dtype": "BF16", "shape": []int{2, 2}, "data_offsets": []int{0, 8}}, "__metadata__": map[string]string{"a": "b"}}, make([]byte, 8)))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := Parse(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for _, n := range sf.Names() {
			sf.Float64(n) // in bounds by construction, never a panic
		}
	})
}
