package engine

import (
	"context"
	"errors"
	"fmt"
)

// MaxRerankDocuments bounds the documents of one Rerank call: each is a
// whole prompt of the query and the document through the model.
const MaxRerankDocuments = 1000

// ErrNotReranker is wrapped by Rerank's error when the loaded model scores
// no pairs (an embedding model: rank by vector similarity instead).
var ErrNotReranker = errors.New("the model is not a reranker")

// Rerank scores each document's relevance to the query with a reranker
// model (Info.Reranker): every (query, document) pair becomes one prompt
// of the model's recipe, with instruction ("" for the default), and its
// score is the rank head's probability at the pair's last token, in
// document order. The pairs run through the scheduler as one request,
// batched with other traffic, and each pair's pooled state is kept in the
// embedding cache like an embedding. tokens counts the prompt tokens of
// all pairs. Input problems are *InputError.
func (e *Engine) Rerank(ctx context.Context, query Input, docs []Input, instruction string) (scores []float64, tokens int, err error) {
	if e.ranker == nil {
		return nil, 0, fmt.Errorf("engine: %s: %w", e.info.Name, ErrNotReranker)
	}
	switch {
	case len(docs) == 0:
		return nil, 0, invalid("documents", CodeEmpty, "no documents")
	case len(docs) > MaxRerankDocuments:
		return nil, 0, invalid("documents", CodeInvalid, "%d documents, more than the limit of %d per request", len(docs), MaxRerankDocuments)
	case len(query.Parts) == 0:
		return nil, 0, invalid("query", CodeEmpty, "empty query")
	case query.Template != "":
		return nil, 0, invalid("query", CodeInvalid, "a reranker's query takes no template")
	}
	req := Request{Instruction: instruction, Unnormalized: true, Inputs: make([]Input, len(docs))}
	for i, d := range docs {
		if d.Template != "" {
			return nil, 0, invalid(fmt.Sprintf("documents[%d]", i), CodeInvalid, "a reranker's document takes no template")
		}
		parts := append(append([]Part(nil), query.Parts...), d.Parts...)
		req.Inputs[i] = Input{Parts: parts, pairQuery: len(query.Parts)}
	}
	resp, err := e.embed(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	scores = make([]float64, len(docs))
	for i, emb := range resp.Embeddings {
		if scores[i], err = e.ranker.Score(emb.Vector); err != nil {
			return nil, 0, fmt.Errorf("engine: %w", err)
		}
	}
	return scores, resp.PromptTokens, nil
}
