package bench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// Report is what the kernel benchmark measured, the JSON line vembed
// bench prints last. Model holds the end-to-end figures (Model) when the
// model benchmark ran too.
type Report struct {
	Threads int `json:"threads"`
	// Tier is the tier this CPU runs by default (or VEMBED_CPU's): the
	// one the model benchmarks use.
	Tier string `json:"tier"`
	// Default is the tier this CPU gets by default, the row of the table
	// that picked it and which tier computes each kind of product.
	Default Default `json:"default"`
	// Peak is the AVX2 FMA peak (FMLA on arm64: kernels.BasePeak) by
	// thread count (wall clock), CorePeak its rate per CPU-second of one
	// thread; Peaks and CorePeaks the same for every unit a measured tier
	// multiplies with (kernels.PeakUnit).
	Peak      map[string]float64            `json:"peak_gflops"`
	CorePeak  float64                       `json:"core_peak_gflops_per_cpu_second"`
	Peaks     map[string]map[string]float64 `json:"peaks,omitempty"`
	CorePeaks map[string]float64            `json:"core_peaks_per_cpu_second,omitempty"`
	GEMM      []GEMMFigure                  `json:"gemm"`
	Attention []AttnFigure                  `json:"attention,omitempty"`
	Model     []ModelFigure                 `json:"model,omitempty"`
}

// Default reports kernels.DefaultChoice for this CPU.
type Default struct {
	CPU   string   `json:"cpu"`
	Flags []string `json:"flags"`
	Tier  string   `json:"tier"`
	Rule  string   `json:"rule"`
	Why   string   `json:"why"`
	// Quantized, Marked and Float name the tier of each kind of product
	// on the default tier (kernels.Products).
	Quantized string `json:"quantized"`
	Marked    string `json:"marked_float"`
	Float     string `json:"float"`
}

// DefaultInfo describes the default tier of this CPU.
func DefaultInfo() Default {
	c := kernels.HostCPU()
	t, row := kernels.DefaultChoice()
	d := Default{CPU: c.String(), Flags: c.Flags, Tier: string(t), Rule: row.Name, Why: row.Why}
	if p, ok := kernels.TierProducts(t); ok {
		d.Quantized, d.Marked, d.Float = string(p.Quantized), string(p.Marked), string(p.Float)
	}
	return d
}

// PrintDefault writes which tier each kind of product uses by default on
// this CPU and the table row that chose it.
func PrintDefault(w io.Writer, d Default) {
	fmt.Fprintf(w, "default tier on this CPU (%s): %s, by the row %q: %s\n", d.CPU, d.Tier, d.Rule, d.Why)
	fmt.Fprintf(w, "  by default: quantized weights on %s; marked float weights (vision MLPs) on %s; other float weights and attention on %s\n",
		d.Quantized, d.Marked, d.Float)
}

// Figures are the measured values of one benchmark: wall-clock GFLOPS over
// all threads, and the percentages of peak explained at measurer.
type Figures struct {
	GFLOPS      float64 `json:"gflops"`
	PctPeakCPU  float64 `json:"pct_peak_cpu"`
	PctPeakWall float64 `json:"pct_peak_wall"`
}

// toFigures keeps four significant digits (round4): a product slowed by a
// busy machine still reports its small share of the peak, not 0.
func toFigures(f benchFigure) Figures {
	return Figures{round4(f.gflops), round4(f.pctPeakCPU), round4(f.pctPeakWall)}
}

// GEMMFigure is one matrix product of an M×K activation by an N×K
// weight matrix of type Type.
type GEMMFigure struct {
	Tier string `json:"tier"`
	Type string `json:"type"`
	M    int    `json:"m"`
	K    int    `json:"k"`
	N    int    `json:"n"`
	// Unit is the instruction whose peak the percentages divide by.
	Unit string `json:"peak_unit,omitempty"`
	Figures
}

// AttnFigure is one attention case (attnCases).
type AttnFigure struct {
	Tier string `json:"tier"`
	Case string `json:"case"`
	Unit string `json:"peak_unit,omitempty"`
	Figures
}

