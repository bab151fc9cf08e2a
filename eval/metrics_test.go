package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestMetricsByHand checks the metrics on cases computed by hand with
// trec_eval's definitions: graded gains, ties broken by document id
// descending, unjudged documents as non-relevant, a query without any
// relevant document, a judged query missing from the run.
func TestMetricsByHand(t *testing.T) {
	qrels := Qrels{
		"q1": {"d1": 2, "d2": 1, "d3": 0},
		"q2": {"a": 0, "b": 1},
		"q3": {"x": 0},
		"q4": {"y": 1},
	}
	run := Run{
		"q1": {"d1": 0.9, "d2": 0.1, "d4": 0.5}, // d1, d4 (unjudged), d2
		"q2": {"a": 1.0, "b": 1.0},              // tie: b before a
		"q3": {"x": 0.5},
		"q9": {"z": 1}, // not judged: ignored
	}
	res := Evaluate(qrels, run, []int{1, 3})
	idcg := 2 + 1/math.Log2(3)
	want := map[string]Scores{
		"q1": {"ndcg@1": 1, "ndcg@3": 2.5 / idcg, "recall@1": 0.5, "recall@3": 1, "mrr@1": 1, "mrr@3": 1},
		"q2": {"ndcg@1": 1, "ndcg@3": 1, "recall@1": 1, "recall@3": 1, "mrr@1": 1, "mrr@3": 1},
		"q3": {"ndcg@1": 0, "ndcg@3": 0, "recall@1": 0, "recall@3": 0, "mrr@1": 0, "mrr@3": 0},
	}
	for q, w := range want {
		for m, v := range w {
			if got := res.PerQuery[q][m]; !near(got, v) {
				t.Errorf("%s %s = %v, want %v", q, m, got, v)
			}
		}
	}
	if res.Queries != 3 || !slices.Equal(res.Missing, []string{"q4"}) {
		t.Errorf("scored %d queries, missing %v", res.Queries, res.Missing)
	}
	if m := (2.5/idcg + 1 + 0) / 3; !near(res.Mean["ndcg@3"], m) {
		t.Errorf("mean ndcg@3 = %v, want %v", res.Mean["ndcg@3"], m)
	}
	// The tie rule decides: a relevant "a" tied with an irrelevant "b"
	// ranks second.
	r := Evaluate(Qrels{"q": {"a": 1, "b": 0}}, Run{"q": {"a": 1, "b": 1}}, []int{1, 2})
	if s := r.PerQuery["q"]; s["ndcg@1"] != 0 || !near(s["ndcg@2"], 1/math.Log2(3)) || s["mrr@2"] != 0.5 {
		t.Errorf("tie: %v", s)
	}
}

// TestMaxSimBruteForce compares MaxSim with a direct triple loop.
func TestMaxSimBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		q, d := randRows(rng, 1+rng.IntN(8), 16), randRows(rng, 1+rng.IntN(30), 16)
		var want float64
		for _, qv := range q {
			best := math.Inf(-1)
			for _, dv := range d {
				var s float64
				for k := range qv {
					s += float64(qv[k]) * float64(dv[k])
				}
				if s > best {
					best = s
				}
			}
			want += best
		}
		if got := MaxSim(q, d); !near(got, want) {
			t.Fatalf("MaxSim %v, want %v", got, want)
		}
	}
}

func randRows(rng *rand.Rand, n, d int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, d)
		for k := range rows[i] {
			rows[i][k] = float32(rng.NormFloat64())
		}
	}
	return rows
}
