package quantize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/vembed/vembed/gguf"
)

// chunkValues is the number of values converted per work item (rows are
// never split), so memory stays near workers × 4 MiB whatever the model.
const chunkValues = 1 << 20

// Options control File.
type Options struct {
	// Spec is the target encoding.
	Spec Spec
	// Keep names the vision tensor groups that stay in their input type
	// when an mmproj file is quantized to a block type; nil means
	// DefaultKeep. Ignored for language-model files.
	Keep []Group
	// Workers is the number of goroutines encoding (0: 1).
	Workers int
	// Progress, when set, is called after each chunk with the input bytes
	// converted so far and their total.
	Progress func(done, total int64)
	// Log receives warnings (re-quantization, fallbacks); nil discards them.
	Log *slog.Logger
}

// TensorPlan is what File does with one tensor.
type TensorPlan struct {
	Name     string
	Dims     []int64
	From, To gguf.Type
	// Why says why To is not the spec's base type ("" when it is): "kept"
	// (not a weight matrix, or a kept vision group), "mix" or "fallback".
	Why string
}

// Report summarizes a finished File run.
type Report struct {
	Arch            string
	Tensors         []TensorPlan
	InBytes         int64 // tensor bytes read
	OutBytes        int64 // tensor bytes written
	Requantized     int   // tensors decoded from a block type and encoded again
	Fallbacks       int   // tensors whose rows fit no block of their chosen type
	VisionKeptGroup []Group
}

// File re-encodes the GGUF at in as opts.Spec and writes it to out: one
// tensor at a time, in row chunks, through a temporary file beside out
// that is renamed only once complete, so a failed or cancelled run leaves
// no partial file. Metadata are kept, with general.file_type (and
// general.quantization_version for block types) set for the new encoding.
func File(ctx context.Context, in, out string, opts Options) (*Report, error) {
	if same, err := samePath(in, out); err != nil {
		return nil, err
	} else if same {
		return nil, fmt.Errorf("quantize: output %s is the input file", out)
	}
	f, err := gguf.Open(in)
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	defer f.Close()
	// The input is mapped from the file by gguf.Open: pages already
	// converted may be dropped (never so for Write's caller's memory).
	w, rep, err := writer(ctx, f, opts, true)
	if err != nil {
		return nil, err
	}
	if err := w.WriteFile(out); err != nil {
		return nil, fmt.Errorf("quantize: %s: %w", out, err)
	}
	return rep, nil
}

// Write re-encodes f as opts.Spec into dst, as File does but without a
// temporary file: a failed run leaves dst partly written.
func Write(ctx context.Context, f *gguf.File, dst io.Writer, opts Options) (*Report, error) {
	w, rep, err := writer(ctx, f, opts, false)
	if err != nil {
		return nil, err
	}
	if _, err := w.WriteTo(dst); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	return rep, nil
}

// writer plans f's conversion and returns the gguf.Writer that streams it;
// mapped says f's tensor data are a file mapping whose converted pages may
// be released.
func writer(ctx context.Context, f *gguf.File, opts Options, mapped bool) (*gguf.Writer, *Report, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rep, err := Plan(f, opts)
	if err != nil {
		return nil, nil, err
	}
	warnSummary(log, rep)

	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		w.Add(kv.Key, kv.Value)
	}
	w.Add("general.file_type", opts.Spec.FileType())
	if opts.Spec.Quantized() {
		w.Add("general.quantization_version", uint32(2))
	}
	var total int64
	for _, t := range f.Tensors {
		total += int64(len(t.Data))
	}
	c := &converter{ctx: ctx, workers: max(opts.Workers, 1), total: total, progress: opts.Progress, mapped: mapped}
	for i, p := range rep.Tensors {
		t := f.Tensors[i]
		if err := w.AddTensorFunc(p.Name, p.To, p.Dims, func(dst io.Writer) error { return c.tensor(dst, t, p.To) }); err != nil {
			return nil, nil, fmt.Errorf("quantize: %w", err)
		}
		rep.OutBytes += tensorSize(p.To, p.Dims)
	}
	rep.InBytes = total
	return w, rep, nil
}