// KernelConfig is one run of the kernel benchmark.
type KernelConfig struct {
	Types []gguf.Type
	// Tiers to measure; nil: every available tier but the reference one
	// (single-threaded float64, too slow to time).
	Tiers []kernels.Tier
	// Ms are the activation row counts (tokens), K and N the input and
	// output features of the weight matrices.
	Ms   []int
	K, N int
	// Time is the time per measurement round; the median of Rounds
	// rounds is reported.
	Time   time.Duration
	Rounds int
	// AttnTokens is the token count of the attention cases (0: none).
	AttnTokens int
	// Log receives progress lines; NewBar, when set, the progress of the
	// measurements.
	Log    io.Writer
	NewBar func(total int64, desc string) Bar
}

// Check reports the first setting of c out of range.
func (c *KernelConfig) Check() error {
	if c.K <= 0 || c.N <= 0 || c.Rounds <= 0 || c.Time <= 0 || c.AttnTokens < 0 || len(c.Ms) == 0 || len(c.Types) == 0 {
		return errors.New("--k, --n, --rounds, --time and --m must be positive, --attn-tokens at least 0, --types not empty")
	}
	for _, m := range c.Ms {
		if m <= 0 {
			return fmt.Errorf("--m: bad count %d", m)
		}
	}
	for _, t := range c.Tiers {
		if !slices.Contains(kernels.Available(), t) {
			return fmt.Errorf("tier %q is not available here (have %v)", t, kernels.Available())
		}
	}
	return nil
}

