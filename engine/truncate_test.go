package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/synth"
)

// TestTruncateStartKeepsTemplate: on Qwen3-VL-Embedding, whose prompt wraps
// the text in a chat template and pools its last token, truncating from the
// start keeps the template's head and tail whole and drops only the text's
// first tokens: the vector is the one of the text with those tokens
// removed, and the prompt fits the limit.
func TestTruncateStartKeepsTemplate(t *testing.T) {
	c, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	lm, mm, err := synth.WritePair(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Model: lm, MMProj: mm})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	text := strings.Repeat("a long text of words ", 20) + "and its last words"
	const limit = 40
	o, err := e.options(&Request{MaxTokens: limit})
	if err != nil {
		t.Fatal(err)
	}
	full, err := e.proc.plan(0, TextInput(text), o, cutEnd)
	if err != nil {
		t.Fatal(err)
	}
	o.limit = 1 << 20
	whole, err := e.proc.plan(0, TextInput(text), o, cutNone)
	if err != nil {
		t.Fatal(err)
	}
	o.limit = limit
	cut, err := e.proc.plan(0, TextInput(text), o, cutStart)
	if err != nil {
		t.Fatal(err)
	}
	ids, all := cut.prompt.IDs, whole.prompt.IDs
	if len(ids) > limit || len(ids) < limit-3 {
		t.Fatalf("START prompt has %d tokens for a limit of %d", len(ids), limit)
	}
	if !slices.Equal(full.prompt.IDs, all[:limit]) {
		t.Errorf("END does not keep the prompt's first %d tokens", limit)
	}
	// The template's head (system turn, user turn start) and tail (end of
	// turn, assistant turn) are the whole prompt's.
	textIDs := e.tok.Encode(text, true)
	frame := len(all) - len(textIDs)
	if frame < 4 {
		t.Fatalf("the template takes %d tokens", frame)
	}
	head := slices.Index(all, textIDs[0])
	tail := len(all) - head - len(textIDs)
	if head <= 0 || tail <= 0 || !slices.Equal(all[head:head+len(textIDs)], textIDs) {
		t.Fatalf("the text's tokens are not whole in its prompt (head %d, tail %d)", head, tail)
	}
	if !slices.Equal(ids[:head], all[:head]) || !slices.Equal(ids[len(ids)-tail:], all[len(all)-tail:]) {
		t.Errorf("START changed the template:\n got %v\nwant head %v tail %v", ids, all[:head], all[len(all)-tail:])
	}
	kept := ids[head : len(ids)-tail]
	if !slices.Equal(kept, textIDs[len(textIDs)-len(kept):]) {
		t.Errorf("START kept %v, not the text's last tokens", kept)
	}
	rest, err := e.tok.Decode(kept)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Embed(ctx, Request{Inputs: []Input{TextInput(text)}, MaxTokens: limit, Truncate: true, TruncateStart: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Embed(ctx, Request{Inputs: []Input{TextInput(rest)}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Embeddings[0].Vector, want.Embeddings[0].Vector) || got.PromptTokens != len(ids) {
		t.Errorf("START vector is not the one of %q (%d tokens billed)", rest, got.PromptTokens)
	}
	// Two texts in one input are refused: which one to cut is not said.
	_, err = e.Embed(ctx, Request{Inputs: []Input{{Parts: []Part{Text(text), Text(text)}}}, MaxTokens: limit, Truncate: true, TruncateStart: true})
	if err == nil || !strings.Contains(err.Error(), "one text") {
		t.Errorf("two texts with START: %v", err)
	}
}
