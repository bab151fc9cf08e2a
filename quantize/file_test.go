package quantize_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/quantize"
	"github.com/vembed/vembed/synth"
)

// wideConfig widens the tiny preset so that every matrix row is a whole
// number of 256-value blocks and the K types really apply.
func wideConfig(t *testing.T, lmType, mmType string) synth.Config {
	t.Helper()
	c, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	c.LM.Hidden, c.LM.Heads, c.LM.KVHeads, c.LM.FFN = 256, 4, 2, 256
	c.LM.MRoPE = [4]int32{8, 12, 12, 0}
	c.Vision.Width, c.Vision.Heads, c.Vision.FFN = 256, 4, 256
	c.LMType, c.MMProjType = lmType, mmType
	return c
}

func open(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func mustSpec(t *testing.T, s string) quantize.Spec {
	t.Helper()
	spec, err := quantize.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestMatchesSynth quantizes synthetic F32 files and compares them tensor by
// tensor with the files synth writes directly in the target encoding: synth
// draws the same float32 values whatever the encoding and encodes them with
// the same rules, so every tensor's type and bytes must be equal.
func TestMatchesSynth(t *testing.T) {
	dir := t.TempDir()
	lm32, mm32, err := synth.WritePair(filepath.Join(dir, "f32"), wideConfig(t, "F32", "F32"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"Q4_K_M", "Q4_K_S", "Q3_K_M", "Q8_0", "Q6_K", "F16", "IQ4_XS"} {
		want, _, err := synth.WritePair(filepath.Join(dir, typ), wideConfig(t, typ, "F32"))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+typ+".gguf")
		rep, err := quantize.File(context.Background(), lm32, out, quantize.Options{Spec: mustSpec(t, typ), Workers: 2})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if rep.Requantized != 0 {
			t.Errorf("%s: %d tensors counted as re-quantized from F32", typ, rep.Requantized)
		}
		compareFiles(t, typ, open(t, want), open(t, out))
	}
	// An mmproj to F16 equals synth's F16 mmproj but for the patch
	// embedding, which the converter keeps in F32 unless the whole file is
	// F16: quantize converts every weight matrix.
	_, want, err := synth.WritePair(filepath.Join(dir, "mmF16"), wideConfig(t, "F32", "F16"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "mm-F16.gguf")
	if _, err := quantize.File(context.Background(), mm32, out, quantize.Options{Spec: mustSpec(t, "F16")}); err != nil {
		t.Fatal(err)
	}
	compareFiles(t, "mmproj F16", open(t, want), open(t, out))
}

func compareFiles(t *testing.T, what string, want, got *gguf.File) {
	t.Helper()
	if len(want.Tensors) != len(got.Tensors) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got.Tensors), len(want.Tensors))
	}
	for _, w := range want.Tensors {
		g := got.Tensor(w.Name)
		switch {
		case g == nil:
			t.Errorf("%s: tensor %s missing", what, w.Name)
		case g.Type != w.Type:
			t.Errorf("%s: %s is %s, want %s", what, w.Name, g.Type, w.Type)
		case !bytes.Equal(g.Data, w.Data):
			t.Errorf("%s: %s: bytes differ", what, w.Name)
		}
	}
	for _, key := range []string{"general.file_type", "general.architecture", "general.name", "tokenizer.ggml.merges"} {
		wv, ok1 := want.Lookup(key)
		gv, ok2 := got.Lookup(key)
		if ok1 != ok2 || (ok1 && wv.String() != gv.String()) {
			t.Errorf("%s: metadata %s = %v, want %v", what, key, gv, wv)
		}
	}
}

