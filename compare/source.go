package compare

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/kernels"
)

// Source produces the trace of the i-th image.
type Source interface {
	Trace(ctx context.Context, i int, image []byte) (*Trace, error)
	// Name describes the side in the report.
	Name() string
	Close() error
}

// Open opens a side: a dump directory (holding index.json) or
// "LM.gguf,MMPROJ.gguf[@TIER]".
func Open(spec string) (Source, error) {
	if st, err := os.Stat(spec); err == nil && st.IsDir() {
		return openDump(spec)
	}
	files, tier, _ := strings.Cut(spec, "@")
	lm, mm, ok := strings.Cut(files, ",")
	if !ok || lm == "" || mm == "" {
		return nil, fmt.Errorf("compare: %q: want a dump directory or LM.gguf,MMPROJ.gguf[@TIER]", spec)
	}
	if tier != "" && !tierKnown(kernels.Tier(tier)) {
		return nil, fmt.Errorf("compare: %q: kernel tier %q is not available here (%v)", spec, tier, kernels.Available())
	}
	e, err := engine.New(engine.Config{Model: lm, MMProj: mm, EmbeddingCacheBytes: -1, EncoderCacheBytes: -1, ImageCacheBytes: -1, LocalIdentity: true})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return &engineSource{e: e, tier: kernels.Tier(tier), name: spec}, nil
}

func tierKnown(t kernels.Tier) bool {
	for _, a := range kernels.Available() {
		if a == t {
			return true
		}
	}
	return false
}

type engineSource struct {
	e    *engine.Engine
	tier kernels.Tier // "" keeps the active one
	name string
}

func (s *engineSource) Name() string { return s.name }
func (s *engineSource) Close() error { return s.e.Close() }

// Trace runs the image alone through the engine, under the side's kernel
// tier (set for the call: the two sides run one after the other).
func (s *engineSource) Trace(ctx context.Context, i int, image []byte) (*Trace, error) {
	if s.tier != "" {
		saved := kernels.Active()
		kernels.Use(s.tier)
		defer kernels.Use(saved)
	}
	col := collector{}
	resp, err := s.e.Embed(ctx, engine.Request{Inputs: []engine.Input{engine.ImageInput(image)}, Trace: col})
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", s.name, err)
	}
	col["input0.embedding"] = tensor{data: resp.Embeddings[0].Vector, shape: []int{len(resp.Embeddings[0].Vector)}}
	return col.trace(0)
}

type tensor struct {
	data  []float32
	shape []int
}

// collector keeps traced tensors by name.
type collector map[string]tensor

// Tensor implements engine.Tracer.
func (c collector) Tensor(name string, data []float32, shape ...int) error {
	c[name] = tensor{append([]float32(nil), data...), shape}
	return nil
}

// trace assembles input i's tensors.
func (c collector) trace(i int) (*Trace, error) {
	p := fmt.Sprintf("input%d.", i)
	t := &Trace{Merge: 2}
	g, ok := c[p+"image0.grid"]
	if !ok || len(g.data) != 3 {
		return nil, fmt.Errorf("compare: input %d: no image grid traced", i)
	}
	for k := range 3 {
		t.Grid[k] = int(g.data[k])
	}
	rows := func(name string) Rows {
		x, ok := c[p+name]
		if !ok || len(x.shape) != 2 || x.shape[1] <= 0 || len(x.data) != x.shape[0]*x.shape[1] {
			return Rows{}
		}
		return Rows{Data: x.data, Cols: x.shape[1]}
	}
	t.Patches, t.VitOut, t.Merger, t.Hidden = rows("image0.patches"), rows("image0.vit_out"), rows("image0.merger_out"), rows("hidden_states")
	if sp, ok := c[p+"image0.span"]; ok && len(sp.data) == 2 {
		t.Span = [2]int{int(sp.data[0]), int(sp.data[1])}
	}
	if e, ok := c[p+"embedding"]; ok {
		t.Embedding = e.data
	}
	return t, nil
}

type dumpSource struct {
	dir string
	c   collector
}

// openDump reads a dump directory's index and tensors.
func openDump(dir string) (Source, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("compare: dump %s: %w", dir, err)
	}
	var idx struct {
		Tensors []struct {
			Name  string `json:"name"`
			File  string `json:"file"`
			DType string `json:"dtype"`
			Shape []int  `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("compare: dump %s: index.json: %w", dir, err)
	}
	s := &dumpSource{dir: dir, c: collector{}}
	for _, t := range idx.Tensors {
		if t.DType != "float32" {
			return nil, fmt.Errorf("compare: dump %s: tensor %s: dtype %q (want float32)", dir, t.Name, t.DType)
		}
		if strings.Contains(t.File, "..") || filepath.IsAbs(t.File) {
			return nil, fmt.Errorf("compare: dump %s: tensor %s: file %q outside the dump", dir, t.Name, t.File)
		}
		n := 1
		for _, d := range t.Shape {
			// Bounded at each step, so the product cannot overflow.
			if d < 0 || d > 1<<28 || n*d > 1<<30 {
				return nil, fmt.Errorf("compare: dump %s: tensor %s: bad shape %v", dir, t.Name, t.Shape)
			}
			n *= d
		}
		raw, err := os.ReadFile(filepath.Join(dir, t.File))
		if err != nil {
			return nil, fmt.Errorf("compare: dump %s: %w", dir, err)
		}
		if len(raw) != 4*n {
			return nil, fmt.Errorf("compare: dump %s: tensor %s: %d bytes for shape %v", dir, t.Name, len(raw), t.Shape)
		}
		data := make([]float32, n)
		for k := range data {
			data[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
		}
		s.c[t.Name] = tensor{data, t.Shape}
	}
	return s, nil
}

func (s *dumpSource) Name() string { return s.dir }
func (s *dumpSource) Close() error { return nil }

func (s *dumpSource) Trace(_ context.Context, i int, _ []byte) (*Trace, error) {
	return s.c.trace(i)
}
