package eval

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// WriteTREC writes a run in trec_eval's results format, "qid Q0 docid
// rank score tag" a line, queries in id order, documents ranked; with
// WriteQrels' file, `trec_eval -m ndcg_cut.10 QRELS RUN` recomputes
// Evaluate's figures (for a Report's run, which keeps each query's top
// max(k), at cut-offs up to that). Whitespace inside ids, which the format cannot
// hold, becomes "_".
func WriteTREC(w io.Writer, run Run, tag string) error {
	bw := bufio.NewWriter(w)
	for _, q := range sortedKeys(run) {
		for rank, d := range Ranked(run[q]) {
			fmt.Fprintf(bw, "%s Q0 %s %d %s %s\n", trecID(q), trecID(d), rank+1, strconv.FormatFloat(run[q][d], 'g', -1, 64), trecID(tag))
		}
	}
	return bw.Flush()
}

// WriteQrels writes judgments in trec_eval's qrels format, "qid 0 docid
// grade" a line.
func WriteQrels(w io.Writer, qrels Qrels) error {
	bw := bufio.NewWriter(w)
	for _, q := range sortedKeys(qrels) {
		for _, d := range sortedKeys(qrels[q]) {
			fmt.Fprintf(bw, "%s 0 %s %d\n", trecID(q), trecID(d), qrels[q][d])
		}
	}
	return bw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func trecID(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Join(strings.Fields(s), "_")
}
