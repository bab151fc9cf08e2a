package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

// TestColQwenRelease converts a synthetic ColQwen2.5 laid out as the
// releases are (a base directory and an adapter directory beside it),
// with the adapter's keys in transformers 4.52's module names and LoRA
// pairs on the vision tower: converting the adapter directory finds the
// base, and the tower's pairs are merged into the mmproj (the fused qkv's
// thirds included), the decoder's into the LM.
func TestColQwenRelease(t *testing.T) {
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	base, ad := filepath.Join(root, "colqwen-tiny-base"), filepath.Join(root, "colqwen-tiny-v1")
	if err := synth.WriteHF(base, cfg, synth.HFOptions{Layout: qwenlayout.LayoutColQwen25, AdapterDir: ad, AdapterNewNames: true, AdapterVision: true}); err != nil {
		t.Fatal(err)
	}
	res, err := Convert(context.Background(), ad, t.TempDir(), Options{Type: "F32", MMProjType: "F32"})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(res.LMs[0]) != "colqwen-tiny-v1-F32.gguf" {
		t.Errorf("LM %s, want the adapter's name", res.LMs[0])
	}
	ck, err := safetensors.OpenCheckpoint(base)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	lora, err := safetensors.Open(filepath.Join(ad, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer lora.Close()
	read := func(get func(string) ([]float64, error), name string) []float64 {
		v, err := get(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	// merged is W + (32/32)·B·A, the synthetic adapter's rank and alpha.
	merged := func(ckName, module string) ([]float64, int) {
		info, f, ok := ck.Tensor(ckName)
		if !ok {
			t.Fatalf("no %s", ckName)
		}
		w := read(f.Float64, ckName)
		A := read(lora.Float64, "base_model.model."+module+".lora_A.weight")
		B := read(lora.Float64, "base_model.model."+module+".lora_B.weight")
		rows, cols, r := int(info.Shape[0]), int(info.Shape[1]), 32
		for i := range rows {
			for j := range cols {
				var d float64
				for k := range r {
					d += B[i*r+k] * A[k*cols+j]
				}
				w[i*cols+j] += d
			}
		}
		return w, cols
	}
	check := func(file, tensor string, want []float64) {
		f, err := gguf.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		tt := f.Tensor(tensor)
		if tt == nil || len(tt.Data) != 4*len(want) {
			t.Fatalf("%s: missing or of the wrong size", tensor)
		}
		for i, w := range want {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(tt.Data[4*i:])); got != float32(w) {
				t.Fatalf("%s[%d] = %v, want the merged %v", tensor, i, got, float32(w))
			}
		}
	}
	out, _ := merged("visual.blocks.1.attn.proj.weight", "model.visual.blocks.1.attn.proj")
	check(res.MMProj, "v.blk.1.attn_out.weight", out)
	qkv, _ := merged("visual.blocks.0.attn.qkv.weight", "model.visual.blocks.0.attn.qkv")
	third := len(qkv) / 3
	check(res.MMProj, "v.blk.0.attn_k.weight", qkv[third:2*third])
	q, _ := merged("language_model.layers.1.self_attn.q_proj.weight", "model.language_model.layers.1.self_attn.q_proj")
	check(res.LMs[0], "blk.1.attn_q.weight", q)

	// The converted release embeds: an image to one unit row per token.
	e, err := engine.New(engine.Config{Model: res.LMs[0], MMProj: res.MMProj, MVProj: res.MVProjs[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Embed(context.Background(), engine.Request{Inputs: []engine.Input{engine.ImageInput(testPNG(t, 56, 84))}, Multivector: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Embeddings[0].Multi
	if len(rows) != r.Embeddings[0].Tokens {
		t.Fatalf("%d rows for %d tokens", len(rows), r.Embeddings[0].Tokens)
	}
	for _, row := range rows {
		var n float64
		for _, v := range row {
			n += float64(v) * float64(v)
		}
		if math.Abs(n-1) > 1e-4 {
			t.Fatalf("a row of norm² %v", n)
		}
	}
}

// TestAdapterOfAnotherName: an adapter merged into a base given with
// --base or --adapter whose name is not the adapter's
// base_model_name_or_path (the shapes fit, so nothing else can tell) is
// converted with a warning in the log and in the LM's vembed.warning; the
// base it names is converted without one.
func TestAdapterOfAnotherName(t *testing.T) {
	root := t.TempDir()
	write := func(name string, seed uint64) (base, adapter string) {
		cfg, err := synth.Preset("tiny")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Name, cfg.Seed = name, seed
		base, adapter = filepath.Join(root, name+"-base"), filepath.Join(root, name+"-v1")
		if err := synth.WriteHF(base, cfg, synth.HFOptions{Layout: qwenlayout.LayoutColQwen25, AdapterDir: adapter}); err != nil {
			t.Fatal(err)
		}
		return base, adapter
	}
	baseA, adA := write("colqwen-a", 1)
	baseB, _ := write("colqwen-b", 2)
	for _, c := range []struct {
		name    string
		dir     string
		o       Options
		warning bool
	}{
		{"--base of another name", adA, Options{Base: baseB}, true},
		{"--adapter into another name", baseB, Options{Adapter: adA}, true},
		{"--base it names", adA, Options{Base: baseA}, false},
		{"--adapter into the base it names", baseA, Options{Adapter: adA}, false},
	} {
		var logs bytes.Buffer
		c.o.Type, c.o.MMProjType = "F32", "F32"
		c.o.Log = slog.New(slog.NewTextHandler(&logs, nil))
		res, err := Convert(context.Background(), c.dir, t.TempDir(), c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f, err := gguf.Open(res.LMs[0])
		if err != nil {
			t.Fatal(err)
		}
		w, werr := f.String("vembed.warning")
		f.Close()
		logged := strings.Contains(logs.String(), "names another base")
		switch {
		case c.warning && (werr != nil || !strings.Contains(w, `"synthetic/colqwen-a-base"`) || !strings.Contains(w, "colqwen-b-base") || !logged):
			t.Errorf("%s: vembed.warning %q (%v), logged %v; want both, naming the adapter's base and the one used", c.name, w, werr, logged)
		case !c.warning && (werr == nil || logged):
			t.Errorf("%s: warned (%q, logged %v) for the base the adapter names", c.name, w, logged)
		}
	}
}
