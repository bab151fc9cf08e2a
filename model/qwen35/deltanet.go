package qwen35

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vembed/vembed/internal/portmath"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/internal/vlm"
)

// deltaNet is a Gated DeltaNet mixer in llama.cpp's layout, where value
// head h reads key head h mod nK.
type deltaNet struct {
	qkv   *kernels.Matrix // [q (nK·dK) | k (nK·dK) | v (nV·dV)] ← hidden
	z     *kernels.Matrix // output gate, nV·dV ← hidden
	beta  *kernels.Matrix // nV ← hidden
	alpha *kernels.Matrix // nV ← hidden
	out   *kernels.Matrix // hidden ← nV·dV
	convT []float32       // per tap (oldest first) its weight for every qkv channel
	dtB   []float32       // nV
	a     []float32       // nV: −exp(A_log)
	norm  []float32       // dV: the per-head RMSNorm weight (plain, no +1)
}

// netState is what a sequence cut into chunks carries from one chunk of a
// DeltaNet layer to the next: the last convK−1 projected rows (the causal
// convolution's history), the state at the last token whose index is a
// multiple of chunkLen, and the rows after it (the convolved, normalized
// q|k|v, then log-decay and β per value head), which the next chunk solves
// again together with its own, so that blocks fall where one pass over the
// whole sequence puts them.
type netState struct {
	hist []float32 // (convK−1)·conv values
	st   []float32 // nV·dV·dK
	pend []float32 // rows of conv + 2·nV values
	np   int       // rows in pend
}

// forward adds the mixer of xn (the normed rows of the pass) to x.
func (d *deltaNet) forward(lm *Decoder, l int, x, xn []float32, n int, parts []part, s *scratch) {
	C, nK, nV, dK, dV := lm.convDim(), lm.nK, lm.nV, lm.dK, lm.dV
	K := lm.convK
	qkv, z, b, a := s.qkv[:n*C], s.z[:n*nV*dV], s.b[:n*nV], s.a[:n*nV]
	vlm.MatMul(qkv, xn, n, d.qkv, nil)
	vlm.MatMul(z, xn, n, d.z, nil)
	vlm.MatMul(b, xn, n, d.beta, nil)
	vlm.MatMul(a, xn, n, d.alpha, nil)

	// Per token and value head: β = σ(W_β x), g = −exp(A_log)·softplus(W_α x + dt_bias).
	for r := range n {
		for h := range nV {
			i := r*nV + h
			b[i] = sigmoid(b[i])
			a[i] = d.a[h] * softplus(a[i]+d.dtB[h])
		}
	}

	o := s.o[:n*nV*dV]
	for _, p := range parts {
		m := p.B - p.A
		ns := p.St.net(lm, l)
		rows := qkv[p.Row*C : (p.Row+m)*C]
		// The causal depthwise convolution over the sequence's projected
		// rows, then SiLU; rows before the sequence count as zero.
		y := s.conv[:m*C]
		clear(y)
		for j := range K {
			wj := d.convT[j*C : (j+1)*C]
			for t := range m {
				src := t - (K - 1) + j
				var in []float32
				switch {
				case src >= 0:
					in = rows[src*C : (src+1)*C]
				case ns != nil:
					in = ns.hist[(K-1+src)*C : (K+src)*C]
				default:
					continue
				}
				yt := y[t*C : (t+1)*C]
				for c, w := range wj {
					// A product is converted before it is added to (float32(a*b) + c): that
					// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
					// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
					yt[c] += float32(w * in[c])
				}
			}
		}
		kernels.SwiGLU(y, y, s.ones[:m*C])
		if ns != nil {
			keepHistory(ns.hist, rows, m, C, K-1)
		}
		// q and k L2-normalized per key head (q also by 1/√dK).
		qs := float32(1 / math.Sqrt(float64(dK)))
		for t := range m {
			for h := range 2 * nK {
				v := y[t*C+h*dK : t*C+(h+1)*dK]
				sc := 1 / float32(math.Sqrt(float64(dot(v, v))+1e-6))
				if h < nK {
					sc *= qs
				}
				for i := range v {
					v[i] *= sc
				}
			}
		}
		d.scan(lm, o[p.Row*nV*dV:(p.Row+m)*nV*dV], y, b[p.Row*nV:], a[p.Row*nV:], m, ns, p.B == len(p.St.ids))
	}
	// The gated per-head RMSNorm: norm(o)·w·silu(z).
	kernels.RMSNorm(o, o, d.norm, dV, lm.eps)
	kernels.SwiGLU(o, z, o)
	vlm.MatMul(xn, o, n, d.out, nil)
	kernels.Add(x, x, xn)
}

