package qwenvl

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model/internal/modeltest"
	"github.com/vembed/vembed/synth"
)

func synthFiles(t *testing.T, preset string, edit func(*synth.Config)) (lm, mm string) {
	t.Helper()
	return modeltest.SynthPair(t, preset, "", "", edit)
}

// TestPatchEmbeddingFlat checks that a v.patch_embd.weight_flat tensor (the
// Conv3d kernel viewed as width×1176) replaces the two per-frame kernels
// with the same result, in F32 and F16. The flat tensor is built here
// element by element from the Conv3d index formula, independently of the
// loader's block copy.
func TestPatchEmbeddingFlat(t *testing.T) {
	lm, mm := synthFiles(t, "tiny", nil)
	base, err := Load(lm, mm)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	f, err := gguf.Open(mm)
	if err != nil {
		t.Fatal(err)
	}
	w0, err0 := f.Tensor("v.patch_embd.weight").Float32s()
	w1, err1 := f.Tensor("v.patch_embd.weight.1").Float32s()
	f.Close()
	if err0 != nil || err1 != nil {
		t.Fatal(err0, err1)
	}
	W := base.Info().VisionWidth
	flat := make([]float32, W*1176)
	for o := 0; o < W; o++ {
		for c := 0; c < 3; c++ {
			for tp := 0; tp < 2; tp++ {
				for y := 0; y < 14; y++ {
					for x := 0; x < 14; x++ {
						src := w0
						if tp == 1 {
							src = w1
						}
						flat[o*1176+c*392+tp*196+y*14+x] = src[((o*3+c)*14+y)*14+x]
					}
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	img := []ImageInput{randomImage(r, base, 1, 6, 8)}
	want, err := base.EncodeImages(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16} {
		data := make([]byte, 0, 4*len(flat))
		for _, v := range flat {
			if typ == gguf.TypeF32 {
				data = appendF32(data, v)
			} else {
				data = appendF16(data, v)
			}
		}
		drop := func(tt *gguf.Tensor) *gguf.Tensor {
			if strings.HasPrefix(tt.Name, "v.patch_embd.") {
				return nil
			}
			return tt
		}
		path := modeltest.RewriteGGUF(t, mm, nil, drop, &gguf.Tensor{Name: "v.patch_embd.weight_flat", Type: typ, Dims: []int64{1176, int64(W)}, Data: data})
		m, err := Load(lm, path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.EncodeImages(img)
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		// F32 is the same product; F16 rounds each weight by 2^-11
		// relative, which a few blocks carry to well under 1e-2.
		tol := batchTol
		if typ == gguf.TypeF16 {
			tol = 1e-2
		}
		if c, rel := rowStats(t, got[0], want[0], base.Info().Hidden); rel > tol {
			t.Errorf("weight_flat %s: cos %.9f rel %.3g", typ, c, rel)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	lm, mm := synthFiles(t, "tiny", nil)
	_, wideMM := synthFiles(t, "tiny", func(c *synth.Config) { c.LM.Hidden, c.LM.Heads = 128, 8 })
	reshape := func(name string, dims ...int64) func(*gguf.Tensor) *gguf.Tensor {
		return func(tt *gguf.Tensor) *gguf.Tensor {
			if tt.Name != name {
				return tt
			}
			c := *tt
			c.Dims = dims
			n := int64(4)
			for _, d := range dims {
				n *= d
			}
			c.Data = c.Data[:n]
			return &c
		}
	}
	drop := func(name string) func(*gguf.Tensor) *gguf.Tensor {
		return func(tt *gguf.Tensor) *gguf.Tensor {
			if tt.Name == name {
				return nil
			}
			return tt
		}
	}
	cases := []struct {
		name, lm, mm, want string
	}{
		{"absent file", filepath.Join(t.TempDir(), "none.gguf"), "", "none.gguf"},
		{"mmproj as LM", mm, "", "architecture"},
		{"LM as mmproj", lm, lm, "mmproj"},
		{"pair mismatch", lm, wideMM, "matching pair"},
		{"LM shape", modeltest.RewriteGGUF(t, lm, nil, reshape("blk.1.attn_k.weight", 64, 16)), "", `"blk.1.attn_k.weight" has shape`},
		{"LM missing tensor", modeltest.RewriteGGUF(t, lm, nil, drop("blk.1.ffn_up.weight")), "", `"blk.1.ffn_up.weight" is missing`},
		{"vision shape", lm, modeltest.RewriteGGUF(t, mm, nil, reshape("v.blk.2.ffn_down.weight", 64, 16)), `"v.blk.2.ffn_down.weight" has shape`},
		{"vision missing", lm, modeltest.RewriteGGUF(t, mm, nil, drop("v.patch_embd.weight.1")), `"v.patch_embd.weight.1" is missing`},
		{"zero window pattern", lm, modeltest.RewriteGGUF(t, mm, map[string]any{"clip.vision.n_wa_pattern": uint32(0)}, nil), "n_wa_pattern"},
		{"projector", lm, modeltest.RewriteGGUF(t, mm, map[string]any{"clip.projector_type": "mlp"}, nil), "projector"},
	}
	for _, c := range cases {
		m, err := Load(c.lm, c.mm)
		if err == nil {
			m.Close()
			t.Errorf("%s: loaded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %s", c.name, err, c.want)
		}
	}
}

// TestDefaultWindowPattern loads an mmproj written before n_wa_pattern
// existed: Qwen2.5-VL's period of 8 applies.
func TestDefaultWindowPattern(t *testing.T) {
	lm, mm := synthFiles(t, "tiny", nil)
	m, err := Load(lm, modeltest.RewriteGGUF(t, mm, map[string]any{"clip.vision.n_wa_pattern": nil}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i, b := range m.Vision.blocks {
		if b.fullAttn != ((i+1)%8 == 0) {
			t.Errorf("block %d: full attention %v", i, b.fullAttn)
		}
	}
}

func TestTextOnly(t *testing.T) {
	lm, _ := synthFiles(t, "tiny", nil)
	m, err := Load(lm, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Info().HasVision {
		t.Error("text-only model reports vision")
	}
	if _, err := m.EncodeImages([]ImageInput{{}}); err == nil || !strings.Contains(err.Error(), "no vision") {
		t.Errorf("EncodeImages on a text-only model: err = %v", err)
	}
	h, err := m.Forward([]int32{1, 2, 3}, nil)
	if err != nil || len(h) != 3*m.Info().Hidden {
		t.Errorf("Forward: %d values, err %v", len(h), err)
	}
}

func appendF32(b []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

// appendF16 appends v rounded to the nearest IEEE binary16 (ties to even).
func appendF16(b []byte, v float32) []byte {
	sign := uint16(math.Float32bits(v)>>16) & 0x8000
	a := math.Abs(float64(v))
	var h uint16
	switch {
	case a >= 65520:
		h = 0x7c00
	case a < 0x1p-14: // subnormal: whole units of 2^-24
		h = uint16(math.RoundToEven(a * 0x1p24))
	default:
		frac, exp := math.Frexp(a) // a = frac·2^exp, frac in [0.5, 1)
		m := math.RoundToEven(frac * 2048)
		if m == 2048 {
			m, exp = 1024, exp+1
		}
		h = uint16(exp-1+15)<<10 | uint16(m-1024)
	}
	return binary.LittleEndian.AppendUint16(b, sign|h)
}
