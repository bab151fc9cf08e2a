package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/synth"
)

// bidirectionalModel writes the tiny Qwen3-VL pair as vembed convert
// writes nemotron-colembed-vl-v2: bidirectional, no final norm, rows from
// the hidden states.
func bidirectionalModel(t *testing.T) Config {
	t.Helper()
	c, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	c.LM.Pooling = ""
	c.LM.Extra = []qwenlayout.KV{
		{Key: recipe.Key, Value: recipe.NemotronName},
		{Key: model.KeyCausal, Value: false},
		{Key: model.KeyOutputNorm, Value: false},
		{Key: heads.KeyMultiVectorSource, Value: "hidden"},
	}
	lm, mm, err := synth.WritePair(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Model: lm, MMProj: mm}
}

// TestBidirectionalServing sends mixed requests at once to an engine whose
// model runs each sequence whole (bidirectional) under a step budget far
// below their lengths, and checks every result against the request run
// alone: sequences are never cut, run beyond the budget when they must,
// and keep their bits in any batch. An input over the one-pass limit
// (MaxBatchTokens) is a too-long input error that names it.
func TestBidirectionalServing(t *testing.T) {
	cfg := bidirectionalModel(t)
	alone := start(t, cfg, uncached)
	if i := alone.Info(); i.Recipe != recipe.NemotronName || i.MultivectorDim != 64 {
		t.Fatalf("info %+v", i)
	}
	busy := start(t, cfg, func(c *Config) {
		c.StepTarget = time.Microsecond // a budget of MinChunk tokens a step
		c.MinChunk = 16
		c.MaxEncoderBatch = 64
	})
	reqs := mixedRequests(t, 30)
	want := make([]*Response, len(reqs))
	for i, r := range reqs {
		want[i] = embed(t, alone, r)
	}
	got := make([]*Response, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = busy.Embed(context.Background(), r)
		}()
	}
	wg.Wait()
	for i := range reqs {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		for k := range want[i].Embeddings {
			if err := sameEmbedding(got[i].Embeddings[k], want[i].Embeddings[k]); err != nil {
				t.Errorf("request %d input %d: %v", i, k, err)
			}
		}
	}
	if st := busy.Stats(); st.Steps < 10 {
		t.Errorf("only %d steps", st.Steps)
	}
	for _, emb := range want[3].Embeddings {
		for _, row := range emb.Multi {
			if n := norm(row); len(row) != 64 || n < 0.99999 || n > 1.00001 {
				t.Fatalf("multi-vector row of %d values, norm %v", len(row), n)
			}
		}
	}

	small := start(t, cfg, func(c *Config) { c.MaxBatchTokens = 64 })
	_, err := small.Embed(context.Background(), Request{Inputs: []Input{TextInput(strings.Repeat("many words here ", 40))}})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Code != CodeTooLong || !strings.Contains(err.Error(), "one pass") || !strings.Contains(err.Error(), "64 tokens") {
		t.Fatalf("an input over the one-pass limit: %v", err)
	}
	if small.Info().ContextLength != 64 {
		t.Errorf("context length %d, want the one-pass limit 64", small.Info().ContextLength)
	}
}
