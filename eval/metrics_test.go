package eval

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
		"q5": {"z": 3, "y": 1}, // z judged but never retrieved
	}
	run := Run{
		"q1": {"d1": 0.9, "d2": 0.1, "d4": 0.5}, // d1, d4 (unjudged), d2
		"q2": {"a": 1.0, "b": 1.0},              // tie: b before a
		"q3": {"x": 0.5},
		"q5": {"y": 0.5, "w": 0.4},
		"q9": {"z": 1}, // not judged: ignored
	}
	res := Evaluate(qrels, run, []int{1, 3})
	idcg := 2 + 1/math.Log2(3)
	want := map[string]Scores{
		// d1 (2), d4 (unjudged), d2 (1): MAP@3 = (1/1 + 2/3) / 2.
		"q1": {"ndcg@1": 1, "ndcg@3": 2.5 / idcg, "recall@1": 0.5, "recall@3": 1, "map@1": 0.5, "map@3": 5.0 / 6, "mrr@1": 1, "mrr@3": 1},
		"q2": {"ndcg@1": 1, "ndcg@3": 1, "recall@1": 1, "recall@3": 1, "map@1": 1, "map@3": 1, "mrr@1": 1, "mrr@3": 1},
		"q3": {"ndcg@1": 0, "ndcg@3": 0, "recall@1": 0, "recall@3": 0, "map@1": 0, "map@3": 0, "mrr@1": 0, "mrr@3": 0},
		// y (1) first, w unjudged; the ideal ranks the unretrieved z (3)
		// first: nDCG@1 = 1/3, nDCG@3 = 1 / (3 + 1/log2 3).
		"q5": {"ndcg@1": 1.0 / 3, "ndcg@3": 1 / (3 + 1/math.Log2(3)), "recall@1": 0.5, "recall@3": 0.5, "map@1": 0.5, "map@3": 0.5, "mrr@1": 1, "mrr@3": 1},
	}
	for q, w := range want {
		for m, v := range w {
			if got := res.PerQuery[q][m]; !near(got, v) {
				t.Errorf("%s %s = %v, want %v", q, m, got, v)
			}
		}
	}
	if res.Queries != 4 || !slices.Equal(res.Missing, []string{"q4"}) {
		t.Errorf("scored %d queries, missing %v", res.Queries, res.Missing)
	}
	// The query without relevant documents (q3) counts, as 0.
	if m := (2.5/idcg + 1 + 0 + 1/(3+1/math.Log2(3))) / 4; !near(res.Mean["ndcg@3"], m) {
		t.Errorf("mean ndcg@3 = %v, want %v", res.Mean["ndcg@3"], m)
	}
	if m := (5.0/6 + 1 + 0 + 0.5) / 4; !near(res.Mean["map@3"], m) {
		t.Errorf("mean map@3 = %v, want %v", res.Mean["map@3"], m)
	}
	// The tie rule decides: a relevant "a" tied with an irrelevant "b"
	// ranks second.
	r := Evaluate(Qrels{"q": {"a": 1, "b": 0}}, Run{"q": {"a": 1, "b": 1}}, []int{1, 2})
	if s := r.PerQuery["q"]; s["ndcg@1"] != 0 || !near(s["ndcg@2"], 1/math.Log2(3)) || s["mrr@2"] != 0.5 {
		t.Errorf("tie: %v", s)
	}
}

