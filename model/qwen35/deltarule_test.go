package qwen35

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// deltaRule64 is the recurrence in float64: the yardstick of both float32
// forms. It returns the outputs and the final state (S transposed).
func deltaRule64(q, k, v, g, beta []float32, n, dk, dv int) (o, st []float64) {
	o, st = make([]float64, n*dv), make([]float64, dv*dk)
	for t := range n {
		e := math.Exp(float64(g[t]))
		for j := range dv {
			row := st[j*dk : (j+1)*dk]
			var u float64
			for i := range row {
				row[i] *= e
				u += row[i] * float64(k[t*dk+i])
			}
			d := float64(beta[t]) * (float64(v[t*dv+j]) - u)
			var y float64
			for i := range row {
				row[i] += d * float64(k[t*dk+i])
				y += row[i] * float64(q[t*dk+i])
			}
			o[t*dv+j] = y
		}
	}
	return o, st
}

// deltaInputs draws what a DeltaNet layer feeds the rule: unit q and k,
// values of a few units, log-decays in (−2, 0), β in (0, 1).
func deltaInputs(r *rand.Rand, n, dk, dv int) (q, k, v, g, beta []float32) {
	unit := func(m int) []float32 {
		x := make([]float32, n*m)
		for t := range n {
			row := x[t*m : (t+1)*m]
			var s float64
			for i := range row {
				row[i] = float32(r.NormFloat64())
				s += float64(row[i]) * float64(row[i])
			}
			for i := range row {
				row[i] = float32(float64(row[i]) / math.Sqrt(s))
			}
		}
		return x
	}
	q, k = unit(dk), unit(dk)
	v, g, beta = make([]float32, n*dv), make([]float32, n), make([]float32, n)
	for i := range v {
		v[i] = float32(2 * r.NormFloat64())
	}
	for t := range n {
		g[t] = float32(-2 * r.Float64())
		beta[t] = float32(r.Float64())
	}
	return
}

// TestDeltaRuleForms runs the token-by-token recurrence and the chunked form
// (blocks of chunkLen, the state carried from block to block) over random
// inputs of odd sizes, against the float64 recurrence.
//
// The tolerance: with |k| = 1, 0 ≤ β ≤ 1 and e^g ≤ 1 each token maps the
// state through I − β·k·kᵀ (norm ≤ 1) after the decay and adds β·k·wᵀ, so no
// error grows from token to token and every state column stays below
// V = Σ_t |v_t|∞ in norm; every output or state value is a sum of at most
// m = 2(dk + chunkLen) products of such magnitudes, each rounding once in
// float32, and a token's error passes on to the later ones at most once.
// So after t tokens an error is below t·m·u·V (u = 2⁻²⁴): both forms are
// held to it, and to it alone.
func TestDeltaRuleForms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const u = 1.0 / (1 << 24)
	for _, sz := range [][3]int{{1, 16, 16}, {5, 3, 7}, {63, 16, 16}, {64, 17, 5}, {65, 8, 8}, {130, 16, 24}, {200, 13, 16}} {
		n, dk, dv := sz[0], sz[1], sz[2]
		t.Run(fmt.Sprintf("n%d_dk%d_dv%d", n, dk, dv), func(t *testing.T) {
			q, k, v, g, beta := deltaInputs(r, n, dk, dv)
			want, wantSt := deltaRule64(q, k, v, g, beta, n, dk, dv)
			var V float64
			for tk := range n {
				var m float64
				for j := range dv {
					m = max(m, math.Abs(float64(v[tk*dv+j])))
				}
				V += m
			}
			tol := float64(n) * float64(2*(dk+chunkLen)) * u * V

			ref, refSt := make([]float32, n*dv), make([]float32, dv*dk)
			deltaRuleRef(ref, refSt, q, k, v, g, beta, n, dk, dv)
			chk, chkSt := make([]float32, n*dv), make([]float32, dv*dk)
			s := newDeltaScratch(dk, dv)
			for lo := 0; lo < n; lo += chunkLen {
				hi := min(lo+chunkLen, n)
				deltaBlock(chk[lo*dv:], chkSt, q[lo*dk:], k[lo*dk:], v[lo*dv:], g[lo:], beta[lo:], hi-lo, dk, dv, true, s)
			}
			for name, got := range map[string][]float32{"recurrence": ref, "chunked": chk, "recurrence state": refSt, "chunked state": chkSt} {
				w := want
				if len(got) == len(wantSt) && name != "recurrence" && name != "chunked" {
					w = wantSt
				}
				var worst float64
				for i := range got {
					worst = max(worst, math.Abs(float64(got[i])-w[i]))
				}
				if worst > tol {
					t.Errorf("%s: max error %.3g > %.3g", name, worst, tol)
				}
				t.Logf("%s: max error %.3g (bound %.3g)", name, worst, tol)
			}
		})
	}
}

// TestDeltaBlockPrefix: the rows of a block's first m tokens do not depend
// on the tokens after them, bit for bit (what lets a sequence cut into
// chunks solve the rows of an incomplete block again with the next chunk).
func TestDeltaBlockPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	const dk, dv = 16, 12
	q, k, v, g, beta := deltaInputs(r, chunkLen, dk, dv)
	st0 := make([]float32, dv*dk)
	for i := range st0 {
		st0[i] = float32(r.NormFloat64())
	}
	full := make([]float32, chunkLen*dv)
	st := append([]float32(nil), st0...)
	deltaBlock(full, st, q, k, v, g, beta, chunkLen, dk, dv, false, newDeltaScratch(dk, dv))
	for _, m := range []int{1, 2, 17, chunkLen - 1} {
		part := make([]float32, m*dv)
		copy(st, st0)
		deltaBlock(part, st, q, k, v, g, beta, m, dk, dv, false, newDeltaScratch(dk, dv))
		for i := range part {
			if math.Float32bits(part[i]) != math.Float32bits(full[i]) {
				t.Fatalf("%d of %d tokens: value %d is %v, with the whole block %v", m, chunkLen, i, part[i], full[i])
			}
		}
	}
}
