package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/atomicfile"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/server"
)

func init() {
	register(&command{name: "embed", summary: "embeddings of texts, images and interleaved inputs", run: runEmbed})
}

// modelFlags are the model files shared by embed and serve.
type modelFlags struct {
	model, mmproj, mvproj string
	// pack is --pack, whose default is the value the command sets before
	// register: on for the commands that serve many passes (serve, eval).
	pack bool
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "", "language-model GGUF, or hf://org/repo/file.gguf or hf://org/repo (pulled from the Hugging Face Hub)")
	fs.StringVar(&m.mmproj, "mmproj", "", "vision-tower (mmproj) GGUF or hf:// file; omit for text only (with an hf:// --model: the repository's mmproj*.gguf)")
	fs.StringVar(&m.mvproj, "mvproj", "", "multi-vector projector GGUF (default: look in the model GGUF)")
	fs.BoolVar(&m.pack, "pack", m.pack, "pack Q8_0 weights at load for the VNNI kernel tiers: each pass then reads them as the kernels want them instead of decoding them (1.4x less CPU for a short query, 1.05-1.1x for long passes) for a load seconds longer and 1.06x the weights' memory")
}

// applyPacking sets whether this process packs weights at load (--pack):
// packing costs seconds at load (decoding every weight once and touching
// memory of the weights' size) and saves a fraction of every pass, so it
// pays for a server and not for a command that embeds a few inputs once.
func (m *modelFlags) applyPacking() { kernels.SetPacking(m.pack) }

func (m *modelFlags) config() engine.Config {
	return engine.Config{Model: m.model, MMProj: m.mmproj, MVProj: m.mvproj}
}

// resolve gives the engine configuration of the model flags for command
// cmd: the files named (hf:// references pulled and converted), or without
// --model the demonstration model, written to a temporary folder that
// cleanup removes and announced loudly on stderr. cleanup is never nil.
// The caller has checked that --mmproj and --mvproj come with --model.
func (m *modelFlags) resolve(ctx context.Context, cmd string, stderr io.Writer) (cfg engine.Config, cleanup func(), err error) {
	cleanup = func() {}
	if m.model != "" {
		if err := m.resolveRefs(ctx, stderr, nil); err != nil {
			return cfg, cleanup, err
		}
		return m.config(), cleanup, nil
	}
	dir, err := os.MkdirTemp("", "vembed-demo-")
	if err != nil {
		return cfg, cleanup, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if err := writeDemoModel(dir, &cfg); err != nil {
		cleanup()
		return cfg, func() {}, fmt.Errorf("building the demo model: %w", err)
	}
	fmt.Fprintf(stderr, "vembed %s: no --model given: using the DEMO model with RANDOM WEIGHTS; its embeddings carry no meaning\n", cmd)
	return cfg, cleanup, nil
}

// oneCaller sizes the scheduler's steps for the commands whose only caller
// is the command itself (embed, rerank, eval, bench --model): no query
// can arrive behind a step, so steps are as large as the batch limits
// allow and the weights are read once per pass of up to MaxBatchTokens
// tokens instead of once per step of about a second (on a 2B Q8_0 model,
// sixteen texts of 137 tokens took half the time). Nothing of theirs is
// shared with another process, so the engine identifies the model files
// without hashing them (engine.Config.LocalIdentity): reading every byte
// took 3.5 CPU-seconds of a 14-second image embedding.
func oneCaller(cfg engine.Config) engine.Config {
	cfg.StepTarget = time.Hour
	cfg.LocalIdentity = true
	return cfg
}

// inputFlag appends to a shared list so that --text, --image and --input
// keep their command-line order.
type inputFlag struct {
	kind string
	list *[]inputSpec
}

type inputSpec struct{ kind, value string }

func (f inputFlag) String() string { return "" }

func (f inputFlag) Set(s string) error {
	*f.list = append(*f.list, inputSpec{f.kind, s})
	return nil
}

const embedUsage = `[--model LM.gguf [--mmproj MMPROJ.gguf] [--mvproj MV.gguf]] [--task T | --instruction TEXT] [--dimensions N]
       [--multivector] [--min-pixels N] [--max-pixels N] [--json] [--dump DIR]
       (--text S | --image PATH | --input JSON)...

Without --model, the built-in demo model (random weights, as vembed serve
uses) embeds the inputs: the vectors are well-formed but meaningless.
Prints one embedding per input, in the order given: by default one line of
space-separated values per input (multi-vector: one line per token, a blank
line between inputs); with --json {"embeddings": [...]}.
--input takes one item in any form of the server's "input" elements, e.g. the
interleaved '[{"text":"a"},{"image":"cat.png"}]' or the expert
'{"template":"…<|vision_start|><|image_pad|><|vision_end|>…","images":["cat.png"]}';
its images are file paths, data URIs or base64.`

func runEmbed(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("embed", embedUsage, stderr)
	var mf modelFlags
	mf.register(fs)
	var specs []inputSpec
	fs.Var(inputFlag{"text", &specs}, "text", "a text input (repeatable)")
	fs.Var(inputFlag{"image", &specs}, "image", "an image file input (repeatable)")
	fs.Var(inputFlag{"input", &specs}, "input", "an input as JSON: a string, an item object or a list of parts (repeatable)")
	task := fs.String("task", "", "retrieval.query, retrieval.passage, text-matching, code.query or code.passage (default: retrieval, query for text, passage for images)")
	instruction := fs.String("instruction", "", "the instruction of models that take one instead of a task (GME: a query's, Qwen3-VL-Embedding; default: the model's)")
	dims := fs.Int("dimensions", 0, "Matryoshka truncation of single vectors (0: full width)")
	multi := fs.Bool("multivector", false, "one vector per token (needs a projector)")
	minPix := fs.Int("min-pixels", 0, "lower bound of the resized image area, within the model's bounds (0: the model's minimum)")
	maxPix := fs.Int("max-pixels", 0, "upper bound of the resized image area, within the model's bounds (0: the model's maximum)")
	asJSON := fs.Bool("json", false, `print {"embeddings": [...]}`)
	dump := fs.String("dump", "", "write intermediate tensors (little-endian float32) and index.json to this directory")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "vembed embed: unexpected argument %q (use --text, --image or --input)\n", pos[0])
		return errUsage
	}
	if len(specs) == 0 {
		return usageError(fs, stderr, "nothing to embed: give --text, --image or --input")
	}
	req := engine.Request{Task: *task, Instruction: *instruction, Dimensions: *dims, Multivector: *multi, MinPixels: *minPix, MaxPixels: *maxPix}
	for _, s := range specs {
		in, err := parseSpec(s)
		if err != nil {
			return err
		}
		req.Inputs = append(req.Inputs, in)
	}
	var d *dumper
	if *dump != "" {
		if d, err = newDumper(*dump); err != nil {
			return err
		}
		req.Trace = d
	}
	if mf.model == "" && (mf.mmproj != "" || mf.mvproj != "") {
		return usageError(fs, stderr, "--mmproj and --mvproj need --model")
	}
	cfg, cleanup, err := mf.resolve(context.Background(), "embed", stderr)
	defer cleanup()
	if err != nil {
		return err
	}
	mf.applyPacking()
	eng, err := loadEngine(stderr, oneCaller(cfg))
	if err != nil {
		return err
	}
	defer eng.Close()
	resp, err := eng.Embed(context.Background(), req)
	if err != nil {
		return err
	}
	if d != nil {
		for i, e := range resp.Embeddings {
			if e.Vector != nil {
				if err := d.Tensor(fmt.Sprintf("input%d.embedding", i), e.Vector, len(e.Vector)); err != nil {
					return err
				}
			}
		}
		if err := d.finish(); err != nil {
			return err
		}
	}
	return writeEmbeddings(stdout, resp, *asJSON)
}

