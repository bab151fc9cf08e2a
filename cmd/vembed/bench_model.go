package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/tokenizer"
)

// The end-to-end benchmark of "vembed bench --model": text throughput,
// seconds per image with the stage split, and peak memory, all through the
// engine's own Embed (tokenizing, preprocessing, vision tower, language
// model, pooling), so the figures are what a client of the engine sees.

// e2eFlags are the flags of the end-to-end benchmark.
type e2eFlags struct {
	lm, mmproj  *string
	texts       *int
	textTokens  *int
	images      *string
	repeat      *int
	imageFormat *string
	pack        *bool
}

var e2e e2eFlags

func init() {
	benchFlagHooks = append(benchFlagHooks, func(fs *flag.FlagSet) {
		e2e.lm = fs.String("lm", "", "LM `GGUF` of the --model benchmark (default: a tiny synthetic model written to a temporary directory)")
		e2e.mmproj = fs.String("mmproj", "", "mmproj `GGUF` of the --model benchmark (required with --lm)")
		e2e.texts = fs.Int("texts", 32, "texts in the --model text batch")
		e2e.textTokens = fs.Int("text-tokens", 128, "prompt `tokens` of each text, the task prefix included")
		e2e.images = fs.String("images", "448,896", "square image `sizes` of the --model benchmark, one request each (empty: none)")
		e2e.repeat = fs.Int("repeat", 1, "runs of each --model measurement; the median is reported")
		e2e.imageFormat = fs.String("image-format", "jpeg", "encoding of the synthetic images: jpeg or png")
		e2e.pack = fs.Bool("pack", true, "pack Q8_0 weights at load for the VNNI tiers, as vembed serve does (false: as vembed embed does)")
	})
	modelBenches = append(modelBenches, func(_ time.Duration, w io.Writer) ([]modelFigure, error) {
		var sizes []int
		if *e2e.images != "" { // empty: text only
			var err error
			if sizes, err = parseInts(*e2e.images); err != nil {
				return nil, fmt.Errorf("--images: %w", err)
			}
		}
		return benchModelE2E(e2eConfig{
			lm: *e2e.lm, mmproj: *e2e.mmproj,
			texts: *e2e.texts, textTokens: *e2e.textTokens,
			imageSizes: sizes, repeat: *e2e.repeat, imageFormat: *e2e.imageFormat,
			unpacked: !*e2e.pack,
		}, w)
	})
}

// e2eConfig is one end-to-end benchmark run.
type e2eConfig struct {
	lm, mmproj        string
	texts, textTokens int
	imageSizes        []int
	repeat            int
	imageFormat       string
	// unpacked loads without packing weights (--pack=false).
	unpacked bool
}

// maxBenchTexts bounds the text batch: the batch is held in memory and
// each text costs a full language-model pass.
const maxBenchTexts = 4096

func (c *e2eConfig) check() error {
	switch {
	case c.lm == "" && c.mmproj != "", c.lm != "" && c.mmproj == "":
		return errors.New("--lm and --mmproj go together")
	case c.texts < 0 || c.texts > maxBenchTexts:
		return fmt.Errorf("--texts %d out of range 0..%d", c.texts, maxBenchTexts)
	case c.texts > 0 && (c.textTokens < 1 || c.textTokens > tokenizer.MaxPromptTokens):
		return fmt.Errorf("--text-tokens %d out of range 1..%d", c.textTokens, tokenizer.MaxPromptTokens)
	case c.repeat < 1 || c.repeat > 1000:
		return fmt.Errorf("--repeat %d out of range 1..1000", c.repeat)
	case c.imageFormat != "jpeg" && c.imageFormat != "png":
		return fmt.Errorf("--image-format %q: want jpeg or png", c.imageFormat)
	}
	for _, s := range c.imageSizes {
		if s < 28 || s > 4096 {
			return fmt.Errorf("--images: size %d out of range 28..4096", s)
		}
	}
	return nil
}

