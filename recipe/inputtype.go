package recipe

import (
	"fmt"
	"slices"
	"strings"
)

// Input types say what an input is for, in the words of Cohere's embed API
// (input_type); a recipe maps each onto its own tasks or instructions, or
// refuses it where the model has no such notion.
const (
	InputSearchQuery    = "search_query"
	InputSearchDocument = "search_document"
	InputClassification = "classification"
	InputClustering     = "clustering"
	InputImage          = "image"
)

// InputTypes lists the input types.
var InputTypes = []string{InputSearchQuery, InputSearchDocument, InputClassification, InputClustering, InputImage}

// Purpose is how a recipe serves one input type: what a request would give
// as its task and its instruction ("" for the recipe's default).
type Purpose struct {
	Task        string
	Instruction string
}

// InputTyper is a recipe that maps input types onto its tasks or
// instructions.
type InputTyper interface {
	InputType(name string) (Purpose, error)
}

// ForInputType returns r's purpose for an input type, or an error that says
// why the model takes no such input type.
func ForInputType(r Recipe, name string) (Purpose, error) {
	if !slices.Contains(InputTypes, name) {
		return Purpose{}, fmt.Errorf("unknown input type %q (want one of %s)", name, strings.Join(InputTypes, ", "))
	}
	it, ok := r.(InputTyper)
	if !ok {
		return Purpose{}, fmt.Errorf("the %s model has no input types; send its tasks (%s) on /v1/embeddings", r.Name(), strings.Join(r.Tasks(), ", "))
	}
	return it.InputType(name)
}

// InputType implements InputTyper: queries and documents are the
// retrieval sides, classification and clustering the symmetric
// text-matching task (jina-embeddings-v4's task for comparing texts with
// each other), images the passage side (the prompt of an image alone is
// the same for every task).
func (JinaV4) InputType(name string) (Purpose, error) {
	switch name {
	case InputSearchQuery:
		return Purpose{Task: "retrieval.query"}, nil
	case InputSearchDocument, InputImage:
		return Purpose{Task: "retrieval.passage"}, nil
	}
	return Purpose{Task: "text-matching"}, nil
}

// InputType implements InputTyper: ColQwen is a retriever with one task,
// its prompt chosen by the input (texts are queries, images documents).
// It was trained for nothing else, so classification and clustering are
// refused.
func (ColQwen) InputType(name string) (Purpose, error) {
	switch name {
	case InputSearchQuery, InputSearchDocument, InputImage:
		return Purpose{Task: "retrieval"}, nil
	}
	return Purpose{}, fmt.Errorf("ColQwen is a retriever (texts as queries, images as documents); it has no %s embeddings", name)
}

// InputType implements InputTyper: GME gives documents the default
// instruction, and queries the caller's instruction when there is one, the
// default otherwise (gme_inference's is_query): an input type alone names
// no instruction, so every retrieval side gets the default. Classification
// and clustering need an instruction that names the task's labels or
// domain, which no input type carries: refused, with the field to use.
func (GME) InputType(name string) (Purpose, error) {
	switch name {
	case InputSearchQuery, InputSearchDocument, InputImage:
		return Purpose{}, nil
	}
	return Purpose{}, fmt.Errorf("GME embeds %s inputs with an instruction naming the task; send it as \"instruction\" on /v1/embeddings", name)
}

// qwen3QueryInstruction is the query instruction the Qwen3-VL-Embedding
// model card recommends for retrieval (documents take the default).
const qwen3QueryInstruction = "Retrieve images or text relevant to the user's query."

// InputType implements InputTyper: queries get the model card's retrieval
// instruction, documents and images the default one; classification and
// clustering need an instruction naming the task, which no input type
// carries: refused, with the field to use.
func (Qwen3VLEmbedding) InputType(name string) (Purpose, error) {
	switch name {
	case InputSearchQuery:
		return Purpose{Instruction: qwen3QueryInstruction}, nil
	case InputSearchDocument, InputImage:
		return Purpose{}, nil
	}
	return Purpose{}, fmt.Errorf("Qwen3-VL-Embedding embeds %s inputs with an instruction naming the task; send it as \"instruction\" on /v1/embeddings", name)
}

// InputType implements InputTyper: a reranker makes no embeddings.
func (Qwen3VLReranker) InputType(name string) (Purpose, error) {
	return Purpose{}, fmt.Errorf("Qwen3-VL-Reranker scores (query, document) pairs and makes no embeddings; use /v2/rerank")
}

// InputType implements InputTyper: queries are texts in the query prompt,
// documents (text or image pages) and images the page prompt; the
// retrievers were trained for nothing else, so classification and
// clustering are refused.
func (r Qwen3MultiVector) InputType(name string) (Purpose, error) {
	switch name {
	case InputSearchQuery:
		return Purpose{Task: "retrieval.query"}, nil
	case InputSearchDocument, InputImage:
		return Purpose{Task: "retrieval.passage"}, nil
	}
	return Purpose{}, fmt.Errorf("%s is a retriever (queries and pages); it has no %s embeddings", r.Name(), name)
}
