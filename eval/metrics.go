// Package eval measures retrieval quality: it reads retrieval datasets in
// the BEIR layout, embeds their queries and documents through an embedder
// (the engine in-process, or a server over HTTP), ranks every document for
// every query by exact search (cosine of single vectors, or MaxSim of
// multi-vectors) and scores the rankings.
//
// # Metrics
//
// The definitions are trec_eval's, as pytrec_eval (and so BEIR and MTEB)
// compute them:
//
//   - a run is ranked by score, descending, ties broken by document id in
//     descending string order (trec_eval's deterministic tie rule);
//   - nDCG@k (ndcg_cut_k): DCG = Σ rel_i / log2(i+1) over the first k ranks,
//     with the graded relevance as gain (not 2^rel − 1), divided by the DCG
//     of the ideal ordering of the query's judged documents cut at k; 0
//     when the query has no relevant document;
//   - recall@k (recall_k): relevant documents (relevance > 0) in the first
//     k, over all the query's relevant documents; 0 without any;
//   - MRR@k: 1/rank of the first relevant document within the first k, 0
//     when there is none (BEIR's definition);
//   - averages are over the queries present in both the judgments and the
//     run, as pytrec_eval evaluates; a judged query the run lacks is
//     reported as missing, not scored.
package eval

import (
	"math"
	"sort"
)

// Qrels holds relevance judgments: query id -> document id -> grade.
type Qrels map[string]map[string]int

// Run holds retrieval scores: query id -> document id -> score.
type Run map[string]map[string]float64

// Scores are one query's metrics, by name ("ndcg@10", "recall@5",
// "mrr@10").
type Scores map[string]float64

// Result is an evaluation: per query and the mean over the scored queries.
type Result struct {
	PerQuery map[string]Scores
	Mean     Scores
	Queries  int      // queries scored
	Missing  []string // judged queries absent from the run
}

// Ranked returns a query's documents in trec_eval's order: score
// descending, ties by document id descending.
func Ranked(scores map[string]float64) []string {
	ids := make([]string, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		si, sj := scores[ids[i]], scores[ids[j]]
		if si != sj {
			return si > sj
		}
		return ids[i] > ids[j]
	})
	return ids
}

// Evaluate scores a run against judgments at the cut-offs ks.
func Evaluate(qrels Qrels, run Run, ks []int) Result {
	res := Result{PerQuery: map[string]Scores{}, Mean: Scores{}}
	var qids []string
	for q := range qrels {
		qids = append(qids, q)
	}
	sort.Strings(qids)
	for _, q := range qids {
		docs, ok := run[q]
		if !ok {
			res.Missing = append(res.Missing, q)
			continue
		}
		s := queryScores(qrels[q], Ranked(docs), ks)
		res.PerQuery[q] = s
		for name, v := range s {
			res.Mean[name] += v
		}
		res.Queries++
	}
	for name := range res.Mean {
		res.Mean[name] /= float64(res.Queries)
	}
	return res
}

func queryScores(judged map[string]int, ranked []string, ks []int) Scores {
	var ideal []int
	relevant := 0
	for _, g := range judged {
		if g > 0 {
			ideal = append(ideal, g)
			relevant++
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ideal)))
	s := Scores{}
	for _, k := range ks {
		var dcg, idcg float64
		found, first := 0, 0
		for i := 0; i < k && i < len(ranked); i++ {
			g := judged[ranked[i]]
			if g > 0 {
				dcg += float64(g) / math.Log2(float64(i+2))
				found++
				if first == 0 {
					first = i + 1
				}
			}
		}
		for i := 0; i < k && i < len(ideal); i++ {
			idcg += float64(ideal[i]) / math.Log2(float64(i+2))
		}
		name := func(m string) string { return m + "@" + itoa(k) }
		s[name("ndcg")], s[name("recall")], s[name("mrr")] = 0, 0, 0
		if idcg > 0 {
			s[name("ndcg")] = dcg / idcg
		}
		if relevant > 0 {
			s[name("recall")] = float64(found) / float64(relevant)
		}
		if first > 0 {
			s[name("mrr")] = 1 / float64(first)
		}
	}
	return s
}

func itoa(k int) string {
	if k < 10 {
		return string(rune('0' + k))
	}
	return itoa(k/10) + string(rune('0'+k%10))
}

// Cosine is the dot product of two L2-normalized vectors (float64 sum).
func Cosine(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// MaxSim is the late-interaction score: for each query vector its largest
// dot product with a document vector, summed.
func MaxSim(query, doc [][]float32) float64 {
	var total float64
	for _, q := range query {
		best := math.Inf(-1)
		for _, d := range doc {
			best = max(best, Cosine(q, d))
		}
		if len(doc) > 0 {
			total += best
		}
	}
	return total
}
