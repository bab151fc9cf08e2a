package bench

import (
	"slices"
	"testing"
)

// TestImagePlan checks that I-50's distinct images have I-0's mix of
// sizes, that every second request repeats an image sent at least
// clients-1 requests before it, and that the plan is the same every run.
func TestImagePlan(t *testing.T) {
	sizes := []int{448, 640}
	for _, clients := range []int{1, 4} {
		base := imagePlan(false, 24, sizes, clients, 1)
		plan := imagePlan(true, 24, sizes, clients, 2)
		count := func(p []planned, distinctOnly bool) map[int]int {
			seen := map[int]bool{}
			n := map[int]int{}
			for _, im := range p {
				if distinctOnly && seen[im.seed] {
					continue
				}
				seen[im.seed] = true
				n[im.size]++
			}
			return n
		}
		if b, d := count(base, false), count(plan, true); b[448] != 12 || b[640] != 12 || d[448] != 6 || d[640] != 6 {
			t.Errorf("clients %d: sizes of I-0 %v, of I-50's distinct images %v; want even mixes", clients, b, d)
		}
		for i, im := range plan {
			if i%2 == 0 {
				continue
			}
			j := slices.IndexFunc(plan, func(p planned) bool { return p.seed == im.seed })
			if j >= i || (i >= clients && j > i-clients) {
				t.Errorf("clients %d: request %d repeats request %d's image", clients, i, j)
			}
		}
		if again := imagePlan(true, 24, sizes, clients, 2); !slices.Equal(again, plan) {
			t.Errorf("clients %d: the plan differs between runs", clients)
		}
	}
}

// TestReplicaSpread: each replica gets as many of the even requests (I-50's
// distinct images) as of the odd ones (its repeats), and as many requests
// as the others.
func TestReplicaSpread(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		even, odd := make([]int, n), make([]int, n)
		for i := range 8 * n * n {
			r := replica(i, n)
			if i%2 == 0 {
				even[r]++
			} else {
				odd[r]++
			}
		}
		for r := range n {
			if even[r] != even[0] || odd[r] != odd[0] || (n > 1 && even[r] != odd[r]) {
				t.Errorf("%d replicas: even requests %v, odd %v", n, even, odd)
				break
			}
		}
	}
}

// TestImageFilesEmpty: an empty folder of images is an error, not a
// scenario of no request.
func TestImageFilesEmpty(t *testing.T) {
	if _, err := imageFiles([]string{t.TempDir()}); err == nil {
		t.Error("an empty folder of --images gave no error")
	}
}