// Kernels measures the matrix products and attention of every tier and
// weight type of c, and the peaks they are compared with. It leaves the
// kernel tier that was active when it was called.
func Kernels(c KernelConfig) (*Report, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	log := logTo(c.Log)
	tiers := c.Tiers
	if tiers == nil {
		for _, t := range kernels.Available() {
			if t != kernels.TierReference {
				tiers = append(tiers, t)
			}
		}
	}
	saved := kernels.Active()
	defer kernels.Use(saved)

	threads := runtime.GOMAXPROCS(0)
	rep := Report{Threads: threads, Tier: string(saved), Default: DefaultInfo(), Peak: map[string]float64{},
		Peaks: map[string]map[string]float64{}, CorePeaks: map[string]float64{}}
	fmt.Fprintf(log, "vembed bench: kernel tier in use: %s (of %v)\n", saved, kernels.Available())
	PrintDefault(log, rep.Default)
	m := measurer{threads: threads, dur: c.Time, rounds: c.Rounds, corePeak: map[kernels.PeakUnit]float64{}}
	// The peaks of every unit the measured tiers multiply with, at 1 and
	// all threads.
	base := kernels.BasePeak() // the AVX2 FMA, or FMLA on arm64
	units := []kernels.PeakUnit{base}
	for _, tier := range tiers {
		for _, typ := range append(slices.Clone(c.Types), gguf.TypeF32) { // F32: attention
			if u, ok := kernels.TierPeak(tier, typ); ok && !slices.Contains(units, u) {
				units = append(units, u)
			}
		}
	}
	// BFMMLA, which no tier multiplies with yet, is probed beside BFDOT:
	// what a BFMMLA kernel could gain on that CPU.
	if slices.Contains(kernels.PeakUnits(), kernels.PeakBFMMLA) && !slices.Contains(units, kernels.PeakBFMMLA) {
		units = append(units, kernels.PeakBFMMLA)
	}
	for _, u := range units {
		for _, th := range slices.Compact([]int{1, threads}) {
			p, ok := kernels.Peak(u, th, c.Time)
			if !ok {
				if u == base {
					fmt.Fprintln(log, "vembed bench: no FMA peak probe for this CPU; percentages are omitted")
				}
				break
			}
			if rep.Peaks[string(u)] == nil {
				rep.Peaks[string(u)] = map[string]float64{}
			}
			rep.Peaks[string(u)][strconv.Itoa(th)] = round1(p)
			if u == base {
				rep.Peak[strconv.Itoa(th)] = round1(p)
			}
		}
		m.measureCorePeak(u)
		if c := m.corePeak[u]; c > 0 {
			rep.CorePeaks[string(u)] = round1(c)
		}
	}
	rep.CorePeak = rep.CorePeaks[string(base)]

	rng := rand.New(rand.NewPCG(1, 2))
	// Every measurement takes rounds × (time + two peak probes); a full
	// run is minutes, so say how far it is.
	var bar Bar = noBar{}
	if c.NewBar != nil {
		bar = c.NewBar(int64(len(tiers)*(len(c.Types)*len(c.Ms)+len(attnCases(c.AttnTokens)))), "kernels")
	}
	k, n := c.K, c.N
	for _, tier := range tiers {
		if err := kernels.Use(tier); err != nil {
			return nil, err
		}
		for _, typ := range c.Types {
			w, err := benchMatrix(typ, n, k, rng)
			if err != nil {
				return nil, err
			}
			// Packed for the tier as a model's load packs its weights:
			// the amx tier multiplies on tiles only packed weights, and
			// the VNNI tiers' Q8_0 and amx-bf16's float products read
			// their packed copies.
			kernels.Prepare(w)
			for _, rows := range c.Ms {
				x := randFloats(rows*k, rng)
				dst := make([]float32, rows*n)
				flops := 2 * float64(rows) * float64(k) * float64(n)
				u, _ := kernels.TierPeak(tier, typ)
				f := m.measure(flops, u, func() { kernels.MatMul(dst, x, rows, w, nil) })
				rep.GEMM = append(rep.GEMM, GEMMFigure{string(tier), typ.String(), rows, k, n, string(u), toFigures(f)})
				bar.Add(1)
			}
			w.Unpack()
		}
		for _, ac := range attnCases(c.AttnTokens) {
			q := randFloats(ac.nTok*ac.nHead*ac.hd, rng)
			kk := randFloats(ac.nTok*ac.nKV*ac.hd, rng)
			v := randFloats(ac.nTok*ac.nKV*ac.hd, rng)
			out := make([]float32, len(q))
			flops := 4 * float64(ac.hd*ac.nHead) * ac.pairs()
			u, _ := kernels.AttentionPeak(tier)
			f := m.measure(flops, u, func() {
				kernels.Attention(out, q, kk, v, ac.nTok, ac.nHead, ac.nKV, ac.hd, 0.1, ac.mask)
			})
			rep.Attention = append(rep.Attention, AttnFigure{string(tier), ac.name, string(u), toFigures(f)})
			bar.Add(1)
		}
	}
	bar.Finish()
	return &rep, nil
}

// measurer times a workload in rounds and reports medians. The machine may
// be shared, so two percentages of peak are kept, both against the peak
// of the instruction the workload multiplies with (kernels.TierPeak). The
// wall-clock one divides a round's GFLOPS by the mean of peak probes run
// on the same threads just before and after it. The CPU-time one divides
// flops by the CPU time the process got during the round and compares
// that with the per-core peak measured the same way: it is the efficiency
// of the code while it runs, unaffected by other processes taking turns
// on the cores (but blind to time a worker spends waiting for the others).
type measurer struct {
	threads, rounds int
	dur             time.Duration
	// corePeak is by unit the GFLOPS per CPU-second of one probe thread;
	// absent if unknown.
	corePeak map[kernels.PeakUnit]float64
}

// measureCorePeak sets corePeak[u] from a few single-thread probes.
func (m *measurer) measureCorePeak(u kernels.PeakUnit) {
	for r := 0; r < 3; r++ {
		c0, ok := processCPU()
		t0 := time.Now()
		g, probed := kernels.Peak(u, 1, m.dur/2)
		wall := time.Since(t0).Seconds()
		c1, _ := processCPU()
		if !ok || !probed || c1 <= c0 {
			return
		}
		m.corePeak[u] = max(m.corePeak[u], g*wall/(c1-c0).Seconds())
	}
}

