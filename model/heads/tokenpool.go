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
// distances, the dendrogram is cut where at most that many clusters
// remain (scipy's fcluster "maxclust": merges tied at the cut height are
// all kept, so exact duplicates can leave fewer), and each cluster becomes
// the L2-normalized mean of its vectors, in the order fcluster numbers the
// clusters, which is colpali-engine's output order. The input is not
// modified. A factor of 1 or less, or fewer
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
	labels, k := wardClusters(rowDistances(rows), target)
	dim := len(rows[0])
	sums := make([][]float64, k)
	counts := make([]int, k)
	for i, l := range labels {
		if sums[l] == nil {
			sums[l] = make([]float64, dim)
		}
		for k, v := range rows[i] {
			sums[l][k] += float64(v)
		}
		counts[l]++
	}
	out := make([][]float32, 0, k)
	for l, s := range sums {
		if counts[l] == 0 {
			continue
		}
		var norm float64
		for k := range s {
			s[k] /= float64(counts[l])
			// A product is converted before it is added to (float64(a*b) + c): that
			// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
			// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
			norm += float64(s[k] * s[k])
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
				g[a*d+b] += float64(ra * float64(r[b]))
			}
		}
	}
	eg := make([]float64, n*d) // E·(EᵀE)
	for i, r := range e {
		for a := range d {
			ra := float64(r[a])
			for b := range d {
				eg[i*d+b] += float64(ra * g[a*d+b])
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
				ss += float64(eg[i*d+b] * float64(e[j][b]))
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
		s += float64(float64(a[i]) * float64(b[i]))
	}
	return s
}

// wardClusters builds the Ward dendrogram of n points (their distance
// matrix, which it overwrites) and cuts it into at most target clusters
// exactly as scipy's linkage(method="ward") and fcluster(criterion=
// "maxclust") do, so that pooled vectors come out in colpali-engine's
// order:
//
//   - the dendrogram is built by following nearest-neighbour chains
//     (scipy's nn_chain: the chain starts at the first live point, ties go
//     to the previous link, then to the lowest index; the merged cluster
//     takes the higher index), and its merges are sorted stably by height;
//   - the cut is at the height of merge n−target, and every merge at or
//     below it is kept, so merges tied at the cut give fewer clusters;
//   - clusters are numbered by a walk down from the root, a node's
//     non-leaf children (left, then right) before its leaves, the left
//     child being the one with the lower scipy cluster id.
//
// It returns each point's cluster and the number of clusters.
func wardClusters(dist []float64, target int) ([]int, int) {
	n := int(math.Sqrt(float64(len(dist))))
	if target >= n {
		labels := make([]int, n)
		for i := range labels {
			labels[i] = i
		}
		return labels, n
	}
	size := make([]int, n)
	active := make([]bool, n)
	for i := range n {
		size[i], active[i] = 1, true
	}
	type link struct {
		x, y   int // the merged points' slots, x < y; y keeps the union
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
		x, y := min(a, prev), max(a, prev)
		links = append(links, link{x, y, bd})
		merge(dist, n, size, active, y, x)
	}
	slices.SortStableFunc(links, func(p, q link) int { return cmpFloat(p.height, q.height) })

	// scipy's cluster ids: points 0…n−1, merge i is n+i; a merge's
	// children are the clusters holding its two slots' points then.
	parent := make([]int, 2*n-1)
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
	left, right := make([]int, n-1), make([]int, n-1)
	top := make([]float64, n-1) // highest merge in each subtree
	for i, l := range links {
		cx, cy := find(l.x), find(l.y)
		left[i], right[i] = min(cx, cy), max(cx, cy)
		parent[cx], parent[cy] = n+i, n+i
		top[i] = l.height
		for _, c := range []int{cx, cy} {
			if c >= n {
				top[i] = max(top[i], top[c-n])
			}
		}
	}
	cut := top[n-target-1]

	labels := make([]int, n)
	next := 0
	var walk func(i, cluster int)
	walk = func(i, cluster int) {
		if cluster < 0 && top[i] <= cut {
			cluster, next = next, next+1
		}
		for _, c := range []int{left[i], right[i]} {
			if c >= n {
				walk(c-n, cluster)
			}
		}
		for _, c := range []int{left[i], right[i]} {
			if c < n {
				if cluster >= 0 {
					labels[c] = cluster
				} else {
					labels[c], next = next, next+1
				}
			}
		}
	}
	walk(n-2, -1)
	return labels, next
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
		v := math.Sqrt(max((float64((sa+sk)*dak*dak)+float64((sb+sk)*dbk*dbk)-float64(sk*dab*dab))/t, 0))
		dist[a*n+k], dist[k*n+a] = v, v
	}
	size[a] += size[b]
	active[b] = false
}