// warnSummary logs one line per kind of re-quantization and fallback, with
// the number of tensors and the first one's name, rather than one per
// tensor.
func warnSummary(log *slog.Logger, rep *Report) {
	type key struct {
		requant  bool
		from, to gguf.Type
		row      int64
	}
	count := map[key]int{}
	var order []key
	first := map[key]string{}
	for _, p := range rep.Tensors {
		var k key
		switch {
		case p.From.BlockSize() > 1 && p.To != p.From:
			k = key{requant: true, from: p.From, to: p.To}
		case p.Why == "fallback":
			k = key{to: p.To, row: p.Dims[0]}
		default:
			continue
		}
		if count[k] == 0 {
			order = append(order, k)
			first[k] = p.Name
		}
		count[k]++
	}
	for _, k := range order {
		if k.requant {
			log.Warn("input already quantized: dequantized and quantized again, which loses more than quantizing the original weights",
				"tensors", count[k], "first", first[k], "from", k.from.String(), "to", k.to.String())
		} else {
			log.Warn("rows fit no block of the chosen type: fallback type used",
				"tensors", count[k], "first", first[k], "row", k.row, "type", k.to.String())
		}
	}
}

func samePath(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, fmt.Errorf("quantize: %w", err)
	}
	sb, err := os.Stat(b)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("quantize: %w", err)
	}
	return os.SameFile(sa, sb), nil
}

// tensorSize is the byte size of a tensor already validated by the writer.
func tensorSize(t gguf.Type, dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	return n / int64(t.BlockSize()) * int64(t.TypeSize())
}

// Plan decides every tensor's output type without writing anything.
func Plan(f *gguf.File, opts Options) (*Report, error) {
	arch, _ := f.String("general.architecture")
	spec := opts.Spec
	if spec.Name == "" {
		return nil, errors.New("quantize: no target type")
	}
	rep := &Report{Arch: arch}
	switch arch {
	case "mvproj":
		if spec.Quantized() {
			return nil, fmt.Errorf("quantize: a multi-vector projector (mvproj) stays F32, F16 or BF16, not %s", spec.Name)
		}
	case "clip":
		if spec.Mix != "" {
			// llama-quantize's mixes are defined by LM roles; a vision
			// encoder takes the base type with its kept groups instead.
			spec = Spec{Name: spec.Base.String(), Base: spec.Base}
		}
		keep := opts.Keep
		if keep == nil {
			keep = DefaultKeep
		}
		rep.VisionKeptGroup = keep
	}
	nLayers := blockCount(f, arch)
	tied := f.Tensor("output.weight") == nil
	for _, t := range f.Tensors {
		p := TensorPlan{Name: t.Name, Dims: t.Dims, From: t.Type, To: t.Type}
		matrix := isWeightMatrix(t) || (arch == "clip" && VisionGroup(t.Name) == GroupPatch && len(t.Dims) >= 2)
		switch {
		case !matrix:
			if p.From != spec.Base {
				p.Why = "kept"
			}
		case arch == "clip" && spec.Quantized() && keeps(rep.VisionKeptGroup, VisionGroup(t.Name)):
			p.Why = "kept"
		case !spec.Quantized():
			p.To = spec.Base
		default:
			r := RoleOther
			if arch != "clip" {
				r = RoleOf(t.Name, tied)
			}
			chosen := spec.Base
			if spec.Mix != "" {
				chosen = spec.mixType(r, t.Dims[0], layerOf(t.Name), nLayers)
			}
			p.To = Fallback(chosen, t.Dims[0])
			switch {
			case p.To != chosen:
				p.Why = "fallback"
				rep.Fallbacks++
			case p.To != spec.Base:
				p.Why = "mix"
			}
		}
		if !gguf.CanDequantize(p.From) && p.To != p.From {
			return nil, fmt.Errorf("quantize: tensor %q: cannot decode its type %s", t.Name, p.From)
		}
		if p.From.BlockSize() > 1 && p.To != p.From {
			rep.Requantized++
		}
		rep.Tensors = append(rep.Tensors, p)
	}
	return rep, nil
}

