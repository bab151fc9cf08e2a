package recipe

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/tokenizer"
)

// The Qwen3.5 retrievers share Qwen3MultiVector's rules (one L2-normalized
// vector per token, every prompt token kept; tasks retrieval,
// retrieval.query, retrieval.passage; a page image's prompt
// "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe
// the image.<|im_end|><|endoftext|>", colpali-engine's ColQwen3_5Processor
// one) and differ in their query prompt and image budget:
//
//   - ColQwen3.5 (colpali-engine): a query is its text as given, then ten
//     <|endoftext|> (process_queries: no prefix in the releases'
//     colpali-engine, the augmentation suffix); images within the budget
//     its processor was given (max_num_visual_tokens), which vembed
//     convert writes into the mmproj.
//   - ColVec1.1 (webAI): publishes neither its query template nor its
//     processor. Its model card calls it a colqwen3_5 model, trained with
//     ColQwen3.5's processor conventions; the recipe uses ColQwen3.5's
//     query prompt and its 1792-token image budget. A file converted with
//     --query-template carries another (QueryTemplateKey).
//
// Both run the full-attention layers bidirectionally, which their LM file
// says (qwen35.attention.causal = false); the recipe refuses a file that
// does not.

// Recipe names of the Qwen3.5 retrievers (vembed.recipe).
const (
	ColQwen35Name = "colqwen3.5"
	ColVecName    = "colvec1.1"
)

// QueryTemplateKey is the LM metadata key of a Qwen3.5 retriever's query
// prompt, "{query}" standing for the query's text (absent:
// DefaultQueryTemplate).
const QueryTemplateKey = "vembed.query_template"

// RowsKey is the LM metadata key of a Qwen3.5 retriever's multi-vector
// rows: "all" (absent: every token's, colpali-engine's default) or
// "image" (a page keeps its image tokens' rows only, colpali-engine's
// mask_non_image_embeddings; a query keeps all).
const RowsKey = "vembed.multivector.rows"

// DefaultQueryTemplate is ColQwen3.5's query prompt.
var DefaultQueryTemplate = "{query}" + colqwenAugmentation

// maxTemplate bounds a query template's length.
const maxTemplate = 4096

// qwen35CausalKey is llama.cpp's mask key of a qwen35 LM.
const qwen35CausalKey = "qwen35.attention.causal"

// colvecMaxPixels is ColVec1.1's image budget: 1792 tokens of 32x32.
const colvecMaxPixels = 1792 * 1024

// CheckQueryTemplate reports a template no prompt can come from: it must
// hold "{query}" once, be UTF-8 and at most 4096 bytes.
func CheckQueryTemplate(t string) error {
	switch {
	case len(t) > maxTemplate:
		return fmt.Errorf("a query template of %d bytes (at most %d)", len(t), maxTemplate)
	case !utf8.ValidString(t):
		return errors.New("the query template is not UTF-8")
	case strings.Count(t, "{query}") != 1:
		return errors.New(`the query template must hold "{query}" once, where the query's text goes`)
	}
	return nil
}

func init() {
	Register(ColQwen35Name, qwen35From(familyColQwen35))
	Register(ColVecName, qwen35From(familyColVec))
}

// qwen35From reads a Qwen3.5 retriever's file: its query template, and
// the bidirectional mask its vectors need.
func qwen35From(family mvFamily) Constructor {
	return func(f *gguf.File) (Recipe, error) {
		r := Qwen3MultiVector{family: family, query: DefaultQueryTemplate}
		name := r.Name()
		causal, err := f.Bool(qwen35CausalKey)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound) || err == nil && causal:
			return nil, fmt.Errorf("recipe %s: the file does not say %s = false: the retriever's full-attention layers are bidirectional (convert the checkpoint with vembed convert)", name, qwen35CausalKey)
		case err != nil:
			return nil, fmt.Errorf("recipe %s: %s: %w", name, qwen35CausalKey, err)
		}
		if _, ok := f.Lookup(QueryTemplateKey); ok {
			t, err := f.String(QueryTemplateKey)
			if err != nil {
				return nil, fmt.Errorf("recipe %s: %s: %w", name, QueryTemplateKey, err)
			}
			if err := CheckQueryTemplate(t); err != nil {
				return nil, fmt.Errorf("recipe %s: %s: %w", name, QueryTemplateKey, err)
			}
			r.query = t
		}
		if _, ok := f.Lookup(RowsKey); ok {
			v, err := f.String(RowsKey)
			if err != nil || v != "all" && v != "image" {
				return nil, fmt.Errorf("recipe %s: %s: want \"all\" or \"image\" (%v)", name, RowsKey, err)
			}
			r.imageRows = v == "image"
		}
		return r, nil
	}
}

// KeepRows implements RowKeeper: with image rows only, a prompt with
// images keeps its image tokens' rows.
func (r Qwen3MultiVector) KeepRows(p *tokenizer.Prompt) [][2]int {
	if !r.imageRows || len(p.Images) == 0 {
		return nil
	}
	keep := make([][2]int, len(p.Images))
	for i, im := range p.Images {
		keep[i] = [2]int{im.First, im.End}
	}
	return keep
}
