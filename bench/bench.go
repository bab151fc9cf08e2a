// Package bench holds the benchmarks of "vembed bench": the kernels'
// GFLOPS against the peak of the instructions each tier uses (Kernels),
// the end-to-end figures of a model through the engine (Model), the load
// benchmark of a server over HTTP (Serve) and the whole-process
// comparison of two binaries (Regress). Each kind lives in a file of its
// own, takes a plain configuration and returns its figures as values
// with JSON tags; the command parses the flags and prints the tables.
//
// Configuration errors name the command-line flag the field comes from,
// since that is where a user sets it.
package bench

import (
	"cmp"
	"io"
	"math"
	"slices"

	"github.com/vembed/vembed/engine"
)

// Loader loads the engine a benchmark measures; the command passes one
// that shows its progress, engine.New is used when it is nil.
type Loader func(engine.Config) (*engine.Engine, error)

func (l Loader) load(cfg engine.Config) (*engine.Engine, error) {
	if l == nil {
		return engine.New(cfg)
	}
	return l(cfg)
}

// Bar is the progress of a benchmark of known length
// (github.com/schollz/progressbar's ProgressBar is one).
type Bar interface {
	Add(int) error
	Finish() error
}

// noBar is the Bar of a run that shows no progress.
type noBar struct{}

func (noBar) Add(int) error { return nil }
func (noBar) Finish() error { return nil }

// logTo returns w, or a writer that drops everything when it is nil.
func logTo(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// medianIndex returns the index of the median of v (the upper one of an
// even count, as median does).
func medianIndex(v []float64) int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	return idx[len(idx)/2]
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return round4(s[i])
}

// A product is converted before it is added to (float64(a*b) + c): that
// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
func round1(v float64) float64 { return float64(int64(float64(v*10)+0.5)) / 10 }

// round4 keeps four significant digits, which is more than the noise of a
// shared machine allows, so the table and JSON stay readable.
func round4(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}
