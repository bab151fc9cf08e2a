package qwenvl

import "github.com/vembed/vembed/kernels"

// mlp is a position-wise feed-forward block: down(act(gate(x)) ⊙ up(x)) when
// gate is set (SwiGLU, Qwen2 and Qwen2.5-VL), else down(act(up(x)))
// (Qwen2-VL's fc1 → quick-GELU → fc2). Biases may be nil.
type mlp struct {
	gate, up, down    *kernels.Matrix
	gateB, upB, downB []float32
	act               func([]float32) // the activation without a gate
}

// maxChunk bounds the rows of one matrix product. It keeps the MLP's wide
// intermediate buffers small (a long sequence never needs n×ffn floats at
// once), and the products are faster per flop on a few hundred rows than on
// thousands, whose activations no longer stay in cache while the weights
// stream by.
const maxChunk = 384

// chunkRows is the row count of each piece when n rows are split into the
// fewest pieces of at most maxChunk rows, sized alike. A short last piece
// would cost a full pass over the weights for a few rows, and below the
// quantized kernels' minimum row count it even takes the float32 path.
func chunkRows(n int) int {
	if n <= maxChunk {
		return max(n, 1)
	}
	pieces := (n + maxChunk - 1) / maxChunk
	return (n + pieces - 1) / pieces
}

// matMul is kernels.MatMul over n rows, run chunkRows(n) rows at a time.
func matMul(dst, x []float32, n int, w *kernels.Matrix, bias []float32) {
	c := chunkRows(n)
	for lo := 0; lo < n; lo += c {
		r := min(c, n-lo)
		kernels.MatMul(dst[lo*w.Rows:(lo+r)*w.Rows], x[lo*w.Cols:(lo+r)*w.Cols], r, w, bias)
	}
}

// addTo adds the MLP of xn (n rows) to x, chunkRows(n) rows at a time.
func (p *mlp) addTo(x, xn []float32, n int, s *scratch) {
	width, ffn := p.down.Rows, p.up.Rows
	c := chunkRows(n)
	for lo := 0; lo < n; lo += c {
		r := min(c, n-lo)
		in, res := xn[lo*width:(lo+r)*width], x[lo*width:(lo+r)*width]
		u, o := s.u[:r*ffn], s.o[:r*width]
		kernels.MatMul(u, in, r, p.up, p.upB)
		if p.gate != nil {
			g := s.g[:r*ffn]
			kernels.MatMul(g, in, r, p.gate, p.gateB)
			kernels.SwiGLU(u, g, u)
		} else {
			p.act(u)
		}
		kernels.MatMul(o, u, r, p.down, p.downB)
		kernels.Add(res, res, o)
	}
}

// scratch holds the work buffers of one forward pass, sized once and reused
// by every layer.
type scratch struct {
	xn, q, k, v, att []float32 // per token: width, q width, kv width, kv width, q width
	g, u, o          []float32 // one MLP chunk
}

func newScratch(n, width, qWidth, kvWidth, ffn int) *scratch {
	c := chunkRows(n)
	return &scratch{
		xn: make([]float32, n*width), q: make([]float32, n*qWidth), att: make([]float32, n*qWidth),
		k: make([]float32, n*kvWidth), v: make([]float32, n*kvWidth),
		g: make([]float32, c*ffn), u: make([]float32, c*ffn), o: make([]float32, c*width),
	}
}
