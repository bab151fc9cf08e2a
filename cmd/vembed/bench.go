package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure kernel GFLOPS per tier and weight type against the peak of the instructions each tier uses",
		run:     runBench,
	})
}

// benchReport is the JSON line vembed bench prints last. Model holds the
// end-to-end figures when a model benchmark ran.
type benchReport struct {
	Threads int `json:"threads"`
	// Tier is the tier this CPU runs by default (or VEMBED_CPU's): the
	// one the model benchmarks use.
	Tier string `json:"tier"`
	// Default is the tier this CPU gets by default, the row of the table
	// that picked it and which tier computes each kind of product.
	Default benchDefault `json:"default"`
	// Peak is the AVX2 FMA peak by thread count (wall clock), CorePeak its
	// rate per CPU-second of one thread; Peaks and CorePeaks the same for
	// every unit a measured tier multiplies with (kernels.PeakUnit).
	Peak      map[string]float64            `json:"peak_gflops"`
	CorePeak  float64                       `json:"core_peak_gflops_per_cpu_second"`
	Peaks     map[string]map[string]float64 `json:"peaks,omitempty"`
	CorePeaks map[string]float64            `json:"core_peaks_per_cpu_second,omitempty"`
	GEMM      []gemmFigure                  `json:"gemm"`
	Attention []attnFigure                  `json:"attention,omitempty"`
	Model     []modelFigure                 `json:"model,omitempty"`
}

