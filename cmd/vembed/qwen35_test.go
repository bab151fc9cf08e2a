package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

// q35Release is one synthetic Qwen3.5 retriever checkpoint: its layout,
// ColQwen3.5's head form, the head the mvproj must hold (its tensor and
// first rows), and the convert flags.
type q35Release struct {
	name      string
	layout    string
	headDims  []int
	mrl       bool
	head      string // checkpoint tensor prefix of the head the mvproj holds
	rows      int
	maxPixels int // the mmproj's image budget
	flags     []string
}

var q35Releases = []q35Release{
	{name: "colqwen3.5-dim", layout: qwenlayout.LayoutColQwen35, head: "custom_text_proj", rows: 32, maxPixels: 300 * 1024},
	{name: "colqwen3.5-mrl", layout: qwenlayout.LayoutColQwen35, headDims: []int{16, 32}, mrl: true, head: "custom_text_proj", rows: 16, maxPixels: 300 * 1024, flags: []string{"--head-dim", "16"}},
	{name: "colqwen3.5-heads", layout: qwenlayout.LayoutColQwen35, headDims: []int{16, 24, 48}, head: "custom_text_proj.d24", rows: 24, maxPixels: 300 * 1024, flags: []string{"--head-dim", "24"}},
	{name: "colvec1.1", layout: qwenlayout.LayoutColVec, head: "embedding_proj_layer", rows: 40, maxPixels: 1792 * 1024},
}

// writeQ35Release writes and converts a release's synthetic checkpoint
// (F32 throughout, a 300-token budget for ColQwen3.5's processor); it
// returns the checkpoint and the converted LM, mvproj and mmproj.
func writeQ35Release(t *testing.T, r q35Release) (ck string, files []string) {
	t.Helper()
	cfg, err := synth.Preset("tiny-qwen35")
	if err != nil {
		t.Fatal(err)
	}
	if r.layout == qwenlayout.LayoutColVec {
		cfg.MVProj.OutputDim = r.rows
	} else {
		cfg.Vision.MinPixels, cfg.Vision.MaxPixels = 65536, 300*1024
	}
	ck = filepath.Join(t.TempDir(), r.name)
	if err := synth.WriteHF(ck, cfg, synth.HFOptions{Layout: r.layout, DType: safetensors.F32, HeadDims: r.headDims, MRLPrefix: r.mrl}); err != nil {
		t.Fatal(err)
	}
	return ck, convertMV(t, ck, append([]string{"--type", "F32", "--mmproj-type", "F32"}, r.flags...)...)
}

// TestQwen35Convert converts a synthetic checkpoint of each Qwen3.5
// retriever form: the LM is a qwen35 file with the family's recipe,
// bidirectional full attention and no LM head; the mvproj holds the
// chosen head's rows exactly (ColQwen3.5's Matryoshka prefix, or its
// width's own Linear); the mmproj the family's image budget.
func TestQwen35Convert(t *testing.T) {
	for _, r := range q35Releases {
		t.Run(r.name, func(t *testing.T) {
			ck, fs := writeQ35Release(t, r)
			if len(fs) != 3 {
				t.Fatalf("convert wrote %v, want an LM, an mvproj and an mmproj", fs)
			}
			lm, err := gguf.Open(fs[0])
			if err != nil {
				t.Fatal(err)
			}
			arch, _ := lm.String("general.architecture")
			name, _ := lm.String(recipe.Key)
			causal, cerr := lm.Bool(qwenlayout.Qwen35CausalKey)
			wantRecipe := map[string]string{qwenlayout.LayoutColQwen35: recipe.ColQwen35Name, qwenlayout.LayoutColVec: recipe.ColVecName}[r.layout]
			if arch != "qwen35" || name != wantRecipe || cerr != nil || causal || lm.Tensor("output.weight") != nil {
				t.Errorf("LM: architecture %q, recipe %q, causal %v (%v), output.weight %v", arch, name, causal, cerr, lm.Tensor("output.weight") != nil)
			}
			lm.Close()
			mm, err := gguf.Open(fs[2])
			if err != nil {
				t.Fatal(err)
			}
			hi, _ := mm.Uint("clip.vision.image_max_pixels")
			mm.Close()
			if int(hi) != r.maxPixels {
				t.Errorf("mmproj budget %d pixels, want %d", hi, r.maxPixels)
			}
			mv, err := gguf.Open(fs[1])
			if err != nil {
				t.Fatal(err)
			}
			w, _ := mv.Tensor("mvproj.weight").Float32s()
			b, _ := mv.Tensor("mvproj.bias").Float32s()
			mv.Close()
			sc, err := safetensors.OpenCheckpoint(ck)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			_, sf, ok := sc.Tensor(r.head + ".weight")
			if !ok {
				t.Fatalf("the checkpoint has no %s.weight", r.head)
			}
			wantW, _ := sf.Float64Range(r.head+".weight", 0, int64(r.rows*64))
			wantB, _ := sf.Float64Range(r.head+".bias", 0, int64(r.rows))
			if len(w) != r.rows*64 || len(b) != r.rows {
				t.Fatalf("mvproj of %d and %d values, want %d rows of 64", len(w), len(b), r.rows)
			}
			for i := range w {
				if float64(w[i]) != wantW[i] || i < len(b) && float64(b[i]) != wantB[i] {
					t.Fatalf("mvproj value %d differs from %s's", i, r.head)
				}
			}
		})
	}
}