// isWeightMatrix is llama-quantize's test of a tensor it may quantize: a
// weight of two or more dimensions that is not a norm, a position
// embedding or a token-type table.
func isWeightMatrix(t *gguf.Tensor) bool {
	n := t.Name
	switch {
	case !strings.HasSuffix(n, "weight"), len(t.Dims) < 2,
		strings.Contains(n, "_norm.weight"), strings.Contains(n, "position_embd"),
		n == "token_types.weight":
		return false
	}
	switch t.Type {
	case gguf.TypeI8, gguf.TypeI16, gguf.TypeI32, gguf.TypeI64, gguf.TypeF64:
		return false
	}
	return true
}

func keeps(groups []Group, g Group) bool {
	for _, k := range groups {
		if k == g {
			return true
		}
	}
	return false
}

// blockCount is the LM's <arch>.block_count, or the number of blk.N.
// prefixes when absent.
func blockCount(f *gguf.File, arch string) int {
	if n, err := f.Uint(arch + ".block_count"); err == nil && n > 0 && n < 1<<20 {
		return int(n)
	}
	n := 0
	for _, t := range f.Tensors {
		n = max(n, layerOf(t.Name)+1)
	}
	return n
}

// layerOf is the N of a "blk.N." or "v.blk.N." name, or -1.
func layerOf(name string) int {
	name = strings.TrimPrefix(name, "v.")
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// converter re-encodes tensors chunk by chunk on a few goroutines.
type converter struct {
	ctx      context.Context
	workers  int
	total    int64
	done     int64
	progress func(done, total int64)
	mapped   bool
}

// release drops converted input pages from memory when the input is a
// file mapping.
func (c *converter) release(b []byte) {
	if c.mapped {
		release(b)
	}
}

// tensor writes t's values encoded as to. Identical types are copied.
func (c *converter) tensor(dst io.Writer, t *gguf.Tensor, to gguf.Type) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if t.Type == to {
		for off := 0; off < len(t.Data); off += chunkValues {
			if err := c.ctx.Err(); err != nil {
				return err
			}
			end := min(off+chunkValues, len(t.Data))
			if _, err := dst.Write(t.Data[off:end]); err != nil {
				return err
			}
			c.release(t.Data[off:end])
			c.advance(int64(end - off))
		}
		return nil
	}
	nx := t.Dims[0]
	if t.NumElements() == 0 {
		return nil
	}
	rows := t.NumElements() / nx
	rowsPer := max(1, chunkValues/nx)
	inRow, err := t.Type.RowBytes(int(nx))
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	type job struct {
		r0, n int64
		out   []byte
		err   error
	}
	batch := make([]job, c.workers)
	bufs := make([][]float32, c.workers)
	for r := int64(0); r < rows; {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		k := 0
		for ; k < c.workers && r < rows; k++ {
			n := min(rowsPer, rows-r)
			batch[k] = job{r0: r, n: n}
			r += n
		}
		var wg sync.WaitGroup
		for i := range k {
			wg.Add(1)
			go func(j *job, buf *[]float32) {
				defer wg.Done()
				vals := int(j.n * nx)
				if cap(*buf) < vals {
					*buf = make([]float32, vals)
				}
				v := (*buf)[:vals]
				src := t.Data[j.r0*int64(inRow) : (j.r0+j.n)*int64(inRow)]
				if j.err = gguf.Dequantize(t.Type, src, v); j.err != nil {
					return
				}
				j.out, j.err = gguf.Quantize(to, v)
			}(&batch[i], &bufs[i])
		}
		wg.Wait()
		for i := range k {
			j := &batch[i]
			if j.err != nil {
				return fmt.Errorf("tensor %q rows %d-%d: %w", t.Name, j.r0, j.r0+j.n-1, j.err)
			}
			if _, err := dst.Write(j.out); err != nil {
				return err
			}
			c.release(t.Data[j.r0*int64(inRow) : (j.r0+j.n)*int64(inRow)])
			c.advance(j.n * int64(inRow))
		}
	}
	return nil
}

func (c *converter) advance(n int64) {
	c.done += n
	if c.progress != nil {
		c.progress(c.done, c.total)
	}
}
