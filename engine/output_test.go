package engine

import (
	"math"
	"testing"

	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/recipe"
)

// TestPoolerKeepsRows: a multi-vector output of a recipe that keeps some
// tokens' rows (recipe.RowKeeper) holds those rows only, in order,
// whichever chunks of the sequence they arrive in.
func TestPoolerKeepsRows(t *testing.T) {
	const dim, n = 3, 10
	hidden := make([]float32, n*dim)
	for i := range hidden {
		hidden[i] = float32(i%7) + 1
	}
	keep := [][2]int{{2, 4}, {4, 5}, {7, 10}}
	var want []int
	for _, r := range keep {
		for tok := r[0]; tok < r[1]; tok++ {
			want = append(want, tok)
		}
	}
	for _, cut := range []int{1, 3, 5, 8, 10} {
		p := newPooler(dim, n, recipe.Pooling{Kind: recipe.Mean, Hi: n}, nil, heads.HiddenRows(dim), false)
		p.rowsOf = keep
		p.add(hidden[:cut*dim], 0)
		if cut < n {
			p.add(hidden[cut*dim:], cut)
		}
		got := p.result().Multi
		if len(got) != len(want) {
			t.Fatalf("chunks at %d: %d rows, want %d", cut, len(got), len(want))
		}
		for i, tok := range want {
			var ss float64
			for _, v := range hidden[tok*dim : (tok+1)*dim] {
				ss += float64(v) * float64(v)
			}
			for j := range dim {
				if w := float64(hidden[tok*dim+j]) / math.Sqrt(ss); math.Abs(float64(got[i][j])-w) > 1e-6 {
					t.Fatalf("chunks at %d: row %d is %v, want token %d's", cut, i, got[i], tok)
				}
			}
		}
	}
}
