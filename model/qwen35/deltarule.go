package qwen35

import "math"

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
		e := float32(math.Exp(float64(g[t])))
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

// deltaScratch holds one block's work arrays.
type deltaScratch struct {
	G, eG  []float32 // cumulative log-decay in the block, its exp
	A, P   []float32 // n×n: β_i·e^(G_i−G_j)·k_i·k_j (j < i), e^(G_i−G_j)·q_i·k_j (j ≤ i)
	w      []float32 // n×dv: the block's new values (the delta writes)
	sk, sq []float32 // n×dv: Sᵀk_i, Sᵀq_i with the block's starting state
}

func newDeltaScratch(dv int) *deltaScratch {
	return &deltaScratch{
		G: make([]float32, chunkLen), eG: make([]float32, chunkLen),
		A: make([]float32, chunkLen*chunkLen), P: make([]float32, chunkLen*chunkLen),
		w: make([]float32, chunkLen*dv), sk: make([]float32, chunkLen*dv), sq: make([]float32, chunkLen*dv),
	}
}

// deltaBlock runs the chunked form over one block of n ≤ chunkLen tokens
// starting with state st, and, with update, leaves st after the block.
// Unrolling the recurrence inside a block, with G_i = g_1 + … + g_i, the
// write of token i is
//
//	w_i = β_i·(v_i − e^(G_i)·S₀ᵀk_i) − Σ_{j<i} β_i·e^(G_i−G_j)·(k_i·k_j)·w_j
//
// (a unit lower-triangular solve, forward substitution), its output
//
//	o_i = e^(G_i)·S₀ᵀq_i + Σ_{j≤i} e^(G_i−G_j)·(q_i·k_j)·w_j
//
// and the state after the block S = e^(G_n)·S₀ + Σ_j e^(G_n−G_j)·k_j·w_jᵀ.
// Every exponent is ≤ 0, so nothing overflows; a row i reads rows j ≤ i
// only, in the same order whatever n is, so a row's bits do not depend on
// how many rows follow it in the block.
func deltaBlock(o, st, q, k, v, g, beta []float32, n, dk, dv int, update bool, s *deltaScratch) {
	G, eG, A, P, w, sk, sq := s.G[:n], s.eG[:n], s.A, s.P, s.w[:n*dv], s.sk[:n*dv], s.sq[:n*dv]
	acc := float32(0)
	for i := range n {
		acc += g[i]
		G[i] = acc
		eG[i] = float32(math.Exp(float64(acc)))
	}
	for i := range n {
		qi, ki := q[i*dk:(i+1)*dk], k[i*dk:(i+1)*dk]
		for j := 0; j <= i; j++ {
			kj := k[j*dk : (j+1)*dk]
			d := float32(math.Exp(float64(G[i] - G[j])))
			P[i*chunkLen+j] = d * dot(qi, kj)
			if j < i {
				A[i*chunkLen+j] = beta[i] * d * dot(ki, kj)
			}
		}
		for jv := range dv {
			row := st[jv*dk : (jv+1)*dk]
			sk[i*dv+jv] = dot(row, ki)
			sq[i*dv+jv] = dot(row, qi)
		}
	}
	for i := range n {
		wi := w[i*dv : (i+1)*dv]
		for jv := range wi {
			wi[jv] = beta[i] * (v[i*dv+jv] - eG[i]*sk[i*dv+jv])
		}
		for j := range i {
			axpy(wi, -A[i*chunkLen+j], w[j*dv:(j+1)*dv])
		}
		oi := o[i*dv : (i+1)*dv]
		for jv := range oi {
			oi[jv] = eG[i] * sq[i*dv+jv]
		}
		for j := 0; j <= i; j++ {
			axpy(oi, P[i*chunkLen+j], w[j*dv:(j+1)*dv])
		}
	}
	if !update {
		return
	}
	last := G[n-1]
	for i := range n {
		// Scale the writes by their decay to the block's end once, so that
		// the state update below is a plain sum of outer products.
		d := float32(math.Exp(float64(last - G[i])))
		wi := w[i*dv : (i+1)*dv]
		for jv := range wi {
			wi[jv] *= d
		}
	}
	e := eG[n-1]
	for jv := range dv {
		row := st[jv*dk : (jv+1)*dk]
		for i := range row {
			row[i] *= e
		}
		for i := range n {
			axpy(row, w[i*dv+jv], k[i*dk:(i+1)*dk])
		}
	}
}

// dot is Σ a_i·b_i over len(a) values, four partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds c·x to y.
func axpy(y []float32, c float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += c * x[i]
	}
}
