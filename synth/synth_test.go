package synth

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/quantize"
	"github.com/vembed/vembed/qwenlayout"
)

func open(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func tiny(t *testing.T) Config {
	t.Helper()
	c, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// q256Config has the shapes of the fixtures' quant/q256 model.
func q256Config(t *testing.T) Config {
	c := tiny(t)
	c.Name = "synthetic-qwen2.5-vl-q256"
	c.LM.Hidden, c.LM.FFN = 256, 256
	c.LM.MRoPE = [4]int32{8, 12, 12, 0}
	return c
}

// valueEqual reports whether two metadata keys differ only where a
// synthetic file is allowed to: the model name and the learned merges and
// tokens (their count and types must still agree).
var freeValues = map[string]bool{
	"general.name":          true,
	"tokenizer.ggml.tokens": true,
	"tokenizer.ggml.merges": true,
}

// compareStructure checks that got has the keys (same order, same GGUF
// value types), and the tensors (same order, names, ne and types) of want;
// values too when values is set, except the free ones.
func compareStructure(t *testing.T, got, want *gguf.File, values bool) {
	t.Helper()
	if len(got.KVs) != len(want.KVs) {
		t.Errorf("%d metadata keys, fixture has %d", len(got.KVs), len(want.KVs))
	}
	for i := range min(len(got.KVs), len(want.KVs)) {
		g, w := got.KVs[i], want.KVs[i]
		if g.Key != w.Key {
			t.Errorf("key %d: %q, fixture %q", i, g.Key, w.Key)
			continue
		}
		if g.Value.Type() != w.Value.Type() || g.Value.ElemType() != w.Value.ElemType() || g.Value.Len() != w.Value.Len() {
			t.Errorf("key %q: type %v/%v len %d, fixture %v/%v len %d", g.Key,
				g.Value.Type(), g.Value.ElemType(), g.Value.Len(), w.Value.Type(), w.Value.ElemType(), w.Value.Len())
			continue
		}
		if values && !freeValues[g.Key] && !reflect.DeepEqual(g.Value.Interface(), w.Value.Interface()) {
			t.Errorf("key %q = %v, fixture %v", g.Key, g.Value, w.Value)
		}
	}
	if len(got.Tensors) != len(want.Tensors) {
		t.Errorf("%d tensors, fixture has %d", len(got.Tensors), len(want.Tensors))
	}
	for i := range min(len(got.Tensors), len(want.Tensors)) {
		g, w := got.Tensors[i], want.Tensors[i]
		if g.Name != w.Name || g.Type != w.Type || !reflect.DeepEqual(g.Dims, w.Dims) || g.Offset != w.Offset {
			t.Errorf("tensor %d: %s %s %v @%d, fixture %s %s %v @%d", i,
				g.Name, g.Type, g.Dims, g.Offset, w.Name, w.Type, w.Dims, w.Offset)
		}
	}
}

func TestFixtureParityTiny(t *testing.T) {
	dir := fixtures.Dir(t, "model")
	c := tiny(t)
	out := t.TempDir()
	lm, mm, err := WritePair(out, c)
	if err != nil {
		t.Fatal(err)
	}
	mv := filepath.Join(out, c.MVProjFileName())
	if err := WriteMVProj(mv, c); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ got, want string }{
		{lm, "qwen25vl-tiny-sv-lm-F32.gguf"},
		{mm, "mmproj-qwen25vl-tiny-sv-F32.gguf"},
		{mv, "mvproj-tiny-sv-F32.gguf"},
	} {
		t.Run(p.want, func(t *testing.T) {
			compareStructure(t, open(t, p.got), open(t, filepath.Join(dir, p.want)), true)
		})
	}
}

// TestQ256Types writes the LM with the shapes of the fixtures' q256 model in
// every type. Each file must match llama-quantize --pure's output of the
// same type (keys, value types and values but the free ones, tensor types,
// shapes and offsets), and every matrix, dequantized, must be near the F32
// file's.
func TestQ256Types(t *testing.T) {
	// Bounds on the RMS error relative to the RMS of N(0,σ) weights, from
	// each format's step: F16 keeps 11 significant bits (2^-11/√3 ≈ 3e-4),
	// BF16 8 bits (≈ 2e-3); Q8_0 steps by amax/127 with amax ≈ 2.5σ over 32
	// values (rms ≈ 0.0057); 6-bit Q6_K ≈ 4× that; 5-bit types ≈ 0.045; the
	// 4-bit types step by about a sixteenth of a 5σ range (rms ≈ 0.09σ); 3-bit
	// Q3_K about twice that and 2-bit Q2_K four times. Each bound is about
	// twice the worst error measured over the matrices (F16 2.1e-4, BF16
	// 1.7e-3, Q8_0 0.0054, Q6_K 0.018, Q5_* ≤ 0.043, 4-bit ≤ 0.086, Q3_K
	// 0.15, Q2_K 0.30).
	bound := map[string]float64{
		"F32": 0, "F16": 6e-4, "BF16": 4e-3, "Q8_0": 0.012, "Q6_K": 0.04,
		"Q5_0": 0.08, "Q5_1": 0.08, "Q5_K": 0.08,
		"Q4_0": 0.16, "Q4_1": 0.16, "Q4_K": 0.16, "IQ4_NL": 0.16, "IQ4_XS": 0.16, "Q4_K_M": 0.16,
		"Q3_K": 0.32, "Q2_K": 0.6,
	}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.gguf")
	if err := WriteLM(ref, q256Config(t)); err != nil {
		t.Fatal(err)
	}
	rf := open(t, ref)
	short := map[string]bool{"F32": true, "F16": true, "Q8_0": true, "Q4_K": true, "Q4_K_M": true}
	for typ, b := range bound {
		t.Run(typ, func(t *testing.T) {
			if testing.Short() && !short[typ] {
				t.Skip("slow encoder; runs without -short")
			}
			c := q256Config(t)
			c.LMType = typ
			path := filepath.Join(dir, c.LMFileName())
			if err := WriteLM(path, c); err != nil {
				t.Fatal(err)
			}
			got := open(t, path)
			roundTrip(t, got, rf, b)
			if typ != "Q4_K_M" {
				t.Run("fixture", func(t *testing.T) {
					want := open(t, filepath.Join(fixtures.Dir(t, "quant"), "q256-"+typ+".gguf"))
					compareQuantFixture(t, got, want, typ)
				})
			}
		})
	}
}

// compareQuantFixture compares a q256 file with the fixture of its type.
// Block types are laid out as llama-quantize writes them and compared in
// order. F16 and BF16 files normally come from the converter (whose layout
// is F32's) while these fixtures were written by llama-quantize: compared by
// name.
func compareQuantFixture(t *testing.T, got, want *gguf.File, typ string) {
	if typ == "F32" || strings.Contains(typ, "_") {
		compareStructure(t, got, want, true)
		return
	}
	for _, w := range want.KVs {
		g, ok := got.Lookup(w.Key)
		switch {
		case !ok:
			t.Errorf("key %q missing", w.Key)
		case g.Type() != w.Value.Type() || g.ElemType() != w.Value.ElemType():
			t.Errorf("key %q: %v/%v, fixture %v/%v", w.Key, g.Type(), g.ElemType(), w.Value.Type(), w.Value.ElemType())
		case !freeValues[w.Key] && !reflect.DeepEqual(g.Interface(), w.Value.Interface()):
			t.Errorf("key %q = %v, fixture %v", w.Key, g, w.Value)
		}
	}
	if len(got.KVs) != len(want.KVs) {
		t.Errorf("%d keys, fixture %d", len(got.KVs), len(want.KVs))
	}
	for _, w := range want.Tensors {
		g := got.Tensor(w.Name)
		if g == nil {
			t.Errorf("tensor %q missing", w.Name)
			continue
		}
		if g.Type != w.Type || !reflect.DeepEqual(g.Dims, w.Dims) {
			t.Errorf("tensor %s: %s %v, fixture %s %v", w.Name, g.Type, g.Dims, w.Type, w.Dims)
		}
	}
}

func mustUint(t *testing.T, f *gguf.File, key string) uint64 {
	t.Helper()
	v, ok := f.Lookup(key)
	if !ok {
		t.Fatalf("key %q missing", key)
	}
	u, err := v.AsUint()
	if err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
	return u
}

// TestReadersAccept checks the files against the gguf package's model
// views, for both projector layouts.
func TestReadersAccept(t *testing.T) {
	for _, name := range []string{"tiny", "tiny-qwen2vl"} {
		t.Run(name, func(t *testing.T) {
			c, err := Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			lm, mm, err := WritePair(t.TempDir(), c)
			if err != nil {
				t.Fatal(err)
			}
			lf, mf := open(t, lm), open(t, mm)
			lc, err := lf.LMConfig()
			if err != nil {
				t.Fatal(err)
			}
			if lc.EmbeddingLength != c.LM.Hidden || lc.BlockCount != c.LM.Layers || lc.HeadCountKV != c.LM.KVHeads {
				t.Errorf("LM config %+v does not match %+v", lc, c.LM)
			}
			vc, err := mf.VisionConfig()
			if err != nil {
				t.Fatal(err)
			}
			if vc.ProjectorType != c.Projector || vc.EmbeddingLength != c.Vision.Width || vc.ProjectionDim != c.LM.Hidden {
				t.Errorf("vision config %+v does not match %+v", vc, c.Vision)
			}
			wantFFN := c.Vision.FFN
			if c.Projector == qwenlayout.ProjectorQwen2VL {
				wantFFN = c.LM.Hidden // the converter's quirk
				if mf.Tensor("v.blk.0.ln1.bias") == nil || mf.Tensor("v.blk.0.ffn_gate.weight") != nil {
					t.Error("Qwen2-VL blocks need LayerNorm biases and no gate")
				}
			}
			if vc.FeedForwardLength != wantFFN {
				t.Errorf("feed_forward_length %d, want %d", vc.FeedForwardLength, wantFFN)
			}
			if up := mf.Tensor("v.blk.0.ffn_up.weight"); up == nil || up.Dims[1] != int64(c.Vision.FFN) {
				t.Errorf("ffn_up does not carry the MLP width %d", c.Vision.FFN)
			}
			td, err := lf.TokenizerData()
			if err != nil {
				t.Fatal(err)
			}
			if td.Tokens[td.BOS] != "<|endoftext|>" || td.Tokens[td.EOS] != "<|im_end|>" || td.AddBOS {
				t.Errorf("special tokens: bos %q eos %q add_bos %v", td.Tokens[td.BOS], td.Tokens[td.EOS], td.AddBOS)
			}
		})
	}
}

// TestWriterParity rebuilds a synthetic file with gguf.Writer from what
// gguf.Open read: both encoders must produce the same bytes.
func TestWriterParity(t *testing.T) {
	c := tiny(t)
	c.LMType = "F16"
	lm, mm, err := WritePair(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{lm, mm} {
		f := open(t, path)
		w := gguf.NewWriter()
		for _, p := range f.KVs {
			w.Add(p.Key, p.Value)
		}
		for _, tn := range f.Tensors {
			if err := w.AddTensor(tn.Name, tn.Type, tn.Dims, tn.Data); err != nil {
				t.Fatal(err)
			}
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), orig) {
			t.Errorf("%s: gguf.Writer gives %d bytes, synth %d, not identical", filepath.Base(path), b.Len(), len(orig))
		}
	}
}

func TestDeterminism(t *testing.T) {
	c := tiny(t)
	c.LMType = "Q4_K_M"
	dir := t.TempDir()
	write := func(name string, c Config) []byte {
		p := filepath.Join(dir, name)
		if err := WriteLM(p, c); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := write("a.gguf", c)
	c.Workers = 5
	if b := write("b.gguf", c); !bytes.Equal(a, b) {
		t.Error("same seed, different worker count: files differ")
	}
	c.Workers = 1
	if b := write("c.gguf", c); !bytes.Equal(a, b) {
		t.Error("same seed, one worker: files differ")
	}
	c.Seed++
	if b := write("d.gguf", c); bytes.Equal(a, b) || len(a) != len(b) {
		t.Error("another seed must change the weights and nothing else")
	}
}

// relRMS is the RMS of a-b relative to the RMS of b.
func relRMS(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

// roundTrip compares every tensor of f, dequantized, with the F32 file ref
// of the same seed: 1-D tensors must be identical F32, matrices within the
// relative RMS error bound.
func roundTrip(t *testing.T, f, ref *gguf.File, bound float64) {
	t.Helper()
	for _, rt := range ref.Tensors {
		qt := f.Tensor(rt.Name)
		if qt == nil {
			t.Errorf("tensor %s missing", rt.Name)
			continue
		}
		want, err := rt.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		got, err := qt.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(rt.Dims) == 1 {
			if qt.Type != gguf.TypeF32 || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: 1-D tensors must stay F32 and identical", rt.Name)
			}
			continue
		}
		if e := relRMS(got, want); !(e <= bound) {
			t.Errorf("%s as %s: relative RMS error %.4g > %.3g", rt.Name, qt.Type, e, bound)
		}
	}
}

// TestValues checks the drawn distributions: weights N(0, Std²), norms near 1.
func TestValues(t *testing.T) {
	c := tiny(t)
	lm, _, err := WritePair(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, lm)
	stats := func(name string) (mean, std float64) {
		v, err := f.Tensor(name).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			mean += float64(x)
		}
		mean /= float64(len(v))
		for _, x := range v {
			std += (float64(x) - mean) * (float64(x) - mean)
		}
		return mean, math.Sqrt(std / float64(len(v)))
	}
	// token_embd has 32768 values: the sample mean's standard error is
	// 0.02/√32768 ≈ 1.1e-4 and the sample std's ≈ 0.02/√65536 ≈ 8e-5; the
	// bounds are about 5 standard errors.
	if m, s := stats("token_embd.weight"); math.Abs(m) > 6e-4 || math.Abs(s-0.02) > 5e-4 {
		t.Errorf("token_embd mean %g std %g, want 0 and 0.02", m, s)
	}
	// 64 values: standard error of the mean 0.0025.
	if m, _ := stats("blk.0.attn_norm.weight"); math.Abs(m-1) > 0.0125 {
		t.Errorf("norm weight mean %g, want about 1", m)
	}
}

func TestTypePlan(t *testing.T) {
	c, err := Preset("jina-v4")
	if err != nil {
		t.Fatal(err)
	}
	c.LMType, c.MMProjType = "Q4_K_M", "Q8_0"
	lm, err := c.LMLayout(nil)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]gguf.Type{}
	for _, ts := range lm.Tensors {
		types[ts.Name] = ts.Type
	}
	// use_more_bits for 36 layers: 0-3, 31-35 and every third from 6.
	more := map[int]bool{}
	for _, i := range []int{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35} {
		more[i] = true
	}
	for i := range 36 {
		want := gguf.TypeQ4_K
		if more[i] {
			want = gguf.TypeQ6_K
		}
		for _, n := range []string{"attn_v", "ffn_down"} {
			if got := types[fmt.Sprintf("blk.%d.%s.weight", i, n)]; got != want {
				t.Errorf("blk.%d.%s: %s, want %s", i, n, got, want)
			}
		}
		if got := types[fmt.Sprintf("blk.%d.attn_q.weight", i)]; got != gguf.TypeQ4_K {
			t.Errorf("blk.%d.attn_q: %s", i, got)
		}
	}
	if types["token_embd.weight"] != gguf.TypeQ6_K || types["output_norm.weight"] != gguf.TypeF32 {
		t.Errorf("token_embd %s output_norm %s, want Q6_K and F32", types["token_embd.weight"], types["output_norm.weight"])
	}
	c.LM.Untied = true
	un, err := c.LMLayout(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range un.Tensors {
		types[ts.Name] = ts.Type
	}
	if un.Tensors[0].Name != "output.weight" || types["output.weight"] != gguf.TypeQ6_K || types["token_embd.weight"] != gguf.TypeQ4_K {
		t.Errorf("untied: first %s, output %s, token_embd %s; want output.weight first, Q6_K, Q4_K",
			un.Tensors[0].Name, types["output.weight"], types["token_embd.weight"])
	}
	mm, err := c.MMProjLayout()
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range mm.Tensors {
		want := gguf.TypeQ8_0
		switch {
		case len(ts.NE) == 1, strings.HasPrefix(ts.Name, "v.patch_embd"):
			want = gguf.TypeF32
		case strings.HasSuffix(ts.Name, "ffn_down.weight"): // 3420 values per row: no 32-blocks
			want = gguf.TypeF16
		}
		if ts.Type != want {
			t.Errorf("%s %v: %s, want %s", ts.Name, ts.NE, ts.Type, want)
		}
	}
	// Rows that fit no block of the chosen type fall back as llama-quantize does.
	for _, tc := range []struct {
		typ  string
		nx   int64
		want gguf.Type
	}{
		{"Q4_K", 64, gguf.TypeQ5_0}, {"Q6_K", 64, gguf.TypeQ8_0}, {"IQ4_XS", 96, gguf.TypeIQ4_NL},
		{"Q4_K", 3420, gguf.TypeF16}, {"Q8_0", 14, gguf.TypeF16}, {"Q4_K", 512, gguf.TypeQ4_K},
	} {
		s, err := ParseTypeSpec(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Pick(quantize.RoleOther, tc.nx, 0, 1); got != tc.want {
			t.Errorf("%s with rows of %d: %s, want %s", tc.typ, tc.nx, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"heads":     func(c *Config) { c.LM.Heads = 3 },
		"kv":        func(c *Config) { c.LM.KVHeads = 3 },
		"mrope":     func(c *Config) { c.LM.MRoPE = [4]int32{2, 3, 2, 0} },
		"huge":      func(c *Config) { c.LM.Vocab = 1 << 40 },
		"zero":      func(c *Config) { c.Vision.Blocks = 0 },
		"projector": func(c *Config) { c.Projector = "ldp" },
		"type":      func(c *Config) { c.LMType = "Q9_9" },
		"std":       func(c *Config) { c.Std = float32(math.NaN()) },
		"vocab":     func(c *Config) { c.LM.Vocab = 300 },
		"wa":        func(c *Config) { c.Vision.NWAPattern = 0 },
	} {
		c := tiny(t)
		mod(&c)
		if _, _, err := WritePair(t.TempDir(), c); err == nil {
			t.Errorf("%s: bad configuration accepted", name)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
	c := tiny(t)
	c.MVProj.Type = "Q4_K"
	if err := WriteMVProj(filepath.Join(t.TempDir(), "mv.gguf"), c); err == nil {
		t.Error("quantized mvproj accepted")
	}
}

func TestVocabFrom(t *testing.T) {
	dir := fixtures.Dir(t, "tokenizer")
	src := filepath.Join(dir, "qwen25-vocab.gguf")
	c := tiny(t)
	c.VocabFrom = src
	if err := WriteLM(filepath.Join(t.TempDir(), "x.gguf"), c); err == nil {
		t.Error("vocabulary size mismatch accepted")
	}
	c.LM.Vocab = 151936
	c.LM.Hidden, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 16, 1, 1, 16
	c.LM.MRoPE = [4]int32{2, 3, 3, 0}
	c.LM.Layers = 1
	p := filepath.Join(t.TempDir(), "real-vocab.gguf")
	if err := WriteLM(p, c); err != nil {
		t.Fatal(err)
	}
	got, want := open(t, p), open(t, src)
	for _, w := range want.KVs {
		if !strings.HasPrefix(w.Key, "tokenizer.") {
			continue
		}
		g, ok := got.Lookup(w.Key)
		if !ok || g.Type() != w.Value.Type() || !reflect.DeepEqual(g.Interface(), w.Value.Interface()) {
			t.Errorf("key %q not copied", w.Key)
		}
	}
	if d := got.Tensor("token_embd.weight").Dims; d[1] != 151936 {
		t.Errorf("token_embd %v", d)
	}
}

// TestTinyFallbacks writes the tiny pair in K and IQ types whose 256-value
// blocks do not fit its rows, so every matrix takes llama-quantize's
// fallback type.
func TestTinyFallbacks(t *testing.T) {
	c := tiny(t)
	c.LMType, c.MMProjType = "IQ4_XS", "Q4_K"
	lm, mm, err := WritePair(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]gguf.Type{lm: gguf.TypeIQ4_NL, mm: gguf.TypeQ5_0} {
		f := open(t, path)
		for _, tn := range f.Tensors {
			w := want
			if len(tn.Dims) == 1 || strings.HasPrefix(tn.Name, "v.patch_embd") {
				w = gguf.TypeF32
			}
			if tn.Type != w {
				t.Errorf("%s %v: %s, want %s", tn.Name, tn.Dims, tn.Type, w)
			}
			if _, err := tn.Float32s(); err != nil {
				t.Error(err)
			}
		}
	}
}
