// Package eval measures retrieval quality: it reads retrieval datasets (the
// BEIR layout in JSONL or Parquet, ViDoRe v1 tables), embeds their queries
// and documents through an embedder (the engine in-process, or a server
// over HTTP), ranks every document for every query by exact search (cosine
// of single vectors, or MaxSim of multi-vectors) and scores the rankings.
//
// # Metrics
//
// The definitions are trec_eval's (versions 9 and 10: m_ndcg_cut.c,
// m_recall.c, m_map_cut.c, m_recip_rank.c, form_res_rels.c), which
// pytrec_eval runs for BEIR, MTEB and the ViDoRe benchmark; WriteTREC and
// WriteQrels write a run and its judgments for trec_eval to check:
//
//   - a query's run is ranked by score, descending, ties broken by document
//     id in descending byte order (trec_eval's comp_sim_docno; the order
//     the caller gave the documents in plays no part);
//   - a document is relevant when its grade is at least 1; unjudged
//     documents count as grade 0;
//   - nDCG@k (ndcg_cut_k): DCG = Σ_{r≤k} grade_r / log2(r+1), the grade
//     itself as gain (not 2^grade − 1), divided by the DCG of the ideal
//     ordering of the query's judged grades cut at k;
//   - recall@k (recall_k): relevant documents in the first k over all the
//     query's relevant documents;
//   - MAP@k (map_cut_k): the sum, over the relevant documents in the first
//     k, of the precision at their rank, divided by the number of all the
//     query's relevant documents (not by min(k, that number));
//   - MRR@k: 1/rank of the first relevant document within the first k
//     (trec_eval's recip_rank cut at k; BEIR's own mrr gives the same value
//     except in exact score ties, which it leaves in the caller's order).
//
// A query with judgments but no relevant document scores 0 on every
// metric and counts in the average: trec_eval ignores only queries with no
// judgments at all, pytrec_eval returns 0 for the others, and BEIR divides
// by the number of queries pytrec_eval returned. Queries without
// judgments in the split are neither embedded nor evaluated (BEIR keeps
// only the queries its qrels name); a judged query the run lacks is reported as missing and left out
// of the average (trec_eval without -c). Documents whose id equals the
// query id are kept (BEIR's ignore_identical_ids is not applied: ViDoRe
// v2/v3 number queries and pages from 0 alike).
//
// # Runs
//
// EvaluateDataset embeds the corpus and the judged queries in batches,
// several requests at a time, so an engine batches across them and its
// caches apply; scores are float32 products (kernels.MatMul), as the
// reference evaluators' on accelerators, and each query keeps its top
// max(k) documents. With a cache directory the corpus's embeddings are
// appended to a file as each batch finishes (store.go gives the format),
// keyed by the model's description and its vectors for a fixed probe,
// the corpus's content and the options, so that an interrupted run
// resumes and a second one embeds only the queries.
package eval

import (
	"math"
	"sort"
	"strconv"
)

// Qrels holds relevance judgments: query id -> document id -> grade.
type Qrels map[string]map[string]int

// Run holds retrieval scores: query id -> document id -> score.
type Run map[string]map[string]float64

// Scores are one query's metrics, by name ("ndcg@10", "recall@5",
// "map@10", "mrr@10").
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
	for _, g := range judged {
		if g > 0 {
			ideal = append(ideal, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ideal)))
	relevant := len(ideal)
	s := Scores{}
	for _, k := range ks {
		var dcg, idcg, precisions float64
		found, first := 0, 0
		for i := 0; i < k && i < len(ranked); i++ {
			if g := judged[ranked[i]]; g > 0 {
				dcg += float64(g) / math.Log2(float64(i+2))
				found++
				precisions += float64(found) / float64(i+1)
				if first == 0 {
					first = i + 1
				}
			}
		}
		for i := 0; i < k && i < len(ideal); i++ {
			idcg += float64(ideal[i]) / math.Log2(float64(i+2))
		}
		at := "@" + strconv.Itoa(k)
		s["ndcg"+at], s["recall"+at], s["map"+at], s["mrr"+at] = 0, 0, 0, 0
		if idcg > 0 {
			s["ndcg"+at] = dcg / idcg
		}
		if relevant > 0 {
			s["recall"+at] = float64(found) / float64(relevant)
			s["map"+at] = precisions / float64(relevant)
		}
		if first > 0 {
			s["mrr"+at] = 1 / float64(first)
		}
	}
	return s
}
