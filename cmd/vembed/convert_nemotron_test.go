package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/internal/ref64"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/tokenizer"
)

// idTrace keeps the prompt's token ids an engine request traces.
type idTrace struct{ ids []int32 }

func (tr *idTrace) Tensor(name string, data []float32, shape ...int) error {
	if strings.HasSuffix(name, ".token_ids") {
		for _, v := range data {
			tr.ids = append(tr.ids, int32(v))
		}
	}
	return nil
}

// rowsAndIDs embeds one input as multi-vector rows and returns them with
// the prompt's token ids.
func rowsAndIDs(t *testing.T, e *engine.Engine, in engine.Input, task string) ([][]float32, []int32) {
	t.Helper()
	tr := &idTrace{}
	r, err := e.Embed(context.Background(), engine.Request{Inputs: []engine.Input{in}, Task: task, Multivector: true, Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	return r.Embeddings[0].Multi, tr.ids
}

// sameRows reports the worst cosine of two sets of rows (0 when their
// counts differ).
func sameRows(a, b [][]float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	worst := 1.0
	for i := range a {
		b64 := make([]float64, len(b[i]))
		for j, v := range b[i] {
			b64[j] = float64(v)
		}
		worst = min(worst, ref64.Cosine(a[i], b64))
	}
	return worst
}

// TestNemotronTruncation converts a synthetic nemotron-colembed-vl-v2 and
// embeds inputs over its processor's bounds, as the reference's
// processor cuts them (the first tokens of the whole chat-templated
// prompt, image tokens included, the request's truncate not set): a
// query of over 600 tokens gets the whole prompt's first q_max_length =
// 512 ids and the rows of exactly those ids (an input of them alone,
// given as a template); a page with an image and a long text gets the
// first p_max_length - its image tokens - reserve_tokens_for_images =
// 4096 - 64 - 100 ids and their rows. Those rows differ from the first
// rows of the whole prompt (the decoder is bidirectional), so a cut made
// after the model would fail. Bounds from processor_config.json reach the
// LM's keys and the cut; without the file the defaults apply.
func TestNemotronTruncation(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "hf")
	var o, e bytes.Buffer
	if code := run([]string{"synth", "--format", "hf", "--layout", "nemotron-colembed-vl", "--out", hf}, &o, &e); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, e.String())
	}
	convertTo := func(out string) []string {
		o.Reset()
		if code := run([]string{"convert", hf, "--out", filepath.Join(dir, out), "--type", "F32", "--mmproj-type", "F32"}, &o, &e); code != 0 {
			t.Fatalf("convert: exit %d: %s", code, e.String())
		}
		files := strings.Fields(o.String())
		if len(files) != 2 {
			t.Fatalf("convert printed %v", files)
		}
		return files
	}
	files := convertTo("gguf")
	eng, err := engine.New(engine.Config{Model: files[0], MMProj: files[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	f, err := gguf.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]uint64{recipe.QueryMaxTokensKey: 512, recipe.PassageMaxTokensKey: 4096, recipe.ImageReserveTokensKey: 100} {
		if v, err := f.Uint(key); err != nil || v != want {
			t.Errorf("%s = %d (%v), want processor_config.json's %d", key, v, err, want)
		}
	}
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	query := strings.Repeat("the quick brown fox jumps over the lazy dog ", 28)
	whole := checkQueryCut(t, eng, tok, query, 512)

	// The page: an image of 64 tokens and a text that overflows its bound.
	png := writePNG(t, filepath.Join(dir, "page.png"), 256, 256, 2)
	text := strings.Repeat("a page of text about many things ", 600)
	n := 64
	page, err := tok.RawPrompt("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>passage: "+text+"<|im_end|>\n<|im_start|>assistant\n", []int{n})
	if err != nil {
		t.Fatal(err)
	}
	limit := 4096 - n - 100
	if len(page.IDs) <= limit {
		t.Fatalf("the page's prompt is %d tokens, not over %d", len(page.IDs), limit)
	}
	pin := engine.Input{Parts: []engine.Part{engine.Image(png), engine.Text(text)}}
	prows, pids := rowsAndIDs(t, eng, pin, "")
	if !slices.Equal(pids, page.IDs[:limit]) {
		t.Fatalf("page: %d ids, want the whole prompt's (%d) first %d", len(pids), len(page.IDs), limit)
	}
	tail, err := tok.Decode(page.IDs[page.Images[0].VisionEnd+1 : limit])
	if err != nil {
		t.Fatal(err)
	}
	refRows, refIDs := rowsAndIDs(t, eng, engine.Input{Template: "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>" + tail, Parts: []engine.Part{engine.Image(png)}}, "")
	if !slices.Equal(refIDs, pids) {
		t.Fatalf("the template of the page's first %d ids tokenizes to %d other ids", limit, len(refIDs))
	}
	if cs := sameRows(prows, refRows); cs < 0.99999 {
		t.Errorf("page: rows at cosine %.7f to those of its first %d ids", cs, limit)
	} else {
		t.Logf("page: %d of %d ids; worst row at cosine %.9f to its first %d ids' rows", len(pids), len(page.IDs), cs, limit)
	}

	// processor_config.json's own bounds.
	pc := filepath.Join(hf, "processor_config.json")
	b, err := os.ReadFile(pc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["q_max_length"], m["p_max_length"], m["reserve_tokens_for_images"] = 40, 300, 10
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	small := convertTo("small")
	e2, err := engine.New(engine.Config{Model: small[0], MMProj: small[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if _, ids := rowsAndIDs(t, e2, engine.TextInput(query), ""); !slices.Equal(ids, whole.IDs[:40]) {
		t.Errorf("q_max_length 40: %d ids, want the whole prompt's first 40", len(ids))
	}
	if _, ids := rowsAndIDs(t, e2, pin, ""); !slices.Equal(ids, page.IDs[:300-n-10]) {
		t.Errorf("p_max_length 300, reserve 10: %d ids, want the whole page's first %d", len(ids), 300-n-10)
	}
	// A request's truncate changes nothing under the recipe's bound.
	r, err := e2.Embed(context.Background(), engine.Request{Inputs: []engine.Input{engine.TextInput(query)}, Multivector: true, Truncate: true})
	if err != nil || r.Embeddings[0].Tokens != 40 {
		t.Errorf("truncate set: %v, %d tokens, want 40", err, r.Embeddings[0].Tokens)
	}
	os.Remove(pc)
	none := convertTo("none")
	nf, err := gguf.Open(none[0])
	if err != nil {
		t.Fatal(err)
	}
	_, kerr := nf.Uint(recipe.QueryMaxTokensKey)
	nf.Close()
	if kerr == nil {
		t.Error("without processor_config.json the LM has truncation keys")
	}
	e3, err := engine.New(engine.Config{Model: none[0], MMProj: none[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer e3.Close()
	if _, ids := rowsAndIDs(t, e3, engine.TextInput(query), ""); len(ids) != 512 {
		t.Errorf("without processor_config.json: %d ids, want the default 512", len(ids))
	}
}

// checkQueryCut embeds a nemotron query whose prompt is over limit
// tokens: its ids must be the whole prompt's first limit (the prompt as
// the reference's chat template renders it), and its rows those of an
// input of exactly those ids (given as a template), which differ from the
// whole prompt's first rows (the decoder is bidirectional). It returns
// the whole prompt.
func checkQueryCut(t *testing.T, eng *engine.Engine, tok *tokenizer.Tokenizer, query string, limit int) *tokenizer.Prompt {
	t.Helper()
	wholeText := "<|im_start|>user\nQuery: query: " + query + "<|im_end|>\n<|im_start|>assistant\n"
	whole, err := tok.RawPrompt(wholeText, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.IDs) < 600 {
		t.Fatalf("the query's prompt is %d tokens", len(whole.IDs))
	}
	rows, ids := rowsAndIDs(t, eng, engine.TextInput(query), "")
	if !slices.Equal(ids, whole.IDs[:limit]) {
		t.Fatalf("query: %d ids, want the whole prompt's (%d) first %d", len(ids), len(whole.IDs), limit)
	}
	head, err := tok.Decode(whole.IDs[:limit])
	if err != nil {
		t.Fatal(err)
	}
	refRows, refIDs := rowsAndIDs(t, eng, engine.Input{Template: head}, "")
	if !slices.Equal(refIDs, ids) {
		t.Fatalf("the template of the first %d ids tokenizes to %d other ids", limit, len(refIDs))
	}
	cs := sameRows(rows, refRows)
	if cs < 0.99999 {
		t.Errorf("query: rows at cosine %.7f to those of its first %d ids", cs, limit)
	}
	full, fullIDs := rowsAndIDs(t, eng, engine.Input{Template: wholeText}, "") // a template is not cut
	if !slices.Equal(fullIDs, whole.IDs) {
		t.Fatalf("the whole query as a template: %d ids, want %d", len(fullIDs), len(whole.IDs))
	}
	after := sameRows(rows, full[:limit])
	if after > 0.9999 {
		t.Errorf("query: the first rows of the whole prompt are as close (%.7f): the test cannot tell a cut after the model", after)
	}
	t.Logf("query: %d of %d ids; worst row at cosine %.9f to its first %d ids' rows, %.6f to the whole prompt's first rows", len(ids), len(whole.IDs), cs, limit, after)
	return whole
}

// TestNemotronQueryCutFixture: a query of over 600 tokens on the
// fixtures' nemotron mini checkpoint (the real tokenizer, its
// processor_config.json) gets the whole prompt's first 512 ids and their
// rows.
func TestNemotronQueryCutFixture(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	files := convertMV(t, copyCheckpoint(t, filepath.Join(dir, mvCheckpoints["nemotron"])), "--type", "F32", "--mmproj-type", "F32")
	eng, err := engine.New(engine.Config{Model: files[0], MMProj: files[len(files)-1]})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	f, err := gguf.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkQueryCut(t, eng, tok, strings.Repeat("Which quarter shows the largest revenue growth in the chart? ", 55), 512)
}
