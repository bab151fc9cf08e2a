package search

import (
	"context"
	"slices"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/recipe"
)

// Embedder embeds requests: *engine.Engine.
type Embedder interface {
	Embed(ctx context.Context, req engine.Request) (*engine.Response, error)
	Info() engine.Info
}

// EmbedQuery embeds a search query with the model's query prompt: the
// recipe's search_query input type (recipe.ForInputType), or for a model
// without input types its retrieval.query task, or its default. req
// carries the inputs and the index's options (multivector, dimensions);
// an Instruction in it replaces the query prompt's.
func EmbedQuery(ctx context.Context, emb Embedder, req engine.Request) (*engine.Response, error) {
	if req.Instruction != "" || req.Task != "" {
		return emb.Embed(ctx, req)
	}
	q := req
	q.InputType = recipe.InputSearchQuery
	resp, err := emb.Embed(ctx, q)
	if ie, ok := engine.AsInputError(err); !ok || ie.Param != "input_type" {
		return resp, err
	}
	// The model has no input types: refused before any work.
	if slices.Contains(emb.Info().Tasks, "retrieval.query") {
		req.Task = "retrieval.query"
	}
	return emb.Embed(ctx, req)
}
