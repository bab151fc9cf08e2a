package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
	t0 := time.Now()
	for i, r := range reqs {
		want[i] = embed(t, alone, r)
	}
	// A request may wait for all the others: the deadline is a few times
	// what they took one after the other, at least a minute (slow
	// machines and emulated runs take many minutes for the lot).
	deadline := max(time.Minute, 3*time.Since(t0))
	// A sequence the scheduler never runs shows as a timeout.
	sameAtOnce(t, busy, reqs, want, deadline)
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

// TestRetrieverPresets checks the 4B retriever presets: the Qwen3-VL-4B
// shapes, and, written at a tiny size with everything else kept, files
// the engine serves with the right recipe, decoder mode and row width.
func TestRetrieverPresets(t *testing.T) {
	for _, c := range []struct {
		preset, recipe string
		rows           int
		bidirectional  bool
	}{
		{"colqwen3-4b", recipe.ColQwen3Name, 320, false},
		{"nemotron-colembed-vl-4b-v2", recipe.NemotronName, 2560, true},
	} {
		cfg, err := synth.Preset(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		lm, vi := cfg.LM, cfg.Vision
		if lm.Hidden != 2560 || lm.Layers != 36 || lm.Heads != 32 || lm.KVHeads != 8 || lm.HeadDim != 128 || lm.FFN != 9728 || lm.Vocab != 151936 ||
			vi.Width != 1024 || vi.Blocks != 24 || vi.Heads != 16 || vi.FFN != 4096 || len(vi.DeepStack) != 3 || vi.PositionSide != 48 {
			t.Errorf("%s: not the Qwen3-VL-4B shapes: %+v %+v", c.preset, lm, vi)
		}
		tiny, _ := synth.Preset("tiny-qwen3vl")
		cfg.LM.Hidden, cfg.LM.Layers, cfg.LM.Heads, cfg.LM.KVHeads, cfg.LM.FFN, cfg.LM.HeadDim, cfg.LM.MRoPE = 64, 3, 4, 2, 128, 32, tiny.LM.MRoPE
		cfg.LM.Vocab = tiny.LM.Vocab
		cfg.Vision.Width, cfg.Vision.Blocks, cfg.Vision.Heads, cfg.Vision.FFN, cfg.Vision.DeepStack = 32, 3, 2, 64, []int{0, 1, 2}
		dir := t.TempDir()
		lmPath, mm, err := synth.WritePair(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ec := Config{Model: lmPath, MMProj: mm}
		if c.rows == 320 {
			ec.MVProj = filepath.Join(dir, "mvproj.gguf")
			if err := synth.WriteMVProj(ec.MVProj, cfg); err != nil {
				t.Fatal(err)
			}
		} else {
			c.rows = 64
		}
		e := start(t, ec, nil)
		if i := e.Info(); i.Recipe != c.recipe || i.MultivectorDim != c.rows || e.mi.Bidirectional != c.bidirectional || i.MaxPixels != cfg.Vision.MaxPixels {
			t.Errorf("%s: info %+v, bidirectional %v", c.preset, i, e.mi.Bidirectional)
		}
		resp := embed(t, e, Request{Inputs: []Input{TextInput("a query"), ImageInput(testPNG(t, 90, 70, 1))}, Multivector: true})
		for _, emb := range resp.Embeddings {
			if len(emb.Multi) != emb.Tokens || len(emb.Multi[0]) != c.rows {
				t.Errorf("%s: %d rows of %d for %d tokens", c.preset, len(emb.Multi), len(emb.Multi[0]), emb.Tokens)
			}
		}
	}
}

// TestBidirectionalNotStarved keeps short queries arriving from several
// clients while a long input of a bidirectional model waits: beside them a
// step has room for a quarter of its budget of bulk work, less than the
// input, which must run whole; it waits one step and then runs beyond
// the budget, while the queries keep finishing.
func TestBidirectionalNotStarved(t *testing.T) {
	e := start(t, bidirectionalModel(t), func(c *Config) {
		c.MaxBatchTokens = 600 // bulk beside short requests: at most 150 tokens
		c.StepTarget = time.Microsecond
		c.MinChunk = 16
		uncached(c)
	})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var queries atomic.Int64
	for k := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := e.Embed(ctx, Request{Inputs: []Input{TextInput(fmt.Sprintf("query %d of client %d", i, k))}}); err == nil {
					queries.Add(1)
				}
			}
		}()
	}
	for queries.Load() < 8 {
		time.Sleep(time.Millisecond)
	}
	long := Request{Inputs: []Input{TextInput(strings.Repeat("a long page about many things ", 25))}}
	before := queries.Load()
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.Embed(lctx, long)
	if err != nil {
		t.Fatalf("the long input did not run beside the queries: %v", err)
	}
	if n := resp.Embeddings[0].Tokens; n <= 256 {
		t.Fatalf("the long input has %d tokens: it would take the fast lane", n)
	}
	during := queries.Load() - before
	stop()
	wg.Wait()
	if during == 0 {
		t.Fatal("no query finished while the long input was in flight")
	}
	t.Logf("the long input (%d tokens) finished after %d queries", resp.Embeddings[0].Tokens, during)
}
