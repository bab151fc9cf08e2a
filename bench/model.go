package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/tokenizer"
)

// The end-to-end benchmark of "vembed bench --model": text throughput,
// seconds per image with the stage split, and peak memory, all through the
// engine's own Embed (tokenizing, preprocessing, vision tower, language
// model, pooling), so the figures are what a client of the engine sees.

// ModelFigure is one end-to-end measurement: a throughput or a latency of
// a model on this machine.
type ModelFigure struct {
	Model string  `json:"model,omitempty"` // which model file(s) it ran
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// ModelConfig is one run of the end-to-end benchmark.
type ModelConfig struct {
	// LM and MMProj are the model files; both empty: the tiny synthetic
	// model, written to a temporary directory.
	LM, MMProj string
	// Texts texts of TextTokens prompt tokens each (the task prefix
	// included) are embedded in one request.
	Texts, TextTokens int
	// ImageSizes are the sides of the square synthetic images, one
	// request each, encoded as ImageFormat (jpeg or png).
	ImageSizes  []int
	ImageFormat string
	// Repeat runs each measurement; the median is reported.
	Repeat int
	// Unpacked loads without packing weights (as vembed embed does; vembed
	// serve packs).
	Unpacked bool
	// CPUProfile and MemProfile, when set, are where the profiles of the
	// measured runs go (profile.go says what each covers).
	CPUProfile, MemProfile string
	// Load loads the engine from a configuration naming the model files
	// and no caches (every measured run must compute, not replay the
	// first); the command's sizes the scheduler for its single caller, as
	// vembed embed does.
	Load Loader
	// Log receives progress lines.
	Log io.Writer
}

// maxBenchTexts bounds the text batch: the batch is held in memory and
// each text costs a full language-model pass.
const maxBenchTexts = 4096

// Check reports the first setting of c out of range.
func (c *ModelConfig) Check() error {
	switch {
	case c.LM == "" && c.MMProj != "", c.LM != "" && c.MMProj == "":
		return errors.New("--lm and --mmproj go together")
	case c.Texts < 0 || c.Texts > maxBenchTexts:
		return fmt.Errorf("--texts %d out of range 0..%d", c.Texts, maxBenchTexts)
	case c.Texts > 0 && (c.TextTokens < 1 || c.TextTokens > tokenizer.MaxPromptTokens):
		return fmt.Errorf("--text-tokens %d out of range 1..%d", c.TextTokens, tokenizer.MaxPromptTokens)
	case c.Repeat < 1 || c.Repeat > 1000:
		return fmt.Errorf("--repeat %d out of range 1..1000", c.Repeat)
	case c.ImageFormat != "jpeg" && c.ImageFormat != "png":
		return fmt.Errorf("--image-format %q: want jpeg or png", c.ImageFormat)
	}
	for _, s := range c.ImageSizes {
		if s < 28 || s > 4096 {
			return fmt.Errorf("--images: size %d out of range 28..4096", s)
		}
	}
	return nil
}

// Model runs the end-to-end benchmark of c and returns its figures.
// Without c.LM it writes the tiny synthetic model first, and every
// figure says so.
func Model(c ModelConfig) ([]ModelFigure, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	w := logTo(c.Log)
	label := strings.TrimSuffix(filepath.Base(c.LM), ".gguf")
	if c.LM == "" {
		dir, err := os.MkdirTemp("", "vembed-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg, err := synth.Preset("tiny")
		if err != nil {
			return nil, err
		}
		if c.LM, c.MMProj, err = synth.WritePair(dir, cfg); err != nil {
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
	cfg   ModelConfig
	w     io.Writer
	label string
	eng   *engine.Engine
	figs  []ModelFigure
}

func (b *e2eRun) add(name string, v float64, unit string) {
	b.figs = append(b.figs, ModelFigure{Model: b.label, Name: name, Value: round4(v), Unit: unit})
}

// addCPU adds a figure of process CPU time, which on a shared machine
// says how much work a run was when the wall clock says how long others
// let it take; left out where the system does not report it.
func (b *e2eRun) addCPU(name string, secs float64) {
	if _, ok := processCPU(); ok {
		b.add(name, secs, "cpu-s")
	}
}

func (b *e2eRun) run() error {
	c := b.cfg
	var fileBytes int64
	for _, p := range []string{c.LM, c.MMProj} {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		fileBytes += st.Size()
	}
	kernels.SetPacking(!c.Unpacked)
	start := time.Now()
	// No caches: every measured run must compute, not replay the first.
	eng, err := c.Load.load(engine.Config{Model: c.LM, MMProj: c.MMProj, EmbeddingCacheBytes: -1, EncoderCacheBytes: -1, ImageCacheBytes: -1})
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
	prof, err := startProfiles(c.CPUProfile, c.MemProfile)
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
	if c.Texts == 0 {
		return nil, nil
	}
	pr, err := lmPrompter(c.LM)
	if err != nil {
		return nil, err
	}
	inputs := make([]engine.Input, c.Texts)
	for i := range inputs {
		s, err := textOfTokens(pr, c.TextTokens, uint64(i))
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
	for _, size := range b.cfg.ImageSizes {
		if err := b.benchImage(size); err != nil {
			return err
		}
	}
	return nil
}

func (b *e2eRun) warmUp() error {
	inputs := []engine.Input{engine.TextInput("warm up")}
	if slices.Contains(b.eng.Info().Modalities, "image") {
		img, err := synth.Photo(56, 0, b.cfg.ImageFormat)
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
	want := c.Texts * c.TextTokens
	var secs, cpu []float64
	for r := 0; r < c.Repeat; r++ {
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
		fmt.Fprintf(b.w, "vembed bench: %d texts x %d tokens in %.2fs\n", c.Texts, c.TextTokens, secs[r])
	}
	r := medianIndex(secs)
	name := fmt.Sprintf("text_%dx%d", c.Texts, c.TextTokens)
	b.add(name+"_tokens_per_s", float64(want)/secs[r], "tokens/s")
	b.add(name+"_batch", secs[r], "s")
	b.addCPU(name+"_batch_cpu", cpu[r])
	return nil
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
	data, err := synth.Photo(size, 0, b.cfg.ImageFormat)
	if err != nil {
		return err
	}
	req := engine.Request{Inputs: []engine.Input{engine.ImageInput(data)}}
	var pre, vis, lm, total, cpu []float64
	var clk stageClock
	promptTokens := 0
	for r := 0; r < b.cfg.Repeat; r++ {
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
