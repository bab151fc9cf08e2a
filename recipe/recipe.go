// Package recipe holds the rules of each embedding model family that are
// not arithmetic: which tasks it knows, how an input becomes a prompt, which
// hidden states are pooled and how, the Matryoshka sizes it was trained
// for, and its image preprocessing limits. The engine asks the recipe and
// never decides these itself, so serving another embedder (GME with
// last-token pooling, ColQwen with its own prompts) is a new recipe, not
// edits across packages.
package recipe

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
)

// Recipe is one model family's rules.
type Recipe interface {
	// Name identifies the family ("jina-embeddings-v4").
	Name() string
	// Version changes whenever a rule that changes vectors changes (a
	// prompt, the pooling); it is part of every embedding cache key.
	Version() string
	// Tasks lists the task names a request may give.
	Tasks() []string
	// Task checks a request's task ("" for the default) and returns how it
	// applies to each input.
	Task(name string) (Task, error)
	// Prompt builds the prompt of one input. Parts hold text, or the merged
	// token count of each image.
	Prompt(tok *tokenizer.Tokenizer, task Task, parts []tokenizer.Part) (*tokenizer.Prompt, error)
	// Pooling says which final hidden states make the input's vector.
	Pooling(p *tokenizer.Prompt) Pooling
	// Dimensions lists the Matryoshka sizes the model accepts; nil means
	// any size from 1 to hidden.
	Dimensions(hidden int) []int
	// Image is the image preprocessing for the loaded model.
	Image(mi model.Info) imageproc.Config
}

// Instructed is a recipe whose prompts take a free-text instruction
// (Task.Instruction) rather than a task name.
type Instructed interface {
	Recipe
	Instructed()
}

// Pairs is a recipe that scores (query, document) pairs: one prompt per
// pair, whose pooled hidden state a rank head scores.
type Pairs interface {
	Recipe
	PairPrompt(tok *tokenizer.Tokenizer, task Task, query, doc []tokenizer.Part) (*tokenizer.Prompt, error)
}

// RowKeeper is a multi-vector recipe whose output keeps only some
// tokens' rows (a retriever that masks the rows of everything but a
// page's image tokens).
type RowKeeper interface {
	Recipe
	// KeepRows returns the token ranges [lo, hi) of a prompt whose rows
	// its multi-vector output holds, in order; nil keeps every row.
	KeepRows(p *tokenizer.Prompt) [][2]int
}

// Task is a request's task as a recipe resolved it.
type Task struct {
	Name string // as the request gave it, or the default
	// Instruction is the request's instruction, for Instructed recipes
	// ("" for the recipe's default).
	Instruction string
	// side picks the prompt per input: a fixed task, or one that depends
	// on whether the input has images.
	fixed   tokenizer.Task
	adapter string
}

// For returns the prompt task of an input: a fixed task, or the adapter's
// query side for text and passage side for inputs with images.
func (t Task) For(hasImage bool) tokenizer.Task {
	if t.adapter == "" {
		return t.fixed
	}
	if hasImage {
		return tokenizer.Task(t.adapter + ".passage")
	}
	return tokenizer.Task(t.adapter + ".query")
}

// PoolKind is how hidden states become one vector.
type PoolKind int

const (
	// Mean averages the rows [Lo, Hi).
	Mean PoolKind = iota
	// Last takes the last row of the sequence.
	Last
)

// Pooling is a prompt's pooling rule: the kind, and for Mean the rows.
type Pooling struct {
	Kind   PoolKind
	Lo, Hi int
}

// llama.cpp's pooling types (LLAMA_POOLING_TYPE_*).
const (
	poolingLast = 3
	poolingRank = 4
)

// Key is the LM metadata key that names a file's recipe; vembed convert
// writes it. Recipes keep their own settings under "vembed." too (see
// ColQwen's QueryPrefixKey).
const Key = "vembed.recipe"

// Constructor builds a recipe for a language model file, reading whatever
// settings the recipe keeps in the file's metadata.
type Constructor func(f *gguf.File) (Recipe, error)

var registry = map[string]Constructor{}

// Register makes a recipe selectable by the name a file's vembed.recipe
// gives. It panics on a name registered twice (a programming error).
func Register(name string, c Constructor) {
	if _, dup := registry[name]; dup {
		panic("recipe: " + name + " registered twice")
	}
	registry[name] = c
}

// Known lists the registered recipe names, sorted.
func Known() []string { return slices.Sorted(maps.Keys(registry)) }

func fixed(r Recipe) Constructor { return func(*gguf.File) (Recipe, error) { return r, nil } }

func init() {
	Register(JinaV4{}.Name(), fixed(JinaV4{}))
	Register(GME{}.Name(), fixed(GME{}))
	Register(colqwenName, colqwenFrom)
	Register(Qwen3VLEmbedding{}.Name(), fixed(Qwen3VLEmbedding{}))
	Register(Qwen3VLReranker{}.Name(), fixed(Qwen3VLReranker{}))
	Register(Qwen35LM{}.Name(), fixed(Qwen35LM{}))
}

// Select returns the recipe for a language model file: the one named by
// its vembed.recipe key, else the family its architecture implies (files
// converted by llama.cpp: qwen2vl as jina-embeddings-v4, qwen3vl by its
// pooling type, qwen35 as the plain language model it is).
func Select(f *gguf.File) (Recipe, error) {
	name, err := f.String(Key)
	if err != nil || name == "" {
		arch, _ := f.String("general.architecture")
		switch arch {
		case "qwen2vl":
			name = JinaV4{}.Name()
		case "qwen3vl":
			// llama.cpp writes no pooling type for Qwen3-VL-Embedding; its
			// reranker conversion writes RANK.
			switch p, err := f.Uint(arch + ".pooling_type"); {
			case err != nil || p == poolingLast:
				name = Qwen3VLEmbedding{}.Name()
			case p == poolingRank:
				name = Qwen3VLReranker{}.Name()
			default:
				return nil, fmt.Errorf("recipe: %s.pooling_type %d: Qwen3-VL files are embedders (LAST or none) or rerankers (RANK)", arch, p)
			}
		case qwen35Arch:
			name = Qwen35LM{}.Name()
		default:
			return nil, fmt.Errorf("recipe: no embedding recipe for architecture %q (%s not set; known recipes: %s)", arch, Key, strings.Join(Known(), ", "))
		}
	}
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("recipe: unknown recipe %q (known: %s)", name, strings.Join(Known(), ", "))
	}
	return c(f)
}