// TestScoreBruteForce compares Score with direct loops in float64:
// MaxSim of multi-vectors of different lengths and cosine of unnormalized
// single vectors, a document without vectors scoring −Inf.
func TestScoreBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dot := func(a, b []float32) float64 {
		var s float64
		for k := range a {
			s += float64(a[k]) * float64(b[k])
		}
		return s
	}
	for round := range 6 {
		dim := 16 + 8*round
		var qs, ds []Vectors
		for range 1 + rng.IntN(5) {
			qs = append(qs, Vectors{Multi: randRows(rng, 1+rng.IntN(9), dim), Single: randRows(rng, 1, dim)[0]})
		}
		for range 1 + rng.IntN(7) {
			ds = append(ds, Vectors{Multi: randRows(rng, 1+rng.IntN(40), dim), Single: randRows(rng, 1, dim)[0]})
		}
		ds = append(ds, Vectors{})
		multi, err := Score(qs, ds, true)
		if err != nil {
			t.Fatal(err)
		}
		single, err := Score(qs, ds, false)
		if err != nil {
			t.Fatal(err)
		}
		for qi, q := range qs {
			for di, d := range ds {
				var want, cos float64
				if len(d.Multi) == 0 {
					want, cos = math.Inf(-1), math.Inf(-1)
				} else {
					for _, qv := range q.Multi {
						best := math.Inf(-1)
						for _, dv := range d.Multi {
							best = math.Max(best, dot(qv, dv))
						}
						want += best
					}
					cos = dot(q.Single, d.Single) / math.Sqrt(dot(q.Single, q.Single)*dot(d.Single, d.Single))
				}
				if got := multi[qi][di]; !(got == want || math.Abs(got-want) <= 1e-5*(1+math.Abs(want))) {
					t.Errorf("round %d: MaxSim(q%d, d%d) = %v, want %v", round, qi, di, got, want)
				}
				if got := single[qi][di]; !(got == cos || math.Abs(got-cos) <= 1e-6) {
					t.Errorf("round %d: cosine(q%d, d%d) = %v, want %v", round, qi, di, got, cos)
				}
			}
		}
	}
	// More documents than one product takes, and more query vectors.
	var qs, ds []Vectors
	for range 3 {
		qs = append(qs, Vectors{Single: randRows(rng, 1, 4)[0]})
	}
	for range docBlockRows + 100 {
		ds = append(ds, Vectors{Single: randRows(rng, 1, 4)[0]})
	}
	got, err := Score(qs, ds, false)
	if err != nil {
		t.Fatal(err)
	}
	for qi, q := range qs {
		for _, di := range []int{0, docBlockRows - 1, docBlockRows, len(ds) - 1} {
			d := ds[di].Single
			want := dot(q.Single, d) / math.Sqrt(dot(q.Single, q.Single)*dot(d, d))
			if math.Abs(got[qi][di]-want) > 1e-6 {
				t.Errorf("cosine(q%d, d%d) = %v, want %v", qi, di, got[qi][di], want)
			}
		}
	}
	long := []Vectors{{Multi: randRows(rng, queryBlockRows-1, 8)}, {Multi: randRows(rng, 5, 8)}}
	got, err = Score(long, []Vectors{{Multi: randRows(rng, 3, 8)}}, true)
	if err != nil || len(got) != 2 || got[1][0] == 0 || math.IsInf(got[1][0], 0) {
		t.Errorf("queries over two blocks: %v %v", err, got)
	}
	if _, err := Score([]Vectors{{Single: make([]float32, 4)}}, []Vectors{{Single: make([]float32, 5)}}, false); err == nil {
		t.Error("vectors of different widths scored")
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

// TestTRECFiles writes a run and its judgments in trec_eval's formats and
// reads them back as trec_eval would: the same figures, ties and ids with
// spaces included.
func TestTRECFiles(t *testing.T) {
	qrels := Qrels{"q 1": {"a": 2, "b b": 1, "c": 0}, "q2": {"x": 1}}
	run := Run{"q 1": {"a": 0.5, "b b": 0.5, "z": 0.25}, "q2": {"x": 0.125, "y": 0.75}}
	var rb, qb strings.Builder
	if err := WriteTREC(&rb, run, "t"); err != nil {
		t.Fatal(err)
	}
	if err := WriteQrels(&qb, qrels); err != nil {
		t.Fatal(err)
	}
	want := "q_1 Q0 b_b 1 0.5 t\nq_1 Q0 a 2 0.5 t\nq_1 Q0 z 3 0.25 t\nq2 Q0 y 1 0.75 t\nq2 Q0 x 2 0.125 t\n"
	if rb.String() != want {
		t.Errorf("run:\n%s\nwant\n%s", rb.String(), want)
	}
	back, backQ := Run{}, Qrels{}
	for _, l := range strings.Split(strings.TrimSpace(rb.String()), "\n") {
		f := strings.Fields(l)
		s, _ := strconv.ParseFloat(f[4], 64)
		if back[f[0]] == nil {
			back[f[0]] = map[string]float64{}
		}
		back[f[0]][f[2]] = s
	}
	for _, l := range strings.Split(strings.TrimSpace(qb.String()), "\n") {
		f := strings.Fields(l)
		g, _ := strconv.Atoi(f[3])
		if backQ[f[0]] == nil {
			backQ[f[0]] = map[string]int{}
		}
		backQ[f[0]][f[2]] = g
	}
	a, b := Evaluate(qrels, run, []int{1, 2, 3}), Evaluate(backQ, back, []int{1, 2, 3})
	if !reflect.DeepEqual(a.Mean, b.Mean) {
		t.Errorf("read back %v, want %v", b.Mean, a.Mean)
	}
}

// TestTopK: the heap's top k equal the first k of the fully sorted row,
// ties included.
func TestTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := rng.IntN(60)
		scores, ids := make([]float64, n), make([]string, n)
		run := map[string]float64{}
		for i := range n {
			scores[i] = float64(rng.IntN(5))
			ids[i] = strconv.Itoa(rng.IntN(1000)) + "_" + strconv.Itoa(i)
			run[ids[i]] = scores[i]
		}
		k := rng.IntN(12)
		var got []string
		for _, i := range topK(scores, ids, k) {
			got = append(got, ids[i])
		}
		if want := Ranked(run)[:min(k, n)]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("k=%d: %v, want %v", k, got, want)
		}
	}
}