// scan runs the delta rule of every value head over m new rows of one
// sequence (y its convolved q|k|v rows, beta and g its per-head values, row
// stride nV), after the pending rows of ns, writing the outputs of the new
// rows to o. A sequence that ends here keeps no state.
func (d *deltaNet) scan(lm *Decoder, o, y, beta, g []float32, m int, ns *netState, last bool) {
	C, nK, nV, dK, dV := lm.convDim(), lm.nK, lm.nV, lm.dK, lm.dV
	np := 0
	if ns != nil {
		np = ns.np
	}
	T := np + m
	// row returns row t of the rows to solve: pending ones first.
	row := func(t int) (qkv, bt, gt []float32) {
		if t < np {
			r := ns.pend[t*(C+2*nV) : (t+1)*(C+2*nV)]
			return r[:C], r[C : C+nV], r[C+nV:]
		}
		t -= np
		return y[t*C : (t+1)*C], beta[t*nV : (t+1)*nV], g[t*nV : (t+1)*nV]
	}
	full := T / chunkLen * chunkLen // rows whose blocks are complete
	eachHead(nV, func(h int, s *deltaScratch) {
		kh := h % nK
		var st []float32
		if ns != nil {
			st = ns.st[h*dV*dK : (h+1)*dV*dK]
		} else {
			st = s.st
			clear(st)
		}
		// One block at a time: the head's rows gathered, solved, the
		// outputs of the new rows scattered.
		q, k, v, gh, bh, oh := s.q, s.k, s.v, s.g, s.beta, s.out
		for lo := 0; lo < T; lo += chunkLen {
			hi := min(lo+chunkLen, T)
			for t := lo; t < hi; t++ {
				r, bt, gt := row(t)
				i := t - lo
				copy(q[i*dK:(i+1)*dK], r[kh*dK:(kh+1)*dK])
				copy(k[i*dK:(i+1)*dK], r[(nK+kh)*dK:(nK+kh+1)*dK])
				copy(v[i*dV:(i+1)*dV], r[2*nK*dK+h*dV:2*nK*dK+(h+1)*dV])
				gh[i], bh[i] = gt[h], bt[h]
			}
			// Only complete blocks advance a kept state; the rows of the
			// last, incomplete one are solved again with the next chunk.
			update := hi <= full && (ns != nil || hi < T)
			deltaBlock(oh, st, q, k, v, gh, bh, hi-lo, dK, dV, update, s)
			for t := max(lo, np); t < hi; t++ {
				copy(o[(t-np)*nV*dV+h*dV:(t-np)*nV*dV+(h+1)*dV], oh[(t-lo)*dV:(t-lo+1)*dV])
			}
		}
	}, func() *deltaScratch { return newDeltaScratch(dK, dV) })
	if ns == nil || last {
		return
	}
	// Keep the rows of the incomplete block for the next chunk.
	pend := make([]float32, (T-full)*(C+2*nV))
	for t := full; t < T; t++ {
		r, bt, gt := row(t)
		dst := pend[(t-full)*(C+2*nV):]
		copy(dst, r)
		copy(dst[C:], bt)
		copy(dst[C+nV:], gt)
	}
	ns.pend, ns.np = pend, T-full
}

// eachHead runs fn for heads 0..n−1 on GOMAXPROCS goroutines, each with
// scratch of its own. Plain goroutines, not the kernels' pool: fn runs
// products, which spread over the pool themselves.
func eachHead(n int, fn func(h int, s *deltaScratch), scratch func() *deltaScratch) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := scratch()
			for h := int(next.Add(1) - 1); h < n; h = int(next.Add(1) - 1) {
				fn(h, s)
			}
		}()
	}
	wg.Wait()
}

// keepHistory leaves in hist the last k rows of the sequence so far, whose
// newest m rows are rows (C values each).
func keepHistory(hist, rows []float32, m, C, k int) {
	if m >= k {
		copy(hist, rows[(m-k)*C:m*C])
		return
	}
	copy(hist, hist[m*C:])
	copy(hist[(k-m)*C:], rows[:m*C])
}

// sigmoid and softplus take portmath's exp and log1p: the standard
// library's differ between amd64 and arm64.
func sigmoid(x float32) float32 { return float32(1 / (1 + portmath.Exp(-float64(x)))) }

// softplus is log(1 + eˣ), linear above 20 as in torch.
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(portmath.Log1p(portmath.Exp(float64(x))))
}