// benchModelE2E runs the benchmark of c, writing progress to w, and
// returns its figures. Without c.lm it writes the tiny synthetic model
// first, and every figure says so.
func benchModelE2E(c e2eConfig, w io.Writer) ([]modelFigure, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	label := strings.TrimSuffix(filepath.Base(c.lm), ".gguf")
	if c.lm == "" {
		dir, err := os.MkdirTemp("", "vembed-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg, err := synth.Preset("tiny")
		if err != nil {
			return nil, err
		}
		if c.lm, c.mmproj, err = synth.WritePair(dir, cfg); err != nil {
			return nil, err
		}
		label = "tiny-synthetic"
		fmt.Fprintln(w, "vembed bench: no --lm given; the model figures are for the tiny synthetic model, not a real-sized one")
	}
	b := &e2eRun{cfg: c, w: w, label: label}
	if err := b.run(); err != nil {
		return nil, err
	}
	return b.figs, nil
}

// e2eRun holds the state of one benchmark run.
type e2eRun struct {
	cfg   e2eConfig
	w     io.Writer
	label string
	eng   *engine.Engine
	figs  []modelFigure
}

func (b *e2eRun) add(name string, v float64, unit string) {
	b.figs = append(b.figs, modelFigure{Model: b.label, Name: name, Value: round4(v), Unit: unit})
}

// addCPU adds a figure of process CPU time, which on a shared machine
// says how much work a run was when the wall clock says how long others
// let it take; left out where the system does not report it.
func (b *e2eRun) addCPU(name string, secs float64) {
	if _, ok := processCPU(); ok {
		b.add(name, secs, "cpu-s")
	}
}

// round4 keeps four significant digits, which is more than the noise of a
// shared machine allows, so the table and JSON stay readable.
func round4(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

func (b *e2eRun) run() error {
	c := b.cfg
	var fileBytes int64
	for _, p := range []string{c.lm, c.mmproj} {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		fileBytes += st.Size()
	}
	kernels.SetPacking(!c.unpacked)
	start := time.Now()
	// No caches: every measured run must compute, not replay the first.
	eng, err := loadEngine(b.w, oneCaller(engine.Config{Model: c.lm, MMProj: c.mmproj, EmbeddingCacheBytes: -1, EncoderCacheBytes: -1, ImageCacheBytes: -1}))
	if err != nil {
		return err
	}
	defer eng.Close()
	b.eng = eng
	b.add("load", time.Since(start).Seconds(), "s")
	b.add("packed_weights", float64(kernels.PackedBytes())/(1<<20), "MiB")
	fmt.Fprintf(b.w, "vembed bench: %s loaded in %.1fs; kernel tier %s\n", b.label, time.Since(start).Seconds(), kernels.Active())

	// Warm up with the smallest inputs: page in the mapped weights of both
	// towers and size the scratch buffers, so that the first measured run
	// does not pay for them.
	start = time.Now()
	if err := b.warmUp(); err != nil {
		return err
	}
	b.add("warm_up", time.Since(start).Seconds(), "s")
	if rss, ok := peakRSS(); ok {
		// Weights paged in, little activation memory yet: the rest of the
		// peak is what the measured inputs need.
		b.add("peak_rss_after_warm_up", float64(rss)/(1<<20), "MiB")
	}

	texts, err := b.textInputs()
	if err != nil {
		return err
	}
	prof, err := startProfiles()
	if err != nil {
		return err
	}
	if err := b.measure(texts); err != nil {
		prof.stop()
		return err
	}
	if err := prof.stop(); err != nil {
		return err
	}
	rss, ok := peakRSS()
	if ok {
		b.add("peak_rss", float64(rss)/(1<<20), "MiB")
	}
	b.add("files", float64(fileBytes)/(1<<20), "MiB")
	if ok && fileBytes > 0 {
		b.add("peak_rss_over_files", float64(rss)/float64(fileBytes), "ratio")
	}
	return nil
}

// textInputs builds the text batch: texts of exactly textTokens prompt
// tokens each. It runs before the profiles start, which are about the
// engine, not about finding texts of a given length.
func (b *e2eRun) textInputs() ([]engine.Input, error) {
	c := b.cfg
	if c.texts == 0 {
		return nil, nil
	}
	pr, err := lmPrompter(c.lm)
	if err != nil {
		return nil, err
	}
	inputs := make([]engine.Input, c.texts)
	for i := range inputs {
		s, err := textOfTokens(pr, c.textTokens, uint64(i))
		if err != nil {
			return nil, err
		}
		inputs[i] = engine.TextInput(s)
	}
	return inputs, nil
}

// measure runs the measured text batch and images.
func (b *e2eRun) measure(texts []engine.Input) error {
	if len(texts) > 0 {
		if err := b.benchText(texts); err != nil {
			return err
		}
	}
	for _, size := range b.cfg.imageSizes {
		if err := b.benchImage(size); err != nil {
			return err
		}
	}
	return nil
}

func (b *e2eRun) warmUp() error {
	inputs := []engine.Input{engine.TextInput("warm up")}
	if slices.Contains(b.eng.Info().Modalities, "image") {
		img, err := photoImage(56, 0, b.cfg.imageFormat)
		if err != nil {
			return err
		}
		inputs = append(inputs, engine.ImageInput(img))
	}
	_, err := b.eng.Embed(context.Background(), engine.Request{Inputs: inputs})
	return err
}

// benchText embeds a batch of texts of exactly textTokens prompt tokens
// each and reports the throughput over all prompt tokens.
func (b *e2eRun) benchText(inputs []engine.Input) error {
	c := b.cfg
	want := c.texts * c.textTokens
	var secs, cpu []float64
	for r := 0; r < c.repeat; r++ {
		c0, _ := processCPU()
		start := time.Now()
		resp, err := b.eng.Embed(context.Background(), engine.Request{Inputs: inputs})
		if err != nil {
			return err
		}
		secs = append(secs, time.Since(start).Seconds())
		c1, _ := processCPU()
		cpu = append(cpu, (c1 - c0).Seconds())
		if resp.PromptTokens != want {
			return fmt.Errorf("text batch: the engine saw %d prompt tokens, the benchmark built %d", resp.PromptTokens, want)
		}
		fmt.Fprintf(b.w, "vembed bench: %d texts x %d tokens in %.2fs\n", c.texts, c.textTokens, secs[r])
	}
	r := medianIndex(secs)
	name := fmt.Sprintf("text_%dx%d", c.texts, c.textTokens)
	b.add(name+"_tokens_per_s", float64(want)/secs[r], "tokens/s")
	b.add(name+"_batch", secs[r], "s")
	b.addCPU(name+"_batch_cpu", cpu[r])
	return nil
}

// prompter counts the prompt tokens of a text input as the engine builds
// its prompt: the LM's tokenizer and recipe, the request defaults (no
// task, no instruction).
type prompter struct {
	tok  *tokenizer.Tokenizer
	rc   recipe.Recipe
	task recipe.Task
}

// lmPrompter loads the tokenizer and recipe the engine uses, from the LM
// GGUF.
func lmPrompter(path string) (*prompter, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := &prompter{}
	if p.tok, err = tokenizer.FromGGUF(f, tokenizer.Options{}); err != nil {
		return nil, err
	}
	if p.rc, err = recipe.Select(f); err != nil {
		return nil, err
	}
	if p.task, err = p.rc.Task(""); err != nil {
		return nil, err
	}
	return p, nil
}

// count returns the prompt length of text s.
func (p *prompter) count(s string) (int, error) {
	pr, err := p.rc.Prompt(p.tok, p.task, []tokenizer.Part{{Text: s}})
	if err != nil {
		return 0, err
	}
	return len(pr.IDs), nil
}

// benchWords are common English words; texts are random sequences of them,
// like prose to the tokenizer.
var benchWords = strings.Fields(`the of and to in is was for that with as on by at from
his her they which this have are were not but one all new more their first also after
time year two who people can only over such into other some than many most these city
water world system under between during state three where house number school music
river small light power early great line game story paper model image north field`)

// fillers are short texts, tried in order, that complete a prompt to its
// exact length when the next word would overshoot it.
var fillers = []string{" a", " I", ".", ",", "a", "1"}

// textOfTokens returns a text whose default prompt (for jina-v4 the
// retrieval query, "Query: " included; for Qwen3-VL-Embedding the
// instruction's chat prompt) is exactly n tokens long, built from words
// drawn with seed. The prompt is re-tokenized as a whole after each
// addition, since byte-level BPE may merge a word with its neighbours.
func textOfTokens(p *prompter, n int, seed uint64) (string, error) {
	count := p.count
	rng := rand.New(rand.NewPCG(seed, 7))
	var sb strings.Builder
	// No baseline from the empty text: a recipe may stand in for it
	// (Qwen3-VL writes NULL), so the first word is taken at any length
	// that fits.
	have := 0
	for have < n {
		grew := false
		cands := append([]string{" " + benchWords[rng.IntN(len(benchWords))]}, fillers...)
		for _, add := range cands {
			if sb.Len() == 0 {
				add = strings.TrimPrefix(add, " ") // the prompt's text starts here
			}
			k, err := count(sb.String() + add)
			if err != nil {
				return "", err
			}
			if k > have && k <= n {
				sb.WriteString(add)
				have, grew = k, true
				break
			}
		}
		switch {
		case !grew && sb.Len() == 0:
			return "", fmt.Errorf("text of %d tokens: the prompt around a one-word text is longer", n)
		case !grew:
			return "", fmt.Errorf("text of %d tokens: stuck at %d tokens", n, have)
		}
	}
	return sb.String(), nil
}

// stageClock records when the engine's trace points are reached: patches
// after preprocessing, the vision outputs after the vision tower, hidden
// states after the language model. It keeps no data.
type stageClock struct {
	start, pre, vision, lm time.Time
	patches, tokens        int
}

func (s *stageClock) Tensor(name string, _ []float32, shape ...int) error {
	now := time.Now()
	switch {
	case strings.HasSuffix(name, ".patches"):
		s.pre = now
		s.patches = shape[0]
	case strings.HasSuffix(name, ".vit_out"):
		s.vision = now
	case strings.HasSuffix(name, ".merger_out"):
		s.vision = now
		s.tokens = shape[0]
	case strings.HasSuffix(name, ".hidden_states"):
		s.lm = now
	}
	return nil
}

// benchImage embeds one square synthetic image of size×size pixels per
// request and reports the seconds of each stage.
func (b *e2eRun) benchImage(size int) error {
	data, err := photoImage(size, 0, b.cfg.imageFormat)
	if err != nil {
		return err
	}
	req := engine.Request{Inputs: []engine.Input{engine.ImageInput(data)}}
	var pre, vis, lm, total, cpu []float64
	var clk stageClock
	promptTokens := 0
	for r := 0; r < b.cfg.repeat; r++ {
		c0, _ := processCPU()
		clk = stageClock{start: time.Now()}
		req.Trace = &clk
		resp, err := b.eng.Embed(context.Background(), req)
		if err != nil {
			return fmt.Errorf("image %dx%d: %w", size, size, err)
		}
		end := time.Now()
		c1, _ := processCPU()
		cpu = append(cpu, (c1 - c0).Seconds())
		promptTokens = resp.PromptTokens
		if clk.pre.IsZero() || clk.vision.IsZero() || clk.lm.IsZero() {
			return fmt.Errorf("image %dx%d: the engine did not report its stages", size, size)
		}
		pre = append(pre, clk.pre.Sub(clk.start).Seconds())
		vis = append(vis, clk.vision.Sub(clk.pre).Seconds())
		lm = append(lm, clk.lm.Sub(clk.vision).Seconds())
		total = append(total, end.Sub(clk.start).Seconds())
		fmt.Fprintf(b.w, "vembed bench: image %dx%d (%d patches, %d tokens) in %.2fs: preprocess %.3fs, vision %.2fs, language model %.2fs\n",
			size, size, clk.patches, clk.tokens, total[r], pre[r], vis[r], lm[r])
	}
	if f := 28; size%f == 0 && clk.tokens != (size/f)*(size/f) {
		fmt.Fprintf(b.w, "vembed bench: note: the model's pixel budget (min %d, max %d pixels) resized the %dx%d image to %d merged tokens instead of %d\n",
			b.eng.Info().MinPixels, b.eng.Info().MaxPixels, size, size, clk.tokens, (size/f)*(size/f))
	}
	name := fmt.Sprintf("image_%d", size)
	b.add(name+"_patches", float64(clk.patches), "patches")
	b.add(name+"_tokens", float64(clk.tokens), "tokens")
	b.add(name+"_prompt_tokens", float64(promptTokens), "tokens")
	// The split is that of the median run, so that it adds up to the total.
	r := medianIndex(total)
	b.add(name+"_preprocess", pre[r], "s")
	b.add(name+"_vision", vis[r], "s")
	b.add(name+"_lm", lm[r], "s")
	b.add(name+"_total", total[r], "s/image")
	b.addCPU(name+"_total_cpu", cpu[r])
	return nil
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

// photoImage encodes a size×size image with the traits of a photograph:
// smooth colour gradients, a few soft shapes, edges and mild noise, so the
// decoder and resizer work as on real pictures (a flat image would
// compress to nothing and decode unrealistically fast). Different seeds
// give different pictures.
func photoImage(size, seed int, format string) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	rng := rand.New(rand.NewPCG(uint64(size), 11+uint64(seed)))
	fs := float64(size)
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			u, v := float64(x)/fs, float64(y)/fs
			r := 120 + 90*math.Sin(3*u+1) + 30*math.Cos(11*v)
			g := 110 + 80*math.Cos(4*v-2*u)
			bl := 140 + 70*math.Sin(6*u*v+0.5)
			if d := math.Hypot(u-0.6, v-0.4); d < 0.2 { // a disc with a hard edge
				r, g, bl = 230-200*d, 180-300*d, 40
			}
			if (x/(size/8+1)+y/(size/8+1))%5 == 0 { // stripes: high frequencies
				r, g, bl = r*0.6, g*0.6, bl*0.6
			}
			n := 12 * rng.NormFloat64()
			img.SetRGBA(x, y, color.RGBA{clampByte(r + n), clampByte(g + n), clampByte(bl + n), 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	}
	if err != nil {
		return nil, fmt.Errorf("bench image %dx%d: %w", size, size, err)
	}
	return buf.Bytes(), nil
}

func clampByte(v float64) uint8 {
	return uint8(math.Max(0, math.Min(255, math.Round(v))))
}