func parseSpec(s inputSpec) (engine.Input, error) {
	switch s.kind {
	case "text":
		if s.value == "" {
			return engine.Input{}, errors.New("--text: empty text")
		}
		return engine.TextInput(s.value), nil
	case "image":
		b, err := os.ReadFile(s.value)
		if err != nil {
			return engine.Input{}, fmt.Errorf("--image: %w", err)
		}
		return engine.ImageInput(b), nil
	}
	in, err := server.ParseInput(json.RawMessage(s.value), cliImage)
	if err != nil {
		return engine.Input{}, fmt.Errorf("--input %s: %w", s.value, err)
	}
	return in, nil
}

// cliImage reads the image of an --input item: a file path when such a file
// exists, else a data URI or base64.
func cliImage(s string) ([]byte, error) {
	if !strings.HasPrefix(s, "data:") {
		if st, err := os.Stat(s); err == nil && st.Mode().IsRegular() {
			return os.ReadFile(s)
		}
	}
	b, err := server.DecodeImageString(s)
	if err != nil {
		short := s
		if len(short) > 40 {
			short = short[:40] + "…"
		}
		return nil, fmt.Errorf("image %q is not a readable file, and as data: %w", short, err)
	}
	return b, nil
}

func writeEmbeddings(w io.Writer, resp *engine.Response, asJSON bool) error {
	if asJSON {
		out := make([]any, len(resp.Embeddings))
		for i, e := range resp.Embeddings {
			if e.Multi != nil {
				out[i] = e.Multi
			} else {
				out[i] = e.Vector
			}
		}
		b, err := json.Marshal(map[string]any{"embeddings": out})
		if err != nil {
			return fmt.Errorf("encoding output: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	var buf []byte
	for i, e := range resp.Embeddings {
		if e.Multi == nil {
			buf = appendVector(buf, e.Vector)
			continue
		}
		if i > 0 {
			buf = append(buf, '\n')
		}
		for _, row := range e.Multi {
			buf = appendVector(buf, row)
		}
	}
	_, err := w.Write(buf)
	return err
}

// appendVector writes v as one line; each value is the shortest decimal
// that reads back as the same float32.
func appendVector(b []byte, v []float32) []byte {
	for k, x := range v {
		if k > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, '\n')
}

// dumper writes traced tensors as raw little-endian float32 files plus an
// index.json listing name, file, dtype and shape, the fixture convention.
type dumper struct {
	dir     string
	entries []dumpEntry
}

type dumpEntry struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

func newDumper(dir string) (*dumper, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--dump: %w", err)
	}
	return &dumper{dir: dir}, nil
}

// Tensor implements engine.Tracer.
func (d *dumper) Tensor(name string, data []float32, shape ...int) error {
	file := name + ".f32"
	b := make([]byte, 4*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	if err := atomicfile.WriteFile(filepath.Join(d.dir, file), b); err != nil {
		return fmt.Errorf("--dump: %w", err)
	}
	d.entries = append(d.entries, dumpEntry{Name: name, File: file, DType: "float32", Shape: shape})
	return nil
}

func (d *dumper) finish() error {
	b, err := json.MarshalIndent(map[string]any{"tensors": d.entries}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(d.dir, "index.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("--dump: %w", err)
	}
	return nil
}
