package qwen35

import (
	"encoding/binary"
	"math"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/portmath"
	"github.com/vembed/vembed/kernels"
)

// The gated delta rule of one value head. Its state S is d_k×d_v and starts
// at zero; token t, with log-decay g_t < 0 and write strength β_t in (0, 1),
// does
//
//	S ← exp(g_t)·S;  S ← S + k_t·(β_t·(v_t − Sᵀk_t))ᵀ;  o_t = Sᵀq_t.
//
// Both forms below keep the state transposed (st[j·d_k+i] = S[i][j]), so
// that each value dimension j owns one contiguous row of d_k values.

// chunkLen is the delta rule's block: the chunked form solves a triangle of
// chunkLen tokens, then updates the state once (transformers and llama.cpp
// use 64 too).
const chunkLen = 64

// deltaRuleRef is the recurrence itself, token by token: the reference the
// chunked form is tested against. q and k are n×dk, v and o n×dv.
func deltaRuleRef(o, st, q, k, v, g, beta []float32, n, dk, dv int) {
	for t := range n {
		qt, kt := q[t*dk:(t+1)*dk], k[t*dk:(t+1)*dk]
		// portmath.Exp, here and below: math.Exp differs between amd64 and arm64.
		e := float32(portmath.Exp(float64(g[t])))
		for j := range dv {
			row := st[j*dk : (j+1)*dk]
			for i := range row {
				row[i] *= e
			}
			d := beta[t] * (v[t*dv+j] - dot(row, kt))
			for i := range row {
				row[i] += d * kt[i]
			}
			o[t*dv+j] = dot(row, qt)
		}
	}
}

// deltaScratch holds one block's work arrays. The products run through
// kernels.MatMul, whose right-hand operand is a weight matrix of float32
// bytes: kt, kw, st, rt and wt are those. Every product over the block's
// tokens runs over all chunkLen of them, the rows past the block's end
// zero, so a row's sums do not depend on how many tokens the block has.
type deltaScratch struct {
	dk, dv int
	G, eG  []float32 // cumulative log-decay in the block, its exp
	eg     []float32 // each token's decay e^(g_i)
	dec    []float32 // one row's e^(G_i−G_j)
	kk, qk []float32 // n×chunkLen: k_i·k_j, q_i·k_j
	T, P   []float32 // n×chunkLen: (I + A)⁻¹ and the masked, decayed q·k
	sk, sq []float32 // n×dv: Sᵀk_i, Sᵀq_i with the block's starting state
	w, o   []float32 // n×dv: the writes, an output term
	upd    []float32 // dv×dk: the state's increment
	kw     *f32      // chunkLen×dk: the keys
	kt     *f32      // dk×chunkLen: the keys transposed
	stw    *f32      // dv×dk: the state
	rt, wt *f32      // dv×chunkLen: right-hand sides and writes, transposed
	wd     []float32 // dv×chunkLen: the writes decayed to the block's end, transposed

	// One head's rows of a block and its state, for the layer's scan.
	q, k, v, g, beta, out, st []float32
}

// f32 is a float32 matrix as kernels.MatMul takes its right-hand operand.
type f32 struct {
	b    []byte
	m    *kernels.Matrix
	cols int
}

func newF32(rows, cols int) *f32 {
	b := make([]byte, 4*rows*cols)
	m, err := kernels.NewMatrix(gguf.TypeF32, rows, cols, b)
	if err != nil {
		panic(err) // sizes are the model's, checked at load
	}
	return &f32{b: b, m: m, cols: cols}
}

func (w *f32) set(r, c int, v float32) {
	binary.LittleEndian.PutUint32(w.b[4*(r*w.cols+c):], math.Float32bits(v))
}

func (w *f32) zero() { clear(w.b) }

func newDeltaScratch(dk, dv int) *deltaScratch {
	c := chunkLen
	return &deltaScratch{
		dk: dk, dv: dv,
		G: make([]float32, c), eG: make([]float32, c), eg: make([]float32, c), dec: make([]float32, c),
		kk: make([]float32, c*c), qk: make([]float32, c*c), T: make([]float32, c*c), P: make([]float32, c*c),
		sk: make([]float32, c*dv), sq: make([]float32, c*dv), w: make([]float32, c*dv), o: make([]float32, c*dv),
		upd: make([]float32, dv*dk),
		kw:  newF32(c, dk), kt: newF32(dk, c), stw: newF32(dv, dk),
		rt: newF32(dv, c), wt: newF32(dv, c), wd: make([]float32, dv*c),
		q: make([]float32, c*dk), k: make([]float32, c*dk), v: make([]float32, c*dv),
		g: make([]float32, c), beta: make([]float32, c), out: make([]float32, c*dv), st: make([]float32, dv*dk),
	}
}