// TestQwen35ConvertRefusals: what a Qwen3.5 checkpoint cannot be
// converted as, each refused with what to do.
func TestQwen35ConvertRefusals(t *testing.T) {
	cfg, err := synth.Preset("tiny-qwen35")
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck")
	if err := synth.WriteHF(ck, cfg, synth.HFOptions{Layout: qwenlayout.LayoutColQwen35, HeadDims: []int{16, 32}, MRLPrefix: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--head-dim", "24"}, "Matryoshka widths are [16 32]"},
		{[]string{"--layout", qwenlayout.LayoutColQwen3}, "is a Qwen3.5 checkpoint"},
		{[]string{"--layout", qwenlayout.LayoutColVec}, "is a colqwen3.5 checkpoint"},
		{[]string{"--query-template", "no placeholder"}, `"{query}" once`},
		{[]string{"--max-visual-tokens", "99999999"}, "--max-visual-tokens 99999999"},
		{[]string{"--recipe", "colqwen3"}, "has its own recipe"},
	} {
		var o, e bytes.Buffer
		if code := run(append([]string{"convert", ck, "--out", t.TempDir()}, c.args...), &o, &e); code == 0 || !strings.Contains(e.String(), c.want) {
			t.Errorf("convert %v: exit %d, %q; want an error saying %q", c.args, code, e.String(), c.want)
		}
	}
	// A tensor under no known prefix would be left behind.
	rewriteCheckpoint(t, ck, func(d *safetensors.Data) bool {
		if d.Name == "custom_text_proj.bias" {
			d.Name = "extra.custom_text_proj.bias"
		}
		return true
	})
	var o, e bytes.Buffer
	if code := run([]string{"convert", ck, "--out", t.TempDir()}, &o, &e); code == 0 || !strings.Contains(e.String(), "extra.custom_text_proj.bias") {
		t.Errorf("convert of a stray tensor: exit %d, %q", code, e.String())
	}
	// A Qwen3-VL checkpoint is no Qwen3.5 retriever.
	q3, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	q3.LM.Pooling = ""
	ck3 := filepath.Join(t.TempDir(), "q3")
	if err := synth.WriteHF(ck3, q3, synth.HFOptions{Layout: qwenlayout.LayoutColQwen3}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--layout", qwenlayout.LayoutColQwen35}, {"--head-dim", "16"}} {
		if code := run(append([]string{"convert", ck3, "--out", t.TempDir()}, args...), &o, &e); code == 0 {
			t.Errorf("convert of a ColQwen3 checkpoint with %v succeeded", args)
		}
	}
}
