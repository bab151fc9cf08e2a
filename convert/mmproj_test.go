package convert

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

var visionHF = []struct {
	re *regexp.Regexp
	hf string
}{
	{regexp.MustCompile(`^v\.blk\.(\d+)\.ln([12])\.(weight|bias)$`), "visual.blocks.$1.norm$2.$3"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.attn_out\.(weight|bias)$`), "visual.blocks.$1.attn.proj.$2"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_(gate|up|down)\.(weight|bias)$`), "visual.blocks.$1.mlp.${2}_proj.$3"},
	{regexp.MustCompile(`^v\.post_ln\.(weight|bias)$`), "visual.merger.ln_q.$1"},
	{regexp.MustCompile(`^mm\.([02])\.(weight|bias)$`), "visual.merger.mlp.$1.$2"},
}

// exportVision writes a synthetic mmproj's tensors as a Qwen2.5-VL
// checkpoint's visual.* tensors (fused qkv, Conv3D patch embedding) and
// the vision_config they need.
func exportVision(t *testing.T, path, dir string) map[string]any {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals := func(name string) []float32 {
		v, err := f.Tensor(name).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	u := func(k string) int64 { v, _ := f.Uint("clip.vision." + k); return int64(v) }
	W, depth, p := u("embedding_length"), u("block_count"), u("patch_size")
	var data []safetensors.Data
	for _, tt := range f.Tensors {
		for _, m := range visionHF {
			if m.re.MatchString(tt.Name) {
				shape := slices.Clone(tt.Dims)
				slices.Reverse(shape)
				data = append(data, safetensors.Data{Name: m.re.ReplaceAllString(tt.Name, m.hf), DType: safetensors.F32, Shape: shape, Values: vals(tt.Name)})
			}
		}
	}
	for n := range depth {
		pre := "v.blk." + itoa(n) + ".attn_"
		w := append(append(vals(pre+"q.weight"), vals(pre+"k.weight")...), vals(pre+"v.weight")...)
		b := append(append(vals(pre+"q.bias"), vals(pre+"k.bias")...), vals(pre+"v.bias")...)
		data = append(data,
			safetensors.Data{Name: "visual.blocks." + itoa(n) + ".attn.qkv.weight", DType: safetensors.F32, Shape: []int64{3 * W, W}, Values: w},
			safetensors.Data{Name: "visual.blocks." + itoa(n) + ".attn.qkv.bias", DType: safetensors.F32, Shape: []int64{3 * W}, Values: b})
	}
	k0, k1 := vals("v.patch_embd.weight"), vals("v.patch_embd.weight.1")
	conv := make([]float32, 0, 2*len(k0))
	for o := range W {
		for c := range int64(3) {
			blk := (o*3 + c) * p * p
			conv = append(conv, k0[blk:blk+p*p]...)
			conv = append(conv, k1[blk:blk+p*p]...)
		}
	}
	data = append(data, safetensors.Data{Name: "visual.patch_embed.proj.weight", DType: safetensors.F32, Shape: []int64{W, 3, 2, p, p}, Values: conv})
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), data, nil); err != nil {
		t.Fatal(err)
	}
	mean, _ := f.Floats("clip.vision.image_mean")
	std, _ := f.Floats("clip.vision.image_std")
	writeJSON(t, filepath.Join(dir, "preprocessor_config.json"), map[string]any{"image_mean": mean, "image_std": std})
	wa := u("n_wa_pattern")
	return map[string]any{"depth": depth, "hidden_size": W, "intermediate_size": u("feed_forward_length"), "num_heads": u("attention.head_count"),
		"patch_size": p, "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": u("projection_dim"),
		"fullatt_block_indexes": []int64{wa - 1, 2*wa - 1}}
}

func itoa(n int64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestConvertMMProjRoundTrip: a synthetic mmproj exported as a checkpoint's
// vision tower converts back to identical tensors, and the engine embeds an
// image bit-identically with either file.
func TestConvertMMProjRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := synth.Preset("tiny")
	lm, mm, err := synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "hf")
	os.MkdirAll(ck, 0o755)
	vision := exportVision(t, mm, ck)
	writeJSON(t, filepath.Join(ck, "config.json"), map[string]any{"model_type": "qwen2_5_vl", "hidden_size": 64, "vision_config": vision})
	out := filepath.Join(dir, "mmproj-converted.gguf")
	if err := ConvertMMProj(ck, out, gguf.TypeF32); err != nil {
		t.Fatal(err)
	}
	a, _ := gguf.Open(mm)
	defer a.Close()
	b, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, ta := range a.Tensors {
		tb := b.Tensor(ta.Name)
		if tb == nil || !slices.Equal(tb.Dims, ta.Dims) || !slices.Equal(tb.Data, ta.Data) {
			t.Errorf("%s differs after the round trip", ta.Name)
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, 70, 56))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.Set(3, 3, color.White)
	var pngb bytes.Buffer
	png.Encode(&pngb, img)
	embed := func(mmproj string) []float32 {
		e, err := engine.New(engine.Config{Model: lm, MMProj: mmproj})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		r, err := e.Embed(t.Context(), engine.Request{Inputs: []engine.Input{engine.ImageInput(pngb.Bytes())}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Embeddings[0].Vector
	}
	if !slices.Equal(embed(mm), embed(out)) {
		t.Error("the converted vision tower embeds differently")
	}
	if err := ConvertMMProj(t.TempDir(), out, gguf.TypeF32); err == nil {
		t.Error("a directory without a checkpoint converted")
	}
}

// TestConvertMVProj: jina-v4's multi_vector_projector becomes the mvproj
// side-car the engine loads, and multi-vector output works with it.
func TestConvertMVProj(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := synth.Preset("tiny")
	lm := filepath.Join(dir, "lm.gguf")
	if err := synth.WriteLM(lm, cfg); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "hf")
	os.MkdirAll(ck, 0o755)
	const in, outDim = 64, 16
	w := make([]float32, outDim*in)
	for i := range w {
		w[i] = float32(i%11-5) / 32
	}
	bias := make([]float32, outDim)
	bias[3] = 0.5
	safetensors.Write(filepath.Join(ck, "model.safetensors"), []safetensors.Data{
		{Name: "multi_vector_projector.weight", DType: safetensors.BF16, Shape: []int64{outDim, in}, Values: w},
		{Name: "multi_vector_projector.bias", DType: safetensors.F32, Shape: []int64{outDim}, Values: bias},
	}, nil)
	mv := filepath.Join(dir, "mvproj.gguf")
	if err := ConvertMVProj(ck, mv, nil, "retrieval"); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Model: lm, MVProj: mv})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Info().MultivectorDim != outDim {
		t.Fatalf("multi-vector width %d", e.Info().MultivectorDim)
	}
	r, err := e.Embed(t.Context(), engine.Request{Inputs: []engine.Input{engine.TextInput("late interaction")}, Multivector: true})
	if err != nil || len(r.Embeddings[0].Multi) == 0 || len(r.Embeddings[0].Multi[0]) != outDim {
		t.Fatalf("multi-vector output: %v", err)
	}
	if err := ConvertMVProj(t.TempDir(), mv, nil, ""); err == nil {
		t.Error("a directory without a checkpoint converted")
	}
}