// deltaBlock runs the chunked form over one block of n ≤ chunkLen tokens
// starting with state st, and, with update, leaves st after the block.
// Unrolling the recurrence inside a block, with G_i = g_1 + … + g_i, the
// writes w_i solve the unit lower-triangular system
//
//	w_i + Σ_{j<i} β_i·e^(G_i−G_j)·(k_i·k_j)·w_j = β_i·(v_i − e^(G_i)·S₀ᵀk_i),
//
// (I + A)·W = R, solved as W = T·R with T = (I + A)⁻¹ by forward
// substitution over the block's rows (n³/6 multiply-adds; T·R is a
// product), the outputs are
//
//	o_i = e^(G_i)·S₀ᵀq_i + Σ_{j≤i} e^(G_i−G_j)·(q_i·k_j)·w_j
//
// and the state after the block S = e^(G_n)·S₀ + Σ_j e^(G_n−G_j)·k_j·w_jᵀ.
// Every exponent is ≤ 0, so nothing overflows; row i reads rows j ≤ i only
// and every sum runs over the same terms whatever n is, so a row's bits do
// not depend on how many rows follow it in the block.
func deltaBlock(o, st, q, k, v, g, beta []float32, n, dk, dv int, update bool, s *deltaScratch) {
	const c = chunkLen
	G, eG := s.G[:n], s.eG[:n]
	acc := float32(0)
	for i := range n {
		acc += g[i]
		G[i] = acc
		eG[i] = float32(portmath.Exp(float64(acc)))
		s.eg[i] = float32(portmath.Exp(float64(g[i])))
	}
	s.kw.zero()
	s.kt.zero()
	for i := range n {
		for d := range dk {
			s.kw.set(i, d, k[i*dk+d])
			s.kt.set(d, i, k[i*dk+d])
		}
	}
	for jv := range dv {
		for d := range dk {
			s.stw.set(jv, d, st[jv*dk+d])
		}
	}
	kk, qk, sk, sq := s.kk[:n*c], s.qk[:n*c], s.sk[:n*dv], s.sq[:n*dv]
	kernels.MatMul(kk, k, n, s.kw.m, nil)
	kernels.MatMul(qk, q, n, s.kw.m, nil)
	kernels.MatMul(sk, k, n, s.stw.m, nil)
	kernels.MatMul(sq, q, n, s.stw.m, nil)

	// T = (I + A)⁻¹ row by row: T_i = e_i − Σ_{j<i} A_ij·T_j (T_j is zero
	// past column j); P is the causal mask and decay of q·k.
	T, P := s.T[:n*c], s.P[:n*c]
	clear(T)
	clear(P)
	for i := range n {
		Ti := T[i*c : i*c+i+1]
		Ti[i] = 1
		// e^(G_i−G_j) for j = i−1 down to 0 as a running product of the
		// tokens' decays (relative error below i·u, no underflow trap).
		dec := s.dec[:i+1]
		dec[i] = 1
		for j := i - 1; j >= 0; j-- {
			dec[j] = dec[j+1] * s.eg[j+1]
		}
		for j := range i {
			d := dec[j]
			P[i*c+j] = d * qk[i*c+j]
			if a := beta[i] * d * kk[i*c+j]; a != 0 {
				axpy(Ti[:j+1], -a, T[j*c:j*c+j+1])
			}
		}
		P[i*c+i] = qk[i*c+i]
	}
	// R, transposed for the product W = T·R.
	s.rt.zero()
	for i := range n {
		for jv := range dv {
			// A product is converted before it is added to (float32(a*b) + c): that
			// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
			// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
			s.rt.set(jv, i, beta[i]*(v[i*dv+jv]-float32(eG[i]*sk[i*dv+jv])))
		}
	}
	w := s.w[:n*dv]
	kernels.MatMul(w, T, n, s.rt.m, nil)
	s.wt.zero()
	for i := range n {
		for jv := range dv {
			s.wt.set(jv, i, w[i*dv+jv])
		}
	}
	ot := s.o[:n*dv]
	kernels.MatMul(ot, P, n, s.wt.m, nil)
	for i := range n {
		for jv := range dv {
			o[i*dv+jv] = float32(eG[i]*sq[i*dv+jv]) + ot[i*dv+jv]
		}
	}
	if !update {
		return
	}
	// S ← e^(G_n)·S + Wdᵀ·K, Wd the writes decayed to the block's end: the
	// product of Wdᵀ (dv×chunkLen) with Kᵀ as its weight (dk×chunkLen).
	last := G[n-1]
	wd := s.wd
	clear(wd)
	for i := range n {
		d := float32(portmath.Exp(float64(last - G[i])))
		for jv := range dv {
			wd[jv*c+i] = d * w[i*dv+jv]
		}
	}
	kernels.MatMul(s.upd, wd, dv, s.kt.m, nil)
	e := eG[n-1]
	for i := range st {
		st[i] = float32(e*st[i]) + s.upd[i]
	}
}

// dot is Σ a_i·b_i over len(a) values, four partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds c·x to y.
func axpy(y []float32, c float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(c * x[i])
	}
}
