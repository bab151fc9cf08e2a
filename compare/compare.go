// Package compare measures where two models (or two engines) diverge on
// the same images: per stage of the image path, and per patch, as
// heatmaps drawn over each image and an HTML report.
//
// A side is a vembed model run in-process ("LM.gguf,MMPROJ.gguf", with
// "@TIER" to force a kernel tier, e.g. "lm.gguf,mm.gguf@reference"), or a
// directory of tensors dumped by any engine in the format `vembed embed
// --dump DIR` writes. The kernel tier is process-wide (kernels.Use): a
// side with a tier switches to it around each of its calls and back after,
// and the two sides run one after the other, never at once; the tiers
// keep weights as stored, so a model loaded under one runs under any.
//
// The dump format, which `vembed embed --dump DIR --image IMG0 --image
// IMG1 ...` writes and a short script in any language can write for
// another engine:
//
//	DIR/index.json   {"tensors": [{"name": N, "file": F, "dtype": "float32",
//	                  "shape": [d0, d1, ...]}, ...]}
//	DIR/F            the tensor's values as little-endian IEEE float32,
//	                 row-major, nothing else (4·d0·d1·... bytes)
//
// F is a file name relative to DIR (no "..", not absolute); one
// dimension tensors have shape [n]; integers (grids, spans) are stored as
// float32 values. The i-th image given to compare (0-based) is input i,
// embedded as a request of its own with the model's default task (for
// jina-embeddings-v4 the passage prompt around the image), and its
// tensors are named:
//
//	input{i}.image0.grid           [3]: t, h, w of the patch grid
//	input{i}.image0.patches        [t·h·w, C·T·P·P]: preprocessed patches
//	                               (Qwen2-VL's processor: C=3 channels,
//	                               T=2 frames, P=14 pixels, normalized)
//	input{i}.image0.vit_out        [t·h·w, vision width]: the tower's
//	                               output before the merger (optional)
//	input{i}.image0.merger_out     [t·h·w/4, hidden]: the image's rows for
//	                               the language model
//	input{i}.hidden_states         [tokens, hidden]: final hidden states of
//	                               the whole prompt, after the last norm
//	input{i}.image0.span           [2]: first and end (exclusive) row of the
//	                               image's placeholder tokens in
//	                               hidden_states
//	input{i}.embedding             [dim]: the pooled, normalized embedding
//
// Patch and vision rows follow Qwen2-VL's order: 2×2 merge blocks of
// patches, the four patches of a block consecutive (row-major inside it),
// blocks in row-major order over the (h/2)×(w/2) block grid; merger rows
// are one per block in that order. A missing tensor leaves its stage out;
// a grid other than side A's leaves out every stage but the embedding.
//
// Divergence is the cosine distance 1 − cos between the two sides' rows;
// per stage the report gives its mean, worst row and the cosine of the
// whole stage flattened.
package compare

import (
	"encoding/json"
	"fmt"
	"math"
)

// Trace holds one image's intermediates on one side.
type Trace struct {
	Grid      [3]int // t, h, w in patches
	Merge     int    // spatial merge size (2)
	Patches   Rows
	VitOut    Rows
	Merger    Rows
	Hidden    Rows
	Span      [2]int // image rows of Hidden
	Embedding []float32
}

// Rows is a row-major matrix.
type Rows struct {
	Data []float32
	Cols int
}

// N is the number of rows.
func (r Rows) N() int {
	if r.Cols == 0 {
		return 0
	}
	return len(r.Data) / r.Cols
}

// Row returns row i.
func (r Rows) Row(i int) []float32 { return r.Data[i*r.Cols : (i+1)*r.Cols] }

// Stage is the divergence of one stage between the two sides.
type Stage struct {
	Name     string
	Rows     int
	Mean     float64   // mean per-row cosine distance
	Worst    float64   // largest per-row cosine distance
	Cosine   float64   // cosine of the whole stage, flattened
	Distance []float64 // per row (nil for a single vector)
}