// TestRequantize feeds an already quantized file: it is decoded and
// encoded again with a warning, and equal types are copied untouched.
func TestRequantize(t *testing.T) {
	dir := t.TempDir()
	lm, _, err := synth.WritePair(dir, wideConfig(t, "Q8_0", "F16"))
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	out := filepath.Join(dir, "q4.gguf")
	rep, err := quantize.File(context.Background(), lm, out, quantize.Options{
		Spec: mustSpec(t, "Q4_K"), Log: slog.New(slog.NewTextHandler(&logBuf, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requantized == 0 || !strings.Contains(logBuf.String(), "already quantized") {
		t.Errorf("re-quantized %d tensors, log %q: want a warning", rep.Requantized, logBuf.String())
	}
	in, got := open(t, lm), open(t, out)
	w := in.Tensor("blk.0.ffn_up.weight")
	vals, err := w.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want, err := gguf.Quantize(gguf.TypeQ4_K, vals)
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Tensor(w.Name); g.Type != gguf.TypeQ4_K || !bytes.Equal(g.Data, want) {
		t.Errorf("%s: %s, not the Q4_K encoding of the decoded Q8_0 values", w.Name, g.Type)
	}
	// Q8_0 to Q8_0 copies.
	same := filepath.Join(dir, "same.gguf")
	if rep, err = quantize.File(context.Background(), lm, same, quantize.Options{Spec: mustSpec(t, "Q8_0")}); err != nil {
		t.Fatal(err)
	}
	if rep.Requantized != 0 {
		t.Errorf("Q8_0 to Q8_0 re-quantized %d tensors", rep.Requantized)
	}
	compareFiles(t, "Q8_0 copy", in, open(t, same))
}

// TestInterrupted cancels a run: neither the output nor a temporary file
// may remain.
func TestInterrupted(t *testing.T) {
	dir := t.TempDir()
	lm, _, err := synth.WritePair(filepath.Join(dir, "in"), wideConfig(t, "F32", "F32"))
	if err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err = quantize.File(ctx, lm, filepath.Join(outDir, "x.gguf"), quantize.Options{
		Spec:     mustSpec(t, "Q4_K_M"),
		Progress: func(done, total int64) { calls++; cancel() },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 || calls == 0 {
		t.Errorf("after cancel (progress calls %d) the directory holds %v", calls, ents)
	}
	if _, err := quantize.File(context.Background(), lm, lm, quantize.Options{Spec: mustSpec(t, "Q8_0")}); err == nil {
		t.Error("writing over the input: no error")
	}
	if _, err := quantize.File(context.Background(), filepath.Join(dir, "missing.gguf"), filepath.Join(outDir, "y.gguf"), quantize.Options{Spec: mustSpec(t, "Q8_0")}); err == nil {
		t.Error("missing input: no error")
	}
}

// TestVisionPlan checks the kept groups and the fallbacks of an mmproj.
func TestVisionPlan(t *testing.T) {
	dir := t.TempDir()
	_, mm, err := synth.WritePair(dir, wideConfig(t, "F32", "F16"))
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, mm)
	rep, err := quantize.Plan(f, quantize.Options{Spec: mustSpec(t, "Q4_K_M"), Keep: []quantize.Group{quantize.GroupMerger}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Tensors {
		want := gguf.TypeQ4_K
		switch {
		case len(p.Dims) == 1:
			want = gguf.TypeF32
		case strings.HasPrefix(p.Name, "mm."):
			want = gguf.TypeF16 // kept
		case strings.HasPrefix(p.Name, "v.patch_embd"):
			want = gguf.TypeF16 // rows of 14: no block fits
		}
		if p.To != want {
			t.Errorf("%s: %s (%s), want %s", p.Name, p.To, p.Why, want)
		}
	}
	if _, err := quantize.ParseGroups("merger,bogus"); err == nil {
		t.Error("unknown group: no error")
	}
}

// TestQuantizedVisionEmbeds runs a Q8_0 and a Q4_K mmproj, made by File
// from an F16 one, through the engine: their image embeddings stay close to
// the F16 encoder's, and on the avx2-int8 tier their matrices are of types
// the integer kernels multiply.
func TestQuantizedVisionEmbeds(t *testing.T) {
	dir := t.TempDir()
	lm, mm16, err := synth.WritePair(dir, wideConfig(t, "F16", "F16"))
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(112, 84)
	embed := func(mm string) []float32 {
		eng, err := engine.New(engine.Config{Model: lm, MMProj: mm, EmbeddingCacheBytes: -1, EncoderCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		resp, err := eng.Embed(context.Background(), engine.Request{Inputs: []engine.Input{engine.ImageInput(img)}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Embeddings[0].Vector
	}
	ref := embed(mm16)
	for _, c := range []struct {
		typ    string
		want   gguf.Type
		minCos float64
	}{{"Q8_0", gguf.TypeQ8_0, 0.9999}, {"Q4_K", gguf.TypeQ4_K, 0.99}} {
		out := filepath.Join(dir, "mm-"+c.typ+".gguf")
		if _, err := quantize.File(context.Background(), mm16, out, quantize.Options{Spec: mustSpec(t, c.typ)}); err != nil {
			t.Fatal(err)
		}
		f := open(t, out)
		for _, name := range []string{"v.blk.0.attn_q.weight", "v.blk.3.ffn_down.weight"} {
			typ := f.Tensor(name).Type
			if typ != c.want {
				t.Errorf("%s: %s is %s, want %s", c.typ, name, typ, c.want)
			}
			if kernels.Active() == kernels.TierAVX2Int8 && !kernels.QuantizesActivations(typ) {
				t.Errorf("%s: the avx2-int8 tier does not take %s products in integers", c.typ, typ)
			}
		}
		if cos := fixtures.Cosine(ref, embed(out)); cos < c.minCos {
			t.Errorf("%s mmproj: cosine to F16 %.6f, want >= %g", c.typ, cos, c.minCos)
		} else {
			t.Logf("%s mmproj: cosine to F16 %.7f", c.typ, cos)
		}
	}
}

func testImage(w, h int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(r.IntN(256)), uint8(x * 2), uint8(y * 3), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