// benchFigure is what measure returns: medians over the rounds.
type benchFigure struct {
	gflops      float64 // wall clock, all threads
	pctPeakCPU  float64 // per CPU-second against corePeak
	pctPeakWall float64 // against the bracketing probes
}

// measure times fn, which performs flops operations a call, against the
// peak of unit u ("": none).
func (m measurer) measure(flops float64, u kernels.PeakUnit, fn func()) benchFigure {
	fn() // warm caches and scratch buffers
	var gs, pc, pw []float64
	corePeak := m.corePeak[u]
	for r := 0; r < m.rounds; r++ {
		before, ok := kernels.Peak(u, m.threads, m.dur/4)
		c0, cpuOK := processCPU()
		start := time.Now()
		calls := 0
		for calls == 0 || time.Since(start) < m.dur {
			fn()
			calls++
		}
		wall := time.Since(start).Seconds()
		c1, _ := processCPU()
		after, _ := kernels.Peak(u, m.threads, m.dur/4)
		g := flops * float64(calls) / wall / 1e9
		gs = append(gs, g)
		if ok {
			pw = append(pw, 100*g/((before+after)/2))
		}
		if cpuOK && corePeak > 0 && c1 > c0 {
			pc = append(pc, 100*flops*float64(calls)/(c1-c0).Seconds()/1e9/corePeak)
		}
	}
	return benchFigure{median(gs), median(pc), median(pw)}
}

// attnCase is one attention shape of the benchmark.
type attnCase struct {
	name                 string
	nTok, nHead, nKV, hd int
	mask                 kernels.Mask
}

// pairs counts the (query, key) pairs the mask lets attend.
func (c attnCase) pairs() float64 {
	var n float64
	for t := 0; t < c.nTok; t++ {
		lo, hi := 0, c.nTok
		if s := c.mask.Segments; len(s) > 0 {
			i, _ := slices.BinarySearch(s, t+1)
			lo, hi = s[i-1], s[i]
		}
		if c.mask.Causal {
			hi = t + 1
		}
		n += float64(hi - lo)
	}
	return n
}

// attnCases returns the attention shapes of jina-embeddings-v4 at n
// tokens: the vision tower's full and 8×8-patch windowed layers (16 heads
// of 80) and the language model's causal layers (16 query heads over 2
// key/value heads of 128).
func attnCases(n int) []attnCase {
	if n == 0 {
		return nil
	}
	return []attnCase{
		{fmt.Sprintf("vit_full_%d", n), n, 16, 16, 80, kernels.Mask{}},
		{fmt.Sprintf("vit_window64_%d", n), n, 16, 16, 80, kernels.Mask{Segments: equalSegments(n, 64)}},
		{fmt.Sprintf("lm_causal_%d", n), n, 16, 2, 128, kernels.Mask{Causal: true}},
	}
}

func equalSegments(n, size int) []int {
	var s []int
	for i := 0; i < n; i += size {
		s = append(s, i)
	}
	return append(s, n)
}

// benchMatrix returns an n×k weight matrix of type typ. Only the first
// stripe of rows is quantized from random values and the rest repeats it:
// the kernels' speed does not depend on the values, and quantizing millions
// of values to the K types would take longer than the measurement. It is
// marked bfloat16-eligible, as the vision towers' MLP weights are, so that
// the bfloat16 tiers are measured on what they multiply.
func benchMatrix(typ gguf.Type, n, k int, rng *rand.Rand) (*kernels.Matrix, error) {
	const stripe = 16
	rows := min(stripe, n)
	enc, err := gguf.Quantize(typ, randFloats(rows*k, rng))
	if err != nil {
		return nil, fmt.Errorf("bench: %s weights: %w", typ, err)
	}
	data := make([]byte, 0, len(enc)/rows*n)
	for len(data) < cap(data) {
		data = append(data, enc[:min(len(enc), cap(data)-len(data))]...)
	}
	w, err := kernels.NewMatrix(typ, n, k, data)
	if err != nil {
		return nil, err
	}
	w.BF16 = true
	return w, nil
}

func randFloats(n int, rng *rand.Rand) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
