package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/vembed/vembed/engine"
)

func init() {
	register(&command{name: "rerank", summary: "relevance scores of documents for a query with a reranker model", run: runRerank})
}

const rerankUsage = `--model RR.gguf [--mmproj MMPROJ.gguf] [--instruction TEXT] [--json]
       --query JSON --document JSON [--document JSON]...

Prints one relevance score (the reranker's probability of "yes") per
document, in the order given, one per line; with --json {"scores": [...]}.
The query and each document take any form of the server's "input"
elements: a string, an item object such as {"image":"page.png"}, or a list
of parts such as '[{"text":"a"},{"image":"cat.png"}]'; images are file
paths, data URIs or base64. At most 1000 documents.`

func runRerank(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rerank", rerankUsage, stderr)
	var mf modelFlags
	mf.register(fs)
	var queries, docs []inputSpec
	fs.Var(inputFlag{"input", &queries}, "query", "the query as JSON (once)")
	fs.Var(inputFlag{"input", &docs}, "document", "a document as JSON (repeatable)")
	instruction := fs.String("instruction", "", "the task instruction (default: the model's)")
	asJSON := fs.Bool("json", false, `print {"scores": [...]}`)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, stderr, "unexpected argument %q (use --query and --document)", pos[0])
	case mf.model == "":
		return usageError(fs, stderr, "--model is required (a reranker GGUF)")
	case len(queries) != 1:
		return usageError(fs, stderr, "give exactly one --query")
	case len(docs) == 0:
		return usageError(fs, stderr, "nothing to score: give --document")
	}
	query, err := parseSpec(queries[0])
	if err != nil {
		return err
	}
	ins := make([]engine.Input, len(docs))
	for i, d := range docs {
		if ins[i], err = parseSpec(d); err != nil {
			return err
		}
	}
	if err := mf.resolveRefs(context.Background(), stderr, nil); err != nil {
		return err
	}
	mf.applyPacking()
	eng, err := loadEngine(stderr, oneCaller(mf.config()))
	if err != nil {
		return err
	}
	defer eng.Close()
	scores, _, err := eng.Rerank(context.Background(), query, ins, *instruction)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.Marshal(map[string][]float64{"scores": scores})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	for _, s := range scores {
		if _, err := fmt.Fprintln(stdout, strconv.FormatFloat(s, 'g', -1, 64)); err != nil {
			return err
		}
	}
	return nil
}
