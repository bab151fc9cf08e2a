package qwenvl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/ref64"
	"github.com/vembed/vembed/kernels"
)

// naiveVision is a float64 transcription of the transformers vision tower
// for one still image, written independently of the model code: no
// window permutation (windows are a mask over raster order instead), the
// Conv3d as its index formula, plain loops throughout. It checks the
// Qwen2-VL path, which has no reference fixture, and the window
// permutation of Qwen2.5-VL.
type naiveVision struct {
	f        *gguf.File
	windowed bool
	W, heads int
}

func (nv *naiveVision) w(name string) []float64 {
	t := nv.f.Tensor(name)
	if t == nil {
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		panic(err)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// linear returns x·Wᵀ + b for W stored as out rows of in values.
func linear(x [][]float64, w, b []float64) [][]float64 {
	in := len(x[0])
	out := make([][]float64, len(x))
	for r, xr := range x {
		out[r] = make([]float64, len(w)/in)
		for o := range out[r] {
			s := 0.0
			if b != nil {
				s = b[o]
			}
			for i, v := range xr {
				s += v * w[o*in+i]
			}
			out[r][o] = s
		}
	}
	return out
}

func (nv *naiveVision) norm(x [][]float64, name string) [][]float64 {
	w, b := nv.w(name+".weight"), nv.w(name+".bias")
	out := make([][]float64, len(x))
	for r, xr := range x {
		n := float64(len(xr))
		mean, ss := 0.0, 0.0
		if !nv.windowed { // LayerNorm
			for _, v := range xr {
				mean += v / n
			}
		}
		for _, v := range xr {
			ss += (v - mean) * (v - mean) / n
		}
		out[r] = make([]float64, len(xr))
		for i, v := range xr {
			out[r][i] = (v - mean) / math.Sqrt(ss+1e-6) * w[i]
			if b != nil {
				out[r][i] += b[i]
			}
		}
	}
	return out
}

func (nv *naiveVision) encode(p []float32, gh, gw int, fullEvery int) [][]float64 {
	L, lw := gh*gw, gw/2
	w0, w1 := nv.w("v.patch_embd.weight"), nv.w("v.patch_embd.weight.1")
	x := make([][]float64, L)
	hpos, wpos, win := make([]int, L), make([]int, L), make([]int, L)
	for r := range x {
		x[r] = make([]float64, nv.W)
		for o := range x[r] {
			for c := 0; c < 3; c++ {
				for tp := 0; tp < 2; tp++ {
					w := w0
					if tp == 1 {
						w = w1
					}
					for k := 0; k < 196; k++ {
						x[r][o] += float64(p[r*1176+c*392+tp*196+k]) * w[(o*3+c)*196+k]
					}
				}
			}
		}
		u, s := r/4, r%4
		hpos[r], wpos[r] = 2*(u/lw)+s/2, 2*(u%lw)+s%2
		win[r] = (u/lw/4)*1000 + (u%lw)/4
	}
	hd := nv.W / nv.heads
	for l := 0; ; l++ {
		pre := fmt.Sprintf("v.blk.%d.", l)
		if nv.f.Tensor(pre+"ln1.weight") == nil {
			break
		}
		full := !nv.windowed || (l+1)%fullEvery == 0
		xn := nv.norm(x, pre+"ln1")
		q := linear(xn, nv.w(pre+"attn_q.weight"), nv.w(pre+"attn_q.bias"))
		k := linear(xn, nv.w(pre+"attn_k.weight"), nv.w(pre+"attn_k.bias"))
		v := linear(xn, nv.w(pre+"attn_v.weight"), nv.w(pre+"attn_v.bias"))
		for r := range L { // rotate_half with emb = (h·inv, w·inv) twice
			angle := ref64.VisionAngle(hpos[r], wpos[r], hd)
			ref64.Rotate(q[r], nv.heads, angle)
			ref64.Rotate(k[r], nv.heads, angle)
		}
		att := ref64.Attend(q, k, v, nv.heads, nv.heads, func(i, j int) bool { return full || win[i] == win[j] })
		o := linear(att, nv.w(pre+"attn_out.weight"), nv.w(pre+"attn_out.bias"))
		for r := range x {
			for i := range x[r] {
				x[r][i] += o[r][i]
			}
		}
		xn = nv.norm(x, pre+"ln2")
		up := linear(xn, nv.w(pre+"ffn_up.weight"), nv.w(pre+"ffn_up.bias"))
		if g := nv.w(pre + "ffn_gate.weight"); g != nil {
			gate := linear(xn, g, nv.w(pre+"ffn_gate.bias"))
			for r := range up {
				for i, gv := range gate[r] {
					up[r][i] *= ref64.SiLU(gv)
				}
			}
		} else {
			for r := range up {
				for i, v := range up[r] {
					up[r][i] = v / (1 + math.Exp(-1.702*v))
				}
			}
		}
		down := linear(up, nv.w(pre+"ffn_down.weight"), nv.w(pre+"ffn_down.bias"))
		for r := range x {
			for i := range x[r] {
				x[r][i] += down[r][i]
			}
		}
	}
	xn := nv.norm(x, "v.post_ln")
	units := make([][]float64, L/4)
	for u := range units {
		for s := 0; s < 4; s++ {
			units[u] = append(units[u], xn[4*u+s]...)
		}
	}
	hid := linear(units, nv.w("mm.0.weight"), nv.w("mm.0.bias"))
	for _, row := range hid {
		for i, v := range row {
			row[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
		}
	}
	return linear(hid, nv.w("mm.2.weight"), nv.w("mm.2.bias"))
}

// TestVisionAgainstNaive compares EncodeImages with the float64
// transcription for both tower variants on an image whose merged grid
// (6×9) leaves partial windows. Both compute the same function; float32
// rounding through four blocks stays near 1e-6, so 1e-5 relative per row:
// on float32 arithmetic (a bfloat16 tier's MLPs move rows by ~1e-4, which
// TestBF16Synthetic bounds).
func TestVisionAgainstNaive(t *testing.T) {
	saved := kernels.Active()
	defer kernels.Use(saved)
	if err := kernels.Use(kernels.Float32Default()); err != nil {
		t.Fatal(err)
	}
	for _, preset := range []string{"tiny", "tiny-qwen2vl"} {
		t.Run(preset, func(t *testing.T) {
			lm, mm := synthFiles(t, preset, nil)
			m, err := Load(lm, mm)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			img := randomImage(rand.New(rand.NewPCG(15, 16)), m, 1, 12, 18)
			got, err := m.EncodeImages([]ImageInput{img})
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(mm)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			vc, err := f.VisionConfig()
			if err != nil {
				t.Fatal(err)
			}
			nv := &naiveVision{f: f, windowed: m.Vision.windowed, W: vc.EmbeddingLength, heads: vc.HeadCount}
			want := nv.encode(img.Patches, 12, 18, vc.WAPattern)
			flat := make([]float32, 0, len(got[0]))
			for _, row := range want {
				for _, v := range row {
					flat = append(flat, float32(v))
				}
			}
			if c, rel := rowStats(t, got[0], flat, m.Info().Hidden); rel > batchTol {
				t.Errorf("merger rows vs float64 transcription: worst row cos %.9f rel %.3g", c, rel)
			}
		})
	}
}
