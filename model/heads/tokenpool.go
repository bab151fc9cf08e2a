package heads

import (
	"math"
	"slices"
)

// PoolTokens reduces a page's multi-vectors to at most max(n/factor, 1)
// vectors by hierarchical clustering, as colpali-engine's
// HierarchicalTokenPooler does: with S the cosine similarities of the
// (normalized) vectors, each vector is described by its row of distances
// 1 − S, the rows are clustered by Ward linkage on their Euclidean
// distances until that many clusters remain, and each cluster becomes the
// L2-normalized mean of its vectors. Clusters come in the order of their
// first vector. The input is not modified. A factor of 1 or less, or fewer
// than two vectors, returns copies of the rows.
//
// Storage falls by the factor; late-interaction retrieval quality mostly
// holds for factors of 2 or 3 (colpali-engine's measurements).
func PoolTokens(rows [][]float32, factor int) [][]float32 {
	n := len(rows)
	if factor <= 1 || n < 2 {
		out := make([][]float32, n)
		for i, r := range rows {
			out[i] = slices.Clone(r)
		}
		return out
	}
	target := max(n/factor, 1)
	labels := wardClusters(rowDistances(rows), target)
	dim := len(rows[0])
	sums := make([][]float64, target)
	counts := make([]int, target)
	for i, l := range labels {
		if sums[l] == nil {
			sums[l] = make([]float64, dim)
		}
		for k, v := range rows[i] {
			sums[l][k] += float64(v)
		}
		counts[l]++
	}
	out := make([][]float32, 0, target)
	for l, s := range sums {
		if counts[l] == 0 {
			continue
		}
		var norm float64
		for k := range s {
			s[k] /= float64(counts[l])
			norm += s[k] * s[k]
		}
		norm = math.Sqrt(norm)
		v := make([]float32, dim)
		for k := range s {
			if norm > 0 {
				v[k] = float32(s[k] / norm)
			}
		}
		out = append(out, v)
	}
	return out
}

// rowDistances returns the Euclidean distances between the rows of
// D = 1 − S, S = E·Eᵀ, as a full n×n matrix. It uses ‖Dᵢ−Dⱼ‖² =
// ‖Dᵢ‖² + ‖Dⱼ‖² − 2·Dᵢ·Dⱼ with Dᵢ·Dⱼ = n − rᵢ − rⱼ + (S·S)ᵢⱼ (rᵢ the
// row sums of S), and S·S = E·(EᵀE)·Eᵀ: O(n²·d) instead of O(n³).
func rowDistances(e [][]float32) []float64 {
	n, d := len(e), len(e[0])
	s := make([]float64, n*n)
	for i := range n {
		for j := i; j < n; j++ {
			v := dot64(e[i], e[j])
			s[i*n+j], s[j*n+i] = v, v
		}
	}
	g := make([]float64, d*d) // EᵀE
	for _, r := range e {
		for a := range d {
			ra := float64(r[a])
			for b := range d {
				g[a*d+b] += ra * float64(r[b])
			}
		}
	}
	eg := make([]float64, n*d) // E·(EᵀE)
	for i, r := range e {
		for a := range d {
			ra := float64(r[a])
			for b := range d {
				eg[i*d+b] += ra * g[a*d+b]
			}
		}
	}
	rs := make([]float64, n)
	for i := range n {
		for j := range n {
			rs[i] += s[i*n+j]
		}
	}
	dd := make([]float64, n*n) // Dᵢ·Dⱼ
	for i := range n {
		for j := i; j < n; j++ {
			var ss float64
			for b := range d {
				ss += eg[i*d+b] * float64(e[j][b])
			}
			v := float64(n) - rs[i] - rs[j] + ss
			dd[i*n+j], dd[j*n+i] = v, v
		}
	}
	dist := make([]float64, n*n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := math.Sqrt(max(dd[i*n+i]+dd[j*n+j]-2*dd[i*n+j], 0))
			dist[i*n+j], dist[j*n+i] = v, v
		}
	}
	return dist
}

func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// wardClusters builds the Ward dendrogram of n points (their distance
// matrix, which it overwrites) and cuts it into target clusters, as
// scipy's fcluster(criterion="maxclust") does: the n−target lowest merges
// are kept. Points are labelled by cluster, numbered in the order of the
// clusters' first points. The dendrogram is built by following
// nearest-neighbour chains, which find the same merges as the closest-pair
// algorithm for Ward's reducible criterion in O(n²), though not in height
// order: hence the sort before the cut.
func wardClusters(dist []float64, target int) []int {
	n := int(math.Sqrt(float64(len(dist))))
	size := make([]int, n)
	active := make([]bool, n)
	for i := range n {
		size[i], active[i] = 1, true
	}
	type link struct {
		a, b   int // representatives: b joined a
		height float64
	}
	links := make([]link, 0, n-1)
	var chain []int
	for len(links) < n-1 {
		if len(chain) == 0 {
			for i := range n {
				if active[i] {
					chain = append(chain, i)
					break
				}
			}
		}
		a := chain[len(chain)-1]
		prev := -1
		if len(chain) > 1 {
			prev = chain[len(chain)-2]
		}
		// The nearest active neighbour of a, preferring the previous link
		// on ties so that chains end.
		best, bd := prev, math.Inf(1)
		if prev >= 0 {
			bd = dist[a*n+prev]
		}
		for j := range n {
			if j != a && active[j] && dist[a*n+j] < bd {
				best, bd = j, dist[a*n+j]
			}
		}
		if best != prev {
			chain = append(chain, best)
			continue
		}
		chain = chain[:len(chain)-2]
		links = append(links, link{a, prev, bd})
		merge(dist, n, size, active, a, prev)
	}
	// Replay the lowest merges; a link's representatives stand for the
	// clusters they led when it was made, which union-find recovers.
	slices.SortStableFunc(links, func(x, y link) int { return cmpFloat(x.height, y.height) })
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, l := range links[:n-target] {
		parent[find(l.b)] = find(l.a)
	}
	labels := make([]int, n)
	ids := map[int]int{}
	for i := range n {
		r := find(i)
		id, ok := ids[r]
		if !ok {
			id = len(ids)
			ids[r] = id
		}
		labels[i] = id
	}
	return labels
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// merge joins cluster b into a, updating a's distances by the
// Lance-Williams formula for Ward linkage (on Euclidean distances, as
// scipy's linkage(method="ward")).
func merge(dist []float64, n int, size []int, active []bool, a, b int) {
	sa, sb := float64(size[a]), float64(size[b])
	dab := dist[a*n+b]
	for k := range n {
		if !active[k] || k == a || k == b {
			continue
		}
		sk := float64(size[k])
		t := sa + sb + sk
		dak, dbk := dist[a*n+k], dist[b*n+k]
		v := math.Sqrt(max(((sa+sk)*dak*dak+(sb+sk)*dbk*dbk-sk*dab*dab)/t, 0))
		dist[a*n+k], dist[k*n+a] = v, v
	}
	size[a] += size[b]
	active[b] = false
}
