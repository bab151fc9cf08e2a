package search

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vembed/vembed/engine"
)

// Reranker scores (query, document) pairs itself: *engine.Engine with a
// reranker model (Qwen3-VL-Reranker).
type Reranker interface {
	Rerank(ctx context.Context, query engine.Input, docs []engine.Input, instruction string) ([]float64, int, error)
}

// Rerank rescores hits with a reranker model and returns the best k by
// its score, with those scores. The rule of what it reads: a page's text
// layer (the row's text) when it holds any non-space character, else its
// page image (rendered by pages), else the empty text. Equal reranker
// scores keep the first stage's order.
func Rerank(ctx context.Context, rr Reranker, pages *Pages, query engine.Input, hits []Hit, k int) ([]Hit, []float64, error) {
	docs := make([]engine.Input, len(hits))
	for i, h := range hits {
		docs[i] = engine.TextInput(h.Text)
		if strings.TrimSpace(h.Text) != "" || pages == nil {
			continue
		}
		if img, err := pages.Image(ctx, h.ID, 0); err == nil {
			docs[i] = engine.ImageInput(img)
		}
	}
	scores, _, err := rr.Rerank(ctx, query, docs, "")
	if err != nil {
		return nil, nil, err
	}
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	order = order[:min(k, len(order))]
	out := make([]Hit, len(order))
	rs := make([]float64, len(order))
	for i, j := range order {
		out[i], rs[i] = hits[j], scores[j]
	}
	return out, rs, nil
}

// snippetBytes bounds a hit's snippet of its row's text.
const snippetBytes = 300

// Snippet is the start of a row's text, its white space collapsed, cut at
// a character boundary.
func Snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= snippetBytes {
		return s
	}
	cut := snippetBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
