package gguf

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// quantIndex is the part of quant/index.json the tests use.
type quantIndex struct {
	Files map[string]quantFile `json:"files"`
}

type quantFile struct {
	GGUF        string `json:"gguf"`
	Size        int64  `json:"size"`
	Listing     string `json:"listing"`
	Dequantized map[string]struct {
		File   string  `json:"file"`
		Tensor string  `json:"tensor"`
		Ne     []int64 `json:"ne"`
	} `json:"dequantized"`
}

// listing is the structure gguf-py reported for a file.
type listing struct {
	FileSize          int64  `json:"file_size"`
	Version           uint32 `json:"gguf_version"`
	Alignment         int    `json:"alignment"`
	DataSectionOffset int64  `json:"data_section_offset"`
	Metadata          []struct {
		Key      string            `json:"key"`
		Type     string            `json:"type"`
		ElemType string            `json:"elem_type"`
		Count    int               `json:"count"`
		Value    json.RawMessage   `json:"value"`
		First8   []json.RawMessage `json:"first_8"`
		Last8    []json.RawMessage `json:"last_8"`
	} `json:"metadata"`
	Tensors []struct {
		Name       string  `json:"name"`
		Type       string  `json:"type"`
		TypeID     uint32  `json:"type_id"`
		Ne         []int64 `json:"ne"`
		NElements  int64   `json:"n_elements"`
		NBytes     int64   `json:"n_bytes"`
		Offset     int64   `json:"offset"`
		FileOffset int64   `json:"file_offset"`
	} `json:"tensors"`
}

func loadQuantIndex(t *testing.T) (string, quantIndex) {
	dir := fixtures.Dir(t, "quant")
	var idx quantIndex
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &idx)
	if len(idx.Files) < 15 {
		t.Fatalf("index lists %d files, want 15", len(idx.Files))
	}
	return dir, idx
}

// sameJSONValue compares one scalar metadata value (or array element) with
// its JSON form. FLOAT32 values were written as the exact decimal of the
// float32 widened to float64, so they compare exactly.
func sameJSONValue(t *testing.T, key string, v Value, raw json.RawMessage) {
	t.Helper()
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	var got any
	switch v.Type() {
	case ValueString:
		got, _ = v.AsString()
	case ValueBool:
		got, _ = v.AsBool()
	default:
		got, _ = v.AsFloat()
	}
	if got != want {
		t.Errorf("metadata %s = %v, listing says %v", key, got, want)
	}
}

// forEachQuantFile opens every quant fixture file in a subtest.
func forEachQuantFile(t *testing.T, fn func(t *testing.T, dir string, f *File, fi quantFile)) {
	dir, idx := loadQuantIndex(t)
	for name, fi := range idx.Files {
		t.Run(name, func(t *testing.T) {
			f, err := Open(filepath.Join(dir, fi.GGUF))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fn(t, dir, f, fi)
		})
	}
}

func TestFixtureListings(t *testing.T) {
	forEachQuantFile(t, func(t *testing.T, dir string, f *File, fi quantFile) {
		var l listing
		fixtures.ReadJSON(t, filepath.Join(dir, fi.Listing), &l)
		if f.Version != l.Version || f.Alignment != l.Alignment || f.DataOffset != l.DataSectionOffset {
			t.Errorf("header: v%d align %d data %d; listing v%d align %d data %d",
				f.Version, f.Alignment, f.DataOffset, l.Version, l.Alignment, l.DataSectionOffset)
		}
		if len(f.KVs) != len(l.Metadata) {
			t.Fatalf("%d keys, listing has %d", len(f.KVs), len(l.Metadata))
		}
		for i, m := range l.Metadata {
			kv := f.KVs[i]
			if kv.Key != m.Key || kv.Value.Type().String() != m.Type {
				t.Errorf("key %d: %s %s, listing %s %s", i, kv.Key, kv.Value.Type(), m.Key, m.Type)
				continue
			}
			if kv.Value.Type() != ValueArray {
				sameJSONValue(t, m.Key, kv.Value, m.Value)
				continue
			}
			n := kv.Value.Len()
			if kv.Value.ElemType().String() != m.ElemType || n != m.Count {
				t.Errorf("%s: %d x %s, listing %d x %s", m.Key, n, kv.Value.ElemType(), m.Count, m.ElemType)
				continue
			}
			if m.Value != nil {
				var elems []json.RawMessage
				if err := json.Unmarshal(m.Value, &elems); err != nil {
					t.Fatal(err)
				}
				for j, e := range elems {
					sameJSONValue(t, m.Key, kv.Value.Index(j), e)
				}
			} else {
				for j, e := range m.First8 {
					sameJSONValue(t, m.Key, kv.Value.Index(j), e)
				}
				for j, e := range m.Last8 {
					sameJSONValue(t, m.Key, kv.Value.Index(n-len(m.Last8)+j), e)
				}
			}
		}
		if len(f.Tensors) != len(l.Tensors) {
			t.Fatalf("%d tensors, listing has %d", len(f.Tensors), len(l.Tensors))
		}
		for i, lt := range l.Tensors {
			ft := f.Tensors[i]
			if ft.Name != lt.Name || uint32(ft.Type) != lt.TypeID || ft.Type.String() != lt.Type ||
				ft.NumElements() != lt.NElements || int64(len(ft.Data)) != lt.NBytes ||
				ft.Offset != lt.Offset || f.DataOffset+ft.Offset != lt.FileOffset || !equalDims(ft.Dims, lt.Ne) {
				t.Errorf("tensor %d: %s %s %v off %d %d bytes; listing %+v", i, ft.Name, ft.Type, ft.Dims, ft.Offset, len(ft.Data), lt)
			}
		}
	})
}

func equalDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFixtureDequantize checks every dumped tensor bit for bit: ggml's
// dequantizers are exact float32 formulas, so there is no tolerance.
func TestFixtureDequantize(t *testing.T) {
	forEachQuantFile(t, func(t *testing.T, dir string, f *File, fi quantFile) {
		if len(fi.Dequantized) != 3 {
			t.Errorf("%d dumped tensors, want 3", len(fi.Dequantized))
		}
		for _, d := range fi.Dequantized {
			tt := f.Tensor(d.Tensor)
			if tt == nil {
				t.Fatalf("tensor %s missing", d.Tensor)
			}
			want := fixtures.ReadF32File(t, filepath.Join(dir, d.File))
			got, err := tt.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, want %d", d.Tensor, len(got), len(want))
			}
			bad := 0
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					if bad < 3 {
						t.Errorf("%s[%d] = %g, want %g", d.Tensor, i, got[i], want[i])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d values differ", d.Tensor, bad, len(got))
			}
		}
	})
}

// TestFixtureOtherFiles opens the tokenizer and model fixtures and reads
// their typed views.
func TestFixtureOtherFiles(t *testing.T) {
	tok := filepath.Join(fixtures.Dir(t, "tokenizer"), "qwen25-vocab.gguf")
	f, err := Open(tok)
	if err != nil {
		t.Fatal(err)
	}
	td, err := f.TokenizerData()
	if err != nil {
		t.Fatal(err)
	}
	if len(td.Tokens) != 151936 || len(td.Merges) != 151387 || td.Pre != "qwen2" || td.AddBOS ||
		td.Tokens[151643] != "<|endoftext|>" || td.TokenTypes[151643] != 3 {
		t.Errorf("vocabulary: %d tokens, %d merges, pre %q, add_bos %v, token 151643 %q",
			len(td.Tokens), len(td.Merges), td.Pre, td.AddBOS, td.Tokens[151643])
	}
	f.Close()

	dir := fixtures.Dir(t, "model")
	lm, err := Open(filepath.Join(dir, "qwen25vl-tiny-sv-lm-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	c, err := lm.LMConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.EmbeddingLength != 64 || c.BlockCount != 2 || c.HeadCount != 4 || c.HeadCountKV != 2 ||
		c.KeyLength != 16 || c.FeedForwardLength != 128 || c.RopeSections != [4]int{2, 3, 3, 0} {
		t.Errorf("LM config %+v", c)
	}
	for _, tt := range lm.Tensors {
		if _, err := tt.Float32s(); err != nil {
			t.Error(err)
		}
	}
	mm, err := Open(filepath.Join(dir, "mmproj-qwen25vl-tiny-sv-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer mm.Close()
	v, err := mm.VisionConfig()
	if err != nil {
		t.Fatal(err)
	}
	if v.ProjectorType != "qwen2.5vl_merger" || v.EmbeddingLength != 32 || v.BlockCount != 4 ||
		v.HeadCount != 2 || v.FeedForwardLength != 64 || v.WAPattern != 4 || !v.UseSilu || v.ProjectionDim != 64 {
		t.Errorf("vision config %+v", v)
	}
	mv, err := Open(filepath.Join(dir, "mvproj-tiny-sv-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer mv.Close()
	if mv.Tensor("mvproj.weight") == nil {
		t.Error("mvproj.weight missing")
	}
}

// TestFixtureRewrite writes each fixture file's metadata and tensors back
// with Writer: the quantized files come from llama-quantize (ggml's C
// writer), so byte equality shows the Writer lays files out exactly as
// llama.cpp does.
func TestFixtureRewrite(t *testing.T) {
	forEachQuantFile(t, func(t *testing.T, dir string, f *File, fi quantFile) {
		w := NewWriter()
		for _, kv := range f.KVs {
			w.Add(kv.Key, kv.Value)
		}
		for _, tt := range f.Tensors {
			if err := w.AddTensor(tt.Name, tt.Type, tt.Dims, tt.Data); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(filepath.Join(dir, fi.GGUF))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), orig) {
			t.Errorf("rewritten file (%d bytes) differs from the original (%d bytes)", buf.Len(), len(orig))
		}
	})
}