// Stages compares a's and b's intermediates, stage by stage, leaving out
// stages either side lacks or whose shapes differ (reported in skipped).
func Stages(a, b *Trace) (stages []Stage, skipped []string) {
	add := func(name string, x, y Rows) {
		switch {
		case x.N() == 0 || y.N() == 0:
			skipped = append(skipped, name+": missing")
		case x.N() != y.N() || x.Cols != y.Cols:
			skipped = append(skipped, fmt.Sprintf("%s: shapes differ (%dx%d vs %dx%d)", name, x.N(), x.Cols, y.N(), y.Cols))
		default:
			stages = append(stages, rowStage(name, x, y))
		}
	}
	add("patches", a.Patches, b.Patches)
	add("vision output", a.VitOut, b.VitOut)
	add("merger", a.Merger, b.Merger)
	add("image hidden states", a.imageHidden(), b.imageHidden())
	add("hidden states", a.Hidden, b.Hidden)
	if len(a.Embedding) > 0 && len(a.Embedding) == len(b.Embedding) {
		c := Cosine(a.Embedding, b.Embedding)
		stages = append(stages, Stage{Name: "embedding", Rows: 1, Mean: 1 - c, Worst: 1 - c, Cosine: c})
	} else {
		skipped = append(skipped, "embedding: missing or sizes differ")
	}
	return stages, skipped
}

// imageHidden is the image's rows of the hidden states.
func (t *Trace) imageHidden() Rows {
	lo, hi := t.Span[0], t.Span[1]
	if t.Hidden.N() == 0 || lo < 0 || hi <= lo || hi > t.Hidden.N() {
		return Rows{}
	}
	return Rows{Data: t.Hidden.Data[lo*t.Hidden.Cols : hi*t.Hidden.Cols], Cols: t.Hidden.Cols}
}

func rowStage(name string, x, y Rows) Stage {
	s := Stage{Name: name, Rows: x.N(), Distance: make([]float64, x.N())}
	for i := range s.Distance {
		d := 1 - Cosine(x.Row(i), y.Row(i))
		s.Distance[i] = d
		s.Mean += d
		s.Worst = max(s.Worst, d)
	}
	s.Mean /= float64(len(s.Distance))
	s.Cosine = Cosine(x.Data, y.Data)
	return s
}

// Cosine is the cosine similarity of two vectors (float64 sums); 1 when
// both are zero, 0 when one is.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range min(len(a), len(b)) {
		x, y := float64(a[i]), float64(b[i])
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		ab += float64(x * y)
		aa += float64(x * x)
		bb += float64(y * y)
	}
	switch {
	case aa == 0 && bb == 0:
		return 1
	case aa == 0 || bb == 0:
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// PatchGrid lays per-row values of a stage out on the image's grid: for
// the patch and vision-output stages one value per patch (h×w), for the
// merger and image hidden states one per merged block ((h/m)×(w/m)),
// undoing Qwen2-VL's merge-block row order.
func PatchGrid(t *Trace, values []float64) (grid []float64, gh, gw int) {
	h, w, m := t.Grid[1], t.Grid[2], max(t.Merge, 1)
	switch len(values) {
	case h * w:
		grid = make([]float64, h*w)
		bw := w / m
		for i, v := range values {
			block, in := i/(m*m), i%(m*m)
			by, bx := block/bw, block%bw
			y, x := by*m+in/m, bx*m+in%m
			grid[y*w+x] = v
		}
		return grid, h, w
	case (h / m) * (w / m):
		return append([]float64(nil), values...), h / m, w / m
	}
	return nil, 0, 0
}

// MarshalJSON writes the figures with null for NaN and infinities (a side
// that produced NaN), which JSON cannot hold.
func (s Stage) MarshalJSON() ([]byte, error) {
	num := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	dist := make([]any, len(s.Distance))
	for i, v := range s.Distance {
		dist[i] = num(v)
	}
	return json.Marshal(map[string]any{"name": s.Name, "rows": s.Rows, "mean": num(s.Mean), "worst": num(s.Worst), "cosine": num(s.Cosine), "distance": dist})
}
