package synth

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
)

// Files are streamed through qwenlayout.WriteFile: the writer encodes the
// header and tensor infos first, then every tensor is generated, encoded and
// written in row chunks, so a multi-gigabyte model never sits in memory.

// chunkValues is the number of values generated per work item (rows are
// never split).
const chunkValues = 1 << 18

// fileSpec is a planned file with its values still to be drawn from seed.
type fileSpec struct {
	*qwenlayout.Layout
	seed uint64
	std  float32
}

// chunk is one work item: whole rows of one tensor.
type chunk struct {
	t          *qwenlayout.TensorLayout
	index      int64 // chunk number within the tensor (part of its seed)
	rows       int64
	lastOfTens bool
	out        chan chunkResult
}

type chunkResult struct {
	data []byte
	err  error
}

// tensorStream derives the random stream of a tensor chunk from the file
// seed, the tensor name and the chunk number, so values depend neither on
// the order of tensors in the file nor on the number of workers.
func tensorStream(seed uint64, name string, index int64) *rand.Rand {
	h := fnv.New64a()
	io.WriteString(h, name)
	return rand.New(rand.NewPCG(seed, h.Sum64()+uint64(index)*0x9E3779B97F4A7C15))
}

// generate draws and encodes one chunk.
func (f *fileSpec) generate(c *chunk, vals []float32) ([]byte, error) {
	n := c.rows * c.t.NE[0]
	vals = vals[:n]
	rng := tensorStream(f.seed, c.t.Name, c.index)
	std := float64(f.std)
	base := 0.0
	if c.t.Norm {
		base = 1
	}
	for i := range vals {
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		vals[i] = float32(base + float64(std*rng.NormFloat64()))
	}
	if strings.HasSuffix(c.t.Name, ".ssm_a") {
		// Qwen3.5's −exp(A_log): a DeltaNet state must decay, never grow.
		for i, v := range vals {
			vals[i] = -float32(math.Exp(float64(v)))
		}
	}
	if c.t.Type == gguf.TypeF32 {
		out := make([]byte, 4*n)
		for i, v := range vals {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	}
	out, err := gguf.Quantize(c.t.Type, vals)
	if err != nil {
		return nil, fmt.Errorf("synth: tensor %q as %s: %w", c.t.Name, c.t.Type, err)
	}
	return out, nil
}

// write streams the file to path (via a temporary file renamed when
// complete).
func (f *fileSpec) write(path string, workers int, progress func(file string, done, total int64)) error {
	s := f.start(workers)
	defer s.stop()
	if progress != nil {
		for _, t := range f.Tensors {
			s.total += t.Elements()
		}
		s.progress = func(done, total int64) { progress(filepath.Base(path), done, total) }
	}
	if err := qwenlayout.WriteFile(path, f.Layout, s.fill); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// stream generates the chunks of a file's tensors in file order on a pool
// of workers, ahead of the writer by a bounded number of chunks.
type stream struct {
	order chan *chunk // chunks in file order, each with its pending result
	done  chan struct{}
	wg    sync.WaitGroup
	// progress, when set, hears of each chunk written: values so far
	// (written) out of total.
	progress       func(done, total int64)
	written, total int64
}

func (f *fileSpec) start(workers int) *stream {
	workers = max(workers, 1)
	s := &stream{
		order: make(chan *chunk, 2*workers+2), // bounds the chunks in flight
		done:  make(chan struct{}),
	}
	work := make(chan *chunk)
	s.wg.Add(1)
	go func() { // producer: chunks in file order
		defer s.wg.Done()
		defer close(s.order)
		defer close(work)
		for i := range f.Tensors {
			t := &f.Tensors[i]
			rowsPer := max(1, chunkValues/t.NE[0])
			nrows := t.Elements() / t.NE[0]
			for idx, r0 := int64(0), int64(0); r0 < nrows; idx, r0 = idx+1, r0+rowsPer {
				c := &chunk{t: t, index: idx, rows: min(rowsPer, nrows-r0), out: make(chan chunkResult, 1)}
				c.lastOfTens = r0+c.rows >= nrows
				select {
				case s.order <- c:
				case <-s.done:
					return
				}
				select {
				case work <- c:
				case <-s.done:
					return
				}
			}
		}
	}()
	for range workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var vals []float32
			for c := range work {
				if need := int(c.rows * c.t.NE[0]); cap(vals) < need {
					vals = make([]float32, need)
				}
				data, err := f.generate(c, vals)
				c.out <- chunkResult{data, err}
			}
		}()
	}
	return s
}

// fill writes t's bytes: the next chunks in file order, which must be
// t's, since the writer asks for tensors in the same order the producer
// generates them.
func (s *stream) fill(t qwenlayout.TensorLayout, dst io.Writer) error {
	if t.Elements() == 0 {
		return nil // no chunks were made for it
	}
	for c := range s.order {
		r := <-c.out
		if r.err != nil {
			return r.err
		}
		if c.t.Name != t.Name {
			return fmt.Errorf("synth: tensor %q: got a chunk of %q", t.Name, c.t.Name)
		}
		if _, err := dst.Write(r.data); err != nil {
			return err
		}
		if s.progress != nil {
			s.written += c.rows * t.NE[0]
			s.progress(s.written, s.total)
		}
		if c.lastOfTens {
			return nil
		}
	}
	return fmt.Errorf("synth: tensor %q: generation stopped early", t.Name)
}

// stop ends generation, whether or not every chunk was consumed, and waits
// for the producer and workers; chunks already in flight complete into
// their buffered result channels.
func (s *stream) stop() {
	close(s.done)
	for range s.order {
	}
	s.wg.Wait()
}
