package qwen35

import (
	"math"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/internal/vlm"
)

// attention is a gated full-attention mixer: the query projection gives per
// head [query | gate], q and k are RMS-normalized per head, M-RoPE turns
// their first rotDim dimensions, and the output is multiplied by
// sigmoid(gate) before o_proj.
type attention struct {
	q, k, v, o   *kernels.Matrix
	qNorm, kNorm []float32
}

// forward adds the mixer of xn (the normed rows of the pass) to x.
func (d *attention) forward(lm *Decoder, l int, x, xn []float32, n int, cos, sin []float32, parts []part, mask kernels.Mask, s *scratch) {
	hd, nh := lm.HeadDim, lm.NHead
	qw, kvw := nh*hd, lm.NKV*hd
	qg, q, gate := s.qg[:n*2*qw], s.Q[:n*qw], s.gate[:n*qw]
	k, v, att := s.K[:n*kvw], s.V[:n*kvw], s.Att[:n*qw]
	vlm.MatMul(qg, xn, n, d.q, nil)
	vlm.MatMul(k, xn, n, d.k, nil)
	vlm.MatMul(v, xn, n, d.v, nil)
	for r := range n * nh {
		copy(q[r*hd:(r+1)*hd], qg[2*r*hd:(2*r+1)*hd])
		copy(gate[r*hd:(r+1)*hd], qg[(2*r+1)*hd:(2*r+2)*hd])
	}
	kernels.RMSNorm(q, q, d.qNorm, hd, lm.eps)
	kernels.RMSNorm(k, k, d.kNorm, hd, lm.eps)
	rope(q, n, nh, hd, lm.rotDim, cos, sin)
	rope(k, n, lm.NKV, hd, lm.rotDim, cos, sin)
	scale := float32(1 / math.Sqrt(float64(hd)))
	if !lm.Causal {
		kernels.Attention(att, q, k, v, n, nh, lm.NKV, hd, scale, mask)
	} else {
		spans := make([]kernels.KVSpan, len(parts))
		for i, p := range parts {
			r0, r1 := p.Row, p.Row+p.B-p.A
			kk, vv := k[r0*kvw:r1*kvw], v[r0*kvw:r1*kvw]
			if kv := p.St.cache(lm, l); kv != nil {
				copy(kv.k[p.A*kvw:], kk)
				copy(kv.v[p.A*kvw:], vv)
				kk, vv = kv.k[:p.B*kvw], kv.v[:p.B*kvw]
			}
			spans[i] = kernels.KVSpan{Q0: r0, Q1: r1, K: kk, V: vv, Pos: p.A}
		}
		kernels.AttentionKV(att, q, nh, lm.NKV, hd, scale, spans)
	}
	for i := range att {
		att[i] *= sigmoid(gate[i])
	}
	vlm.MatMul(xn, att, n, d.o, nil)
	kernels.Add(x, x, xn)
}

// rope turns the first rotDim dimensions of every head (n tokens of nHead
// heads of hd values) by the per-token angles of cos and sin (rotDim/2
// each), pairing dimension i with i + rotDim/2 (rotate-half); the other
// dimensions pass unchanged.
func rope(x []float32, n, nHead, hd, rotDim int, cos, sin []float32) {
	half := rotDim / 2
	for t := range n {
		c, s := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := range nHead {
			v := x[(t*nHead+h)*hd:]
			for i := range half {
				a, b := v[i], v[i+half]
				// A product is converted before it is added to (float32(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
				v[i] = float32(a*c[i]) - float32(b*s[i])
				v[i+half] = float32(b*c[i]) + float32(a*s[i])
			}
		}
	}
}
