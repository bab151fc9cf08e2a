package heads

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func randUnitRows(rng *rand.Rand, n, d int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		r := make([]float32, d)
		var s float64
		for k := range r {
			r[k] = float32(rng.NormFloat64())
			s += float64(r[k]) * float64(r[k])
		}
		for k := range r {
			r[k] = float32(float64(r[k]) / math.Sqrt(s))
		}
		rows[i] = r
	}
	return rows
}

// bruteWard clusters with Ward's criterion written out: the features of
// vector i are the row i of 1 − E·Eᵀ, and the pair of clusters merged is
// the one with the least sqrt(2|A||B|/(|A|+|B|))·‖centroid A − centroid B‖.
func bruteWard(e [][]float32, target int) [][]int {
	n := len(e)
	feat := make([][]float64, n)
	for i := range n {
		feat[i] = make([]float64, n)
		for j := range n {
			var s float64
			for k := range e[i] {
				s += float64(e[i][k]) * float64(e[j][k])
			}
			feat[i][j] = 1 - s
		}
	}
	var clusters [][]int
	for i := range n {
		clusters = append(clusters, []int{i})
	}
	centroid := func(c []int) []float64 {
		m := make([]float64, n)
		for _, i := range c {
			for k, v := range feat[i] {
				m[k] += v / float64(len(c))
			}
		}
		return m
	}
	for len(clusters) > target {
		ba, bb, best := 0, 0, math.Inf(1)
		for a := range clusters {
			for b := a + 1; b < len(clusters); b++ {
				ca, cb := centroid(clusters[a]), centroid(clusters[b])
				var s float64
				for k := range ca {
					s += (ca[k] - cb[k]) * (ca[k] - cb[k])
				}
				na, nb := float64(len(clusters[a])), float64(len(clusters[b]))
				if c := math.Sqrt(2*na*nb/(na+nb)) * math.Sqrt(s); c < best {
					ba, bb, best = a, b, c
				}
			}
		}
		clusters[ba] = append(clusters[ba], clusters[bb]...)
		clusters = slices.Delete(clusters, bb, bb+1)
	}
	for _, c := range clusters {
		sort.Ints(c)
	}
	sort.Slice(clusters, func(i, j int) bool { return clusters[i][0] < clusters[j][0] })
	return clusters
}

func TestWardMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct{ n, d, target int }{{2, 8, 1}, {7, 4, 3}, {12, 16, 4}, {30, 8, 10}, {41, 32, 13}, {60, 128, 20}} {
		e := randUnitRows(rng, c.n, c.d)
		labels, k := wardClusters(rowDistances(e), c.target)
		got := make([][]int, k)
		for i, l := range labels {
			got[l] = append(got[l], i)
		}
		sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
		want := bruteWard(e, c.target)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("n=%d target=%d:\n got %v\nwant %v", c.n, c.target, got, want)
		}
	}
}

func TestPoolTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	e := randUnitRows(rng, 25, 16)
	keep := fmt.Sprint(e)
	p := PoolTokens(e, 3)
	if len(p) != 8 || fmt.Sprint(e) != keep {
		t.Fatalf("25 rows pooled by 3: %d rows (input changed: %v)", len(p), fmt.Sprint(e) != keep)
	}
	labels, _ := wardClusters(rowDistances(e), 8)
	for l, v := range p {
		mean := make([]float64, 16)
		var norm float64
		for i, li := range labels {
			if li == l {
				for k := range mean {
					mean[k] += float64(e[i][k])
				}
			}
		}
		for _, m := range mean {
			norm += m * m
		}
		for k := range v {
			if d := math.Abs(float64(v[k]) - mean[k]/math.Sqrt(norm)); d > 1e-6 {
				t.Fatalf("cluster %d value %d off by %g", l, k, d)
			}
		}
	}
	if got := PoolTokens(e[:1], 4); len(got) != 1 {
		t.Errorf("one row: %d", len(got))
	}
	if got := PoolTokens(e, 1); len(got) != 25 {
		t.Errorf("factor 1: %d rows", len(got))
	}
	if got := PoolTokens(e, 100); len(got) != 1 {
		t.Errorf("factor over n: %d rows", len(got))
	}
}

func BenchmarkPoolTokens(b *testing.B) {
	e := randUnitRows(rand.New(rand.NewPCG(7, 7)), 1024, 128)
	for b.Loop() {
		PoolTokens(e, 3)
	}
}

// TestWardMatchesScipy: cluster labels equal those of scipy 1.10's
// fcluster(linkage(1 − E·Eᵀ, method="ward"), max(n/factor, 1),
// criterion="maxclust") − 1, colpali-engine's call, on rows built by the
// same formula in both (rows repeat with period dup when dup > 0, so
// merges tie at height 0 and fewer clusters remain).
func TestWardMatchesScipy(t *testing.T) {
	rows := func(n, d, dup int) [][]float32 {
		e := make([][]float32, n)
		for i := range e {
			src := i
			if dup > 0 {
				src = i % dup
			}
			e[i] = make([]float32, d)
			var s float64
			for k := range e[i] {
				e[i][k] = float32(math.Sin(0.37*float64(src*src) + 1.3*float64(k) + 0.1*float64(src)))
				s += float64(e[i][k]) * float64(e[i][k])
			}
			for k := range e[i] {
				e[i][k] /= float32(math.Sqrt(s))
			}
		}
		return e
	}
	for _, c := range []struct {
		n, d, factor, dup int
		want              []int
	}{
		{9, 4, 2, 0, []int{2, 2, 1, 0, 2, 0, 1, 2, 3}},
		{20, 8, 3, 0, []int{1, 1, 3, 5, 1, 5, 2, 1, 0, 0, 1, 3, 4, 2, 4, 5, 3, 3, 3, 5}},
		{33, 16, 2, 0, []int{0, 1, 15, 8, 0, 8, 11, 0, 4, 4, 1, 14, 9, 12, 2, 6, 13, 14, 13, 8, 5, 14, 5, 7, 14, 11, 11, 13, 10, 0, 6, 1, 3}},
		{50, 8, 4, 0, []int{11, 10, 1, 5, 11, 5, 0, 11, 9, 9, 10, 1, 4, 0, 8, 6, 2, 1, 2, 5, 9, 1, 9, 6, 1, 0, 0, 2, 4, 11, 6, 10, 8, 4, 4, 3, 9, 0, 4, 0, 9, 4, 5, 5, 3, 11, 2, 8, 7, 0}},
		{12, 6, 2, 3, []int{1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}},
	} {
		e := rows(c.n, c.d, c.dup)
		labels, k := wardClusters(rowDistances(e), max(c.n/c.factor, 1))
		if !slices.Equal(labels, c.want) || k != slices.Max(c.want)+1 {
			t.Errorf("n=%d factor=%d dup=%d: %d clusters %v\nscipy: %v", c.n, c.factor, c.dup, k, labels, c.want)
		}
		if got := PoolTokens(e, c.factor); len(got) != k {
			t.Errorf("n=%d: PoolTokens gave %d rows for %d clusters", c.n, len(got), k)
		}
	}
}
