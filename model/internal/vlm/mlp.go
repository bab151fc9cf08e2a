package vlm

import "github.com/vembed/vembed/kernels"

// MLP is a position-wise feed-forward block: Down(act(Gate(x)) ⊙ Up(x)) when
// Gate is set (SwiGLU: Qwen2, Qwen3 and Qwen2.5-VL's tower), else
// Down(Act(Up(x))) (the plain two-layer MLP of the Qwen2-VL and Qwen3-VL
// towers). Biases may be nil.
type MLP struct {
	Gate, Up, Down    *kernels.Matrix
	GateB, UpB, DownB []float32
	Act               func([]float32) // the activation without a gate
}

// MaxChunk bounds the rows of one matrix product. It keeps the MLP's wide
// intermediate buffers small (a long sequence never needs n×ffn floats at
// once), and the products are faster per flop on a few hundred rows than on
// thousands, whose activations no longer stay in cache while the weights
// stream by.
const MaxChunk = 384

// ChunkRows is the row count of each piece when n rows are split into the
// fewest pieces of at most MaxChunk rows, sized alike. A short last piece
// would cost a full pass over the weights for a few rows (and, below a
// row threshold set with kernels.SetInt8MinRows, takes the float32 path).
func ChunkRows(n int) int {
	if n <= MaxChunk {
		return max(n, 1)
	}
	pieces := (n + MaxChunk - 1) / MaxChunk
	return (n + pieces - 1) / pieces
}

// MatMul is kernels.MatMul over n rows, run ChunkRows(n) rows at a time.
func MatMul(dst, x []float32, n int, w *kernels.Matrix, bias []float32) {
	c := ChunkRows(n)
	for lo := 0; lo < n; lo += c {
		r := min(c, n-lo)
		kernels.MatMul(dst[lo*w.Rows:(lo+r)*w.Rows], x[lo*w.Cols:(lo+r)*w.Cols], r, w, bias)
	}
}

// AddTo adds the MLP of xn (n rows) to x, ChunkRows(n) rows at a time.
func (p *MLP) AddTo(x, xn []float32, n int, s *Scratch) {
	width, ffn := p.Down.Rows, p.Up.Rows
	c := ChunkRows(n)
	for lo := 0; lo < n; lo += c {
		r := min(c, n-lo)
		in, res := xn[lo*width:(lo+r)*width], x[lo*width:(lo+r)*width]
		u, o := s.U[:r*ffn], s.O[:r*width]
		kernels.MatMul(u, in, r, p.Up, p.UpB)
		if p.Gate != nil {
			g := s.G[:r*ffn]
			kernels.MatMul(g, in, r, p.Gate, p.GateB)
			kernels.SwiGLU(u, g, u)
		} else {
			p.Act(u)
		}
		kernels.MatMul(o, u, r, p.Down, p.DownB)
		kernels.Add(res, res, o)
	}
}

// Flops is 2·rows·cols of each matrix (nil ones count 0).
func Flops(ms ...*kernels.Matrix) int64 {
	var n int64
	for _, m := range ms {
		if m != nil {
			n += 2 * int64(m.Rows) * int64(m.Cols)
		}
	}
	return n
}

// Scratch holds the work buffers of one forward pass, sized once and reused
// by every layer.
type Scratch struct {
	XN, Q, K, V, Att []float32 // per token: width, q width, kv width, kv width, q width
	G, U, O          []float32 // one MLP chunk
}

// NewScratch sizes the buffers of a pass over n rows.
func NewScratch(n, width, qWidth, kvWidth, ffn int) *Scratch {
	c := ChunkRows(n)
	return &Scratch{
		XN: make([]float32, n*width), Q: make([]float32, n*qWidth), Att: make([]float32, n*qWidth),
		K: make([]float32, n*kvWidth), V: make([]float32, n*kvWidth),
		G: make([]float32, c*ffn), U: make([]float32, c*ffn), O: make([]float32, c*width),
	}
}