// benchDefault reports kernels.DefaultChoice for this CPU.
type benchDefault struct {
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

// defaultInfo describes the default tier of this CPU.
func defaultInfo() benchDefault {
	c := kernels.HostCPU()
	t, row := kernels.DefaultChoice()
	d := benchDefault{CPU: c.String(), Flags: c.Flags, Tier: string(t), Rule: row.Name, Why: row.Why}
	if p, ok := kernels.TierProducts(t); ok {
		d.Quantized, d.Marked, d.Float = string(p.Quantized), string(p.Marked), string(p.Float)
	}
	return d
}

// printDefault writes which tier each kind of product uses by default on
// this CPU and the table row that chose it.
func printDefault(w io.Writer, d benchDefault) {
	fmt.Fprintf(w, "default tier on this CPU (%s): %s, by the row %q: %s\n", d.CPU, d.Tier, d.Rule, d.Why)
	fmt.Fprintf(w, "  by default: quantized weights on %s; marked float weights (vision MLPs) on %s; other float weights and attention on %s\n",
		d.Quantized, d.Marked, d.Float)
}

// figures are the measured values of one benchmark: wall-clock GFLOPS over
// all threads, and the percentages of peak explained at measurer.
type figures struct {
	GFLOPS      float64 `json:"gflops"`
	PctPeakCPU  float64 `json:"pct_peak_cpu"`
	PctPeakWall float64 `json:"pct_peak_wall"`
}

// toFigures keeps four significant digits (round4): a product slowed by a
// busy machine still reports its small share of the peak, not 0.
func toFigures(f benchFigure) figures {
	return figures{round4(f.gflops), round4(f.pctPeakCPU), round4(f.pctPeakWall)}
}

type gemmFigure struct {
	Tier string `json:"tier"`
	Type string `json:"type"`
	M    int    `json:"m"`
	K    int    `json:"k"`
	N    int    `json:"n"`
	// Unit is the instruction whose peak the percentages divide by.
	Unit string `json:"peak_unit,omitempty"`
	figures
}

type attnFigure struct {
	Tier string `json:"tier"`
	Case string `json:"case"`
	Unit string `json:"peak_unit,omitempty"`
	figures
}

// modelFigure is one end-to-end measurement: a throughput or a latency of
// a model on this machine.
type modelFigure struct {
	Model string  `json:"model,omitempty"` // which model file(s) it ran
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// modelBenches are end-to-end benchmarks run by "vembed bench --model";
// each appends its figures. Model packages register theirs from init, so
// this command needs no change when one is added.
var modelBenches []func(dur time.Duration, w io.Writer) ([]modelFigure, error)

// benchFlagHooks let the model benchmarks add their own flags to
// "vembed bench"; each is called on every new flag set.
var benchFlagHooks []func(fs *flag.FlagSet)

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve" {
		return runBenchServe(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "regress" {
		return runBenchRegress(args[1:], stdout, stderr)
	}
	fs := newFlags("bench", "[--types F32,Q8_0,...] [--tiers avx2,...] [--m 512,32] [--k 2048] [--n 2048] [--time 300ms] [--rounds 5] [--attn-tokens 1024] [--model [--lm LM.gguf --mmproj MMPROJ.gguf] [--texts 32] [--text-tokens 128] [--images 448,896] [--repeat 1] [--cpuprofile FILE] [--memprofile FILE]]", stderr)
	typesFlag := fs.String("types", "F32,F16,BF16,Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q2_K,Q3_K,Q4_K,Q5_K,Q6_K,Q8_K,IQ4_NL,IQ4_XS", "weight `types` to measure")
	tiersFlag := fs.String("tiers", "", "kernel `tiers` to measure (default: every available tier but the reference)")
	msFlag := fs.String("m", "512,32", "activation row `counts` (tokens) to measure")
	k := fs.Int("k", 2048, "input features")
	n := fs.Int("n", 2048, "output features")
	dur := fs.Duration("time", 300*time.Millisecond, "time per measurement round")
	rounds := fs.Int("rounds", 5, "measurement rounds; the median is reported")
	attnTok := fs.Int("attn-tokens", 1024, "tokens of the attention cases (0 skips them)")
	withModel := fs.Bool("model", false, "also run the registered end-to-end model benchmarks")
	for _, hook := range benchFlagHooks {
		hook(fs)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		// "bench --model FILE" reads as a model file, but --model only
		// switches the model figures on: say so rather than drop FILE.
		return usageError(fs, stderr, "unexpected argument %q: give the model files as --lm LM.gguf --mmproj MMPROJ.gguf (--model turns the model figures on)", pos[0])
	}
	types, err := parseTypes(*typesFlag)
	if err != nil {
		return err
	}
	ms, err := parseInts(*msFlag)
	if err != nil || *k <= 0 || *n <= 0 || *rounds <= 0 || *dur <= 0 || *attnTok < 0 {
		fs.Usage()
		return errUsage
	}
	if err := checkProfileFlags(*withModel); err != nil {
		return err
	}
	tiers, err := benchTiers(*tiersFlag)
	if err != nil {
		return err
	}
	saved := kernels.Active()
	defer kernels.Use(saved)

	threads := runtime.GOMAXPROCS(0)
	rep := benchReport{Threads: threads, Tier: string(saved), Default: defaultInfo(), Peak: map[string]float64{},
		Peaks: map[string]map[string]float64{}, CorePeaks: map[string]float64{}}
	fmt.Fprintf(stderr, "vembed bench: kernel tier in use: %s (of %v)\n", saved, kernels.Available())
	printDefault(stderr, rep.Default)
	m := measurer{threads: threads, dur: *dur, rounds: *rounds, corePeak: map[kernels.PeakUnit]float64{}}
	// The peaks of every unit the measured tiers multiply with, at 1 and
	// all threads.
	units := []kernels.PeakUnit{kernels.PeakFMA256}
	for _, tier := range tiers {
		for _, typ := range append(slices.Clone(types), gguf.TypeF32) { // F32: attention
			if u, ok := kernels.TierPeak(tier, typ); ok && !slices.Contains(units, u) {
				units = append(units, u)
			}
		}
	}
	for _, u := range units {
		for _, th := range slices.Compact([]int{1, threads}) {
			p, ok := kernels.Peak(u, th, *dur)
			if !ok {
				if u == kernels.PeakFMA256 {
					fmt.Fprintln(stderr, "vembed bench: no FMA peak probe for this CPU; percentages are omitted")
				}
				break
			}
			if rep.Peaks[string(u)] == nil {
				rep.Peaks[string(u)] = map[string]float64{}
			}
			rep.Peaks[string(u)][strconv.Itoa(th)] = round1(p)
			if u == kernels.PeakFMA256 {
				rep.Peak[strconv.Itoa(th)] = round1(p)
			}
		}
		m.measureCorePeak(u)
		if c := m.corePeak[u]; c > 0 {
			rep.CorePeaks[string(u)] = round1(c)
		}
	}
	rep.CorePeak = rep.CorePeaks[string(kernels.PeakFMA256)]

	rng := rand.New(rand.NewPCG(1, 2))
	// Every measurement takes rounds × (time + two peak probes); a full
	// run is minutes, so say how far it is.
	bar := newBar(stderr, int64(len(tiers)*(len(types)*len(ms)+len(attnCases(*attnTok)))), "kernels", false)
	for _, tier := range tiers {
		if err := kernels.Use(tier); err != nil {
			return err
		}
		for _, typ := range types {
			w, err := benchMatrix(typ, *n, *k, rng)
			if err != nil {
				return err
			}
			// Packed for the tier as a model's load packs its weights:
			// the amx tier multiplies on tiles only packed weights, and
			// the VNNI tiers' Q8_0 and amx-bf16's float products read
			// their packed copies.
			kernels.Prepare(w)
			for _, rows := range ms {
				x := randFloats(rows**k, rng)
				dst := make([]float32, rows**n)
				flops := 2 * float64(rows) * float64(*k) * float64(*n)
				u, _ := kernels.TierPeak(tier, typ)
				f := m.measure(flops, u, func() { kernels.MatMul(dst, x, rows, w, nil) })
				rep.GEMM = append(rep.GEMM, gemmFigure{string(tier), typ.String(), rows, *k, *n, string(u), toFigures(f)})
				bar.Add(1)
			}
			w.Unpack()
		}
		for _, c := range attnCases(*attnTok) {
			q := randFloats(c.nTok*c.nHead*c.hd, rng)
			kk := randFloats(c.nTok*c.nKV*c.hd, rng)
			v := randFloats(c.nTok*c.nKV*c.hd, rng)
			out := make([]float32, len(q))
			flops := 4 * float64(c.hd*c.nHead) * c.pairs()
			u, _ := kernels.AttentionPeak(tier)
			f := m.measure(flops, u, func() {
				kernels.Attention(out, q, kk, v, c.nTok, c.nHead, c.nKV, c.hd, 0.1, c.mask)
			})
			rep.Attention = append(rep.Attention, attnFigure{string(tier), c.name, string(u), toFigures(f)})
			bar.Add(1)
		}
	}
	bar.Finish()
	if *withModel {
		// The kernel measurements leave the last tier they measured (the
		// portable one) active; the model runs on the tier a user gets.
		if err := kernels.Use(saved); err != nil {
			return err
		}
		if len(modelBenches) == 0 {
			fmt.Fprintln(stderr, "vembed bench: no end-to-end model benchmark is built in")
		}
		for _, mb := range modelBenches {
			figs, err := mb(*dur, stderr)
			if err != nil {
				return fmt.Errorf("model benchmark: %w", err)
			}
			rep.Model = append(rep.Model, figs...)
		}
	}
	printBenchTables(stdout, &rep)
	line, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
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

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

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

func parseTypes(s string) ([]gguf.Type, error) {
	var out []gguf.Type
	for _, name := range strings.Split(s, ",") {
		t, err := gguf.ParseType(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// benchTiers resolves the --tiers flag against the available tiers.
func benchTiers(s string) ([]kernels.Tier, error) {
	var out []kernels.Tier
	if s == "" {
		for _, t := range kernels.Available() {
			if t != kernels.TierReference { // single-threaded float64: too slow to time
				out = append(out, t)
			}
		}
		return out, nil
	}
	for _, name := range strings.Split(s, ",") {
		t := kernels.Tier(strings.TrimSpace(name))
		if !slices.Contains(kernels.Available(), t) {
			return nil, fmt.Errorf("tier %q is not available here (have %v)", t, kernels.Available())
		}
		out = append(out, t)
	}
	return out, nil
}

func printBenchTables(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "kernel tier in use: %s; kernels use %d thread(s)\n", rep.Tier, rep.Threads)
	printDefault(w, rep.Default)
	fmt.Fprintln(w, "peaks (billions of operations a second, a multiply-add counting two):")
	for _, u := range slices.Sorted(maps.Keys(rep.Peaks)) {
		fmt.Fprintf(w, "  %-13s", u)
		for _, th := range slices.Sorted(maps.Keys(rep.Peaks[u])) {
			fmt.Fprintf(w, " %s thread(s) %.1f;", th, rep.Peaks[u][th])
		}
		fmt.Fprintf(w, " per CPU-second of one core %.1f\n", rep.CorePeaks[u])
	}
	fmt.Fprintln(w, "% peak (cpu): GFLOPS per CPU-second used over the per-core peak of the unit; % peak (wall): wall GFLOPS over the unit's peak probes around it")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier\ttype\tM\tK\tN\tGFLOPS\tpeak unit\t% peak (cpu)\t% peak (wall)\t")
	for _, g := range rep.GEMM {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%s\t%.1f\t%.1f\t\n", g.Tier, g.Type, g.M, g.K, g.N, g.GFLOPS, g.Unit, g.PctPeakCPU, g.PctPeakWall)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier\tattention\tGFLOPS\tpeak unit\t% peak (cpu)\t% peak (wall)\t")
	for _, a := range rep.Attention {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%.1f\t%.1f\t\n", a.Tier, a.Case, a.GFLOPS, a.Unit, a.PctPeakCPU, a.PctPeakWall)
	}
	tw.Flush()
	if len(rep.Model) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "model\tmeasure\tvalue\tunit\t")
		for _, f := range rep.Model {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t\n", f.Model, f.Name, f.Value, f.Unit)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
}
