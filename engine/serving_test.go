package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// uncached turns every cache off.
func uncached(c *Config) { c.EmbeddingCacheBytes, c.EncoderCacheBytes, c.ImageCacheBytes = -1, -1, -1 }

// typedModel writes the tiny pair (widths a multiple of 256, so K-quants
// apply) with the LM in lmType, and a projector.
func typedModel(t *testing.T, lmType, mmType string) Config {
	t.Helper()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LMType, cfg.MMProjType = lmType, mmType
	cfg.LM.Hidden, cfg.LM.Heads, cfg.LM.KVHeads, cfg.LM.FFN = 256, 4, 2, 256
	cfg.LM.MRoPE = [4]int32{8, 12, 12, 0}
	cfg.Vision.Width, cfg.Vision.Heads, cfg.Vision.FFN = 256, 4, 256
	dir := t.TempDir()
	lm, mm, err := synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mv := filepath.Join(dir, "mvproj.gguf")
	if err := synth.WriteMVProj(mv, cfg); err != nil {
		t.Fatal(err)
	}
	return Config{Model: lm, MMProj: mm, MVProj: mv}
}

func start(t *testing.T, cfg Config, change func(*Config)) *Engine {
	t.Helper()
	if change != nil {
		change(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// mixedRequests are texts, images, interleaved documents, multi-vector
// and per-span requests, with duplicates, some long enough to be cut into
// chunks under a small step budget.
func mixedRequests(t *testing.T, n int) []Request {
	long := strings.Repeat("a long passage about many things ", 40)
	var reqs []Request
	for i := range n {
		k := i % 10
		img := testPNG(t, 56+14*(k%4), 56+28*(k%3), k)
		var req Request
		switch k {
		case 0, 5:
			req.Inputs = []Input{TextInput(fmt.Sprintf("query %d", k))}
		case 1:
			req.Inputs = []Input{ImageInput(img)}
		case 2:
			req.Inputs = []Input{{Parts: []Part{Text("see "), Image(img), Text(" and "), Image(testPNG(t, 84, 56, 9))}}}
		case 3:
			req.Inputs = []Input{TextInput(long), ImageInput(img)}
			req.Multivector = true
		case 4:
			req.Inputs = []Input{ImageInput(img), TextInput("passage " + long)}
			req.Task = "retrieval.passage"
		case 6:
			req.Inputs = []Input{{Parts: []Part{Image(img), Image(img)}}}
			req.PerSpan = true
		case 7:
			req.Inputs = []Input{TextInput(long + "seven"), TextInput("short"), TextInput(long)}
		default:
			req.Inputs = []Input{TextInput(fmt.Sprintf("duplicate %d", k%2))}
			req.Dimensions = 16
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// sameAtOnce sends reqs to e all at once, each under a timeout of
// deadline (none when 0), and checks every vector of the responses
// against want's, bit for bit.
func sameAtOnce(t *testing.T, e *Engine, reqs []Request, want []*Response, deadline time.Duration) {
	t.Helper()
	got := make([]*Response, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			got[i], errs[i] = e.Embed(ctx, r)
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
}

func sameEmbedding(a, b Embedding) error {
	eq := func(x, y []float32) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	}
	if a.Tokens != b.Tokens || !eq(a.Vector, b.Vector) || len(a.Spans) != len(b.Spans) || len(a.Multi) != len(b.Multi) {
		return fmt.Errorf("shapes or vectors differ")
	}
	for i := range a.Spans {
		if !eq(a.Spans[i], b.Spans[i]) {
			return fmt.Errorf("span %d differs", i)
		}
	}
	for i := range a.Multi {
		if !eq(a.Multi[i], b.Multi[i]) {
			return fmt.Errorf("multi-vector row %d differs", i)
		}
	}
	return nil
}

// TestServingBitIdentical sends 50 mixed requests at once to an engine
// with caches and small steps (so that images of several requests share
// vision passes, sequences share decoder passes and long ones are cut into
// chunks) and checks every vector against the request run alone on an
// engine with no cache and one big step.
func TestServingBitIdentical(t *testing.T) {
	types := [][2]string{{"F32", "F32"}, {"Q4_K_M", "F16"}, {"Q8_0", "Q8_0"}}
	if testing.Short() {
		types = types[:1]
	}
	for _, typ := range types {
		t.Run(typ[0], func(t *testing.T) {
			cfg := typedModel(t, typ[0], typ[1])
			alone := start(t, cfg, uncached)
			busy := start(t, cfg, func(c *Config) {
				c.StepTarget = time.Microsecond // small steps: vision a stage at a time
				c.MaxBatchTokens = 64           // and long inputs cut into chunks
				c.MinChunk = 16
				c.MaxEncoderBatch = 64
			})
			reqs := mixedRequests(t, 50)
			want := make([]*Response, len(reqs))
			for i, r := range reqs {
				want[i] = embed(t, alone, r)
			}
			sameAtOnce(t, busy, reqs, want, 0)
			st := busy.Stats()
			if st.Steps < 10 {
				t.Errorf("only %d steps: the requests were not spread over steps", st.Steps)
			}
			if h := st.StepLMTokens; h.Count == 0 || h.Sum/float64(h.Count) > 200 {
				t.Errorf("step sizes %+v: long inputs were not cut into chunks", h)
			}
		})
	}
}

// TestCachesWithinBudgets fills small caches and checks their bytes.
func TestCachesWithinBudgets(t *testing.T) {
	lm, mm, mv := modelFiles(t)
	e := start(t, Config{Model: lm, MMProj: mm, MVProj: mv}, func(c *Config) {
		c.EmbeddingCacheBytes, c.EncoderCacheBytes, c.ImageCacheBytes = 4<<10, 20<<10, 1<<10
	})
	for i := range 40 {
		embed(t, e, Request{Inputs: []Input{TextInput(fmt.Sprintf("text %d", i)), ImageInput(testPNG(t, 56, 56+14*(i%5), i))}})
		for _, c := range e.Stats().Caches {
			if c.Bytes > c.Capacity {
				t.Fatalf("after request %d: %s cache holds %d bytes over its %d budget", i, c.Name, c.Bytes, c.Capacity)
			}
		}
	}
	for _, c := range e.Stats().Caches {
		if c.Evictions == 0 {
			t.Errorf("%s cache never evicted: %+v", c.Name, c)
		}
	}
}

// TestCacheHits checks each cache level: a repeated request is answered
// from the embedding cache without any model work; the same image with
// another task skips decoding and the vision tower.
func TestCacheHits(t *testing.T) {
	lm, mm, mv := modelFiles(t)
	e := start(t, Config{Model: lm, MMProj: mm, MVProj: mv}, nil)
	img := testPNG(t, 70, 84, 3)
	req := Request{Inputs: []Input{{Parts: []Part{Text("page"), Image(img)}}}}
	first := embed(t, e, req)
	before := e.Stats()
	again := embed(t, e, req)
	after := e.Stats()
	if err := sameEmbedding(first.Embeddings[0], again.Embeddings[0]); err != nil {
		t.Fatal(err)
	}
	if after.Steps != before.Steps || after.LMTokens != before.LMTokens {
		t.Errorf("a repeated request ran %d steps", after.Steps-before.Steps)
	}
	other := req
	other.Task = "text-matching"
	embed(t, e, other)
	final := e.Stats()
	if final.Images != after.Images {
		t.Errorf("the same image with another task was encoded again")
	}
	if final.LMTokens == after.LMTokens {
		t.Errorf("another task reused the embedding")
	}
	byName := map[string]CacheStats{}
	for _, c := range final.Caches {
		byName[c.Name] = c
	}
	if byName["embedding"].Hits < 1 || byName["encoder"].Hits < 1 || byName["image"].Hits < 1 {
		t.Errorf("cache hits %+v", final.Caches)
	}
}

// oneSlot starts an engine of the test model without caches that admits
// one request at a time and computes it in steps of a few tokens.
func oneSlot(t *testing.T) *Engine {
	lm, mm, mv := modelFiles(t)
	return start(t, Config{Model: lm, MMProj: mm, MVProj: mv}, func(c *Config) {
		uncached(c)
		c.StepTarget = time.Microsecond
		c.MaxBatchTokens = 16
		c.MinChunk = 8
		c.MaxQueuedRequests = 1
	})
}

// TestCancelStopsComputing cancels a request mid-way through a long input
// cut into many small steps and checks that its computing stops and its
// slot is free at once.
func TestCancelStopsComputing(t *testing.T) {
	e := oneSlot(t)
	long := strings.Repeat("word ", 2000)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.Embed(ctx, Request{Inputs: []Input{TextInput(long)}})
		errc <- err
	}()
	for e.Stats().LMTokens < 64 {
		select {
		case err := <-errc:
			t.Fatalf("request ended before the cancel: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	at := e.Stats().LMTokens
	// The slot (MaxQueuedRequests = 1) is free for the next request.
	embed(t, e, Request{Inputs: []Input{TextInput("next")}})
	time.Sleep(20 * time.Millisecond)
	st := e.Stats()
	if st.Cancelled != 1 || st.RunningRequests != 0 || st.QueuedRequests != 0 {
		t.Errorf("after cancel: %+v", st)
	}
	if total := 6000; at > int64(total)/2 {
		t.Errorf("%d tokens computed of a %d-token input before the cancel took effect", at, total)
	}
	if st.LMTokens > at+16 {
		t.Errorf("computing went on after the cancel: %d tokens, then %d", at, st.LMTokens)
	}
}

// TestOverloaded checks the admission limit.
func TestOverloaded(t *testing.T) {
	e := oneSlot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Embed(ctx, Request{Inputs: []Input{TextInput(strings.Repeat("word ", 2000))}})
	for e.Stats().LMTokens == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := e.Embed(context.Background(), Request{Inputs: []Input{TextInput("x")}}); !errors.Is(err, ErrOverloaded) {
		t.Errorf("second request: %v, want ErrOverloaded", err)
	}
}

// TestShutdownDrains checks that running work finishes, queued work gets
// ErrShuttingDown, and new work is refused.
func TestShutdownDrains(t *testing.T) {
	lm, mm, mv := modelFiles(t)
	e := start(t, Config{Model: lm, MMProj: mm, MVProj: mv}, func(c *Config) {
		uncached(c)
		c.StepTarget = time.Microsecond
		c.MaxBatchTokens = 16
		c.MinChunk = 8
	})
	running := make(chan error, 1)
	go func() {
		_, err := e.Embed(context.Background(), Request{Inputs: []Input{TextInput(strings.Repeat("word ", 500))}})
		running <- err
	}()
	for e.Stats().LMTokens == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-running; err != nil {
		t.Errorf("running request: %v", err)
	}
	if _, err := e.Embed(context.Background(), Request{Inputs: []Input{TextInput("late")}}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("request after shutdown: %v", err)
	}
}

// TestDiskCacheSurvivesKill runs a child process that embeds inputs into a
// disk cache and is killed with SIGKILL while writing; the cache must open
// and serve what it committed, bit for bit.
func TestDiskCacheSurvivesKill(t *testing.T) {
	if dir := os.Getenv("VEMBED_DISK_CHILD"); dir != "" {
		lm, mm, mv := modelFiles(t)
		e := start(t, Config{Model: lm, MMProj: mm, MVProj: mv, CacheDir: dir}, nil)
		for i := 0; ; i++ {
			resp := embed(t, e, Request{Inputs: []Input{TextInput("persisted " + strconv.Itoa(i))}})
			fmt.Printf("done %d %08x\n", i, math.Float32bits(resp.Embeddings[0].Vector[0]))
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskCacheSurvivesKill$")
	cmd.Env = append(os.Environ(), "VEMBED_DISK_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 1<<16)
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(string(buf), "\n") < 200 && time.Now().Before(deadline) {
		tmp := make([]byte, 4096)
		n, err := out.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	lines := strings.Split(strings.TrimSpace(string(buf)), "\n")
	if len(lines) < 50 {
		t.Fatalf("child embedded only %d inputs", len(lines))
	}
	lm, mm, mv := modelFiles(t)
	e := start(t, Config{Model: lm, MMProj: mm, MVProj: mv, CacheDir: dir}, nil)
	hits := 0
	for _, l := range lines[:len(lines)-1] {
		var i int
		var bits uint32
		if _, err := fmt.Sscanf(l, "done %d %x", &i, &bits); err != nil {
			continue
		}
		before := e.Stats().Steps
		resp := embed(t, e, Request{Inputs: []Input{TextInput("persisted " + strconv.Itoa(i))}})
		if got := math.Float32bits(resp.Embeddings[0].Vector[0]); got != bits {
			t.Fatalf("input %d: %08x after the restart, %08x before", i, got, bits)
		}
		if e.Stats().Steps == before {
			hits++
		}
	}
	if hits == 0 {
		t.Errorf("no input of %d was served from the disk cache", len(lines))
	}
	t.Logf("%d of %d inputs served from the disk cache after kill -9", hits, len(lines)-1)
}

// TestInflightDedupe sends the same input from several clients at once to
// an engine without caches: it is computed once and every client gets it.
func TestInflightDedupe(t *testing.T) {
	lm, mm, mv := modelFiles(t)
	e := start(t, Config{Model: lm, MMProj: mm, MVProj: mv}, func(c *Config) {
		uncached(c)
		c.BatchWait = 200 * time.Millisecond
	})
	req := Request{Inputs: []Input{{Parts: []Part{Text("the same page"), Image(testPNG(t, 84, 84, 5))}}}}
	var wg sync.WaitGroup
	resps := make([]*Response, 4)
	for i := range resps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i] = embed(t, e, req)
		}()
	}
	wg.Wait()
	for i := 1; i < len(resps); i++ {
		if err := sameEmbedding(resps[i].Embeddings[0], resps[0].Embeddings[0]); err != nil {
			t.Errorf("client %d: %v", i, err)
		}
	}
	st := e.Stats()
	if st.LMTokens != int64(resps[0].PromptTokens) || st.Images != 1 {
		t.Errorf("4 identical requests computed %d tokens and %d images; one is %d tokens and 1 image", st.LMTokens, st.Images, resps[0].PromptTokens)
	}
}

// TestStepBudgetFloor: a bulk step holds the tokens the target allows,
// but never so few that the fixed part of a pass takes more than
// 1 − minStepUse of the step.
func TestStepBudgetFloor(t *testing.T) {
	for _, c := range []struct {
		fixed, perToken, target float64
		want                    int
	}{
		{0, 0.01, 1, 100},     // no fixed part: the target alone
		{0.1, 0.01, 1, 90},    // the target leaves room: (1 − 0.1)/0.01
		{0.6, 0.014, 1, 129},  // the 2B Q8_0 case: ⌈0.6·3/0.014⌉, not 28
		{0.6, 0.014, 10, 671}, // a long target wins again
		{0.5, 0, 1, 1 << 30},  // no measured cost yet: unbounded
	} {
		f := lineFit{fixed: c.fixed, perToken: c.perToken}
		got := f.budget(c.target)
		if got != c.want {
			t.Errorf("fixed %v, %v per token, target %v: budget %d, want %d", c.fixed, c.perToken, c.target, got, c.want)
		}
		if c.perToken > 0 && c.fixed > 0 && c.fixed > (1-minStepUse)*(c.fixed+c.perToken*float64(got))+1e-9 {
			t.Errorf("fixed %v: a step of %d tokens spends more than %v of its time on it", c.fixed, got, 1-minStepUse)
		}
	}
}

// TestGatherWindow: an idle engine's first step gathers a burst still
// arriving (the window runs from the latest arrival), but not for longer
// than a tenth of a pass's fixed part.
func TestGatherWindow(t *testing.T) {
	// send submits a request every gap until stop is closed and says how
	// many it sent.
	send := func(s *scheduler, n int, gap time.Duration, stop chan struct{}) <-chan int {
		sent := make(chan int, 1)
		go func() {
			i := 0
			for ; i < n; i++ {
				select {
				case s.submit <- &request{}:
				case <-stop:
					sent <- i
					return
				}
				time.Sleep(gap)
			}
			sent <- i
		}()
		return sent
	}

	// A burst of 12 requests 40ms apart, a 250ms window, a 2s cap: all
	// twelve share the first step although the burst lasts 440ms. Each gap
	// leaves the sender 210ms of slack, so a loaded machine that delays a
	// goroutine does not close the window early.
	// A scheduler without its loop: the test plays the loop's part.
	idle := func() *scheduler {
		return &scheduler{e: &Engine{}, submit: make(chan *request), stop: make(chan struct{}), leaders: map[Key]*seqJob{}}
	}
	s := idle()
	s.lm.fixed = 20
	stop := make(chan struct{})
	sent := send(s, 12, 40*time.Millisecond, stop)
	s.admit(<-s.submit)
	s.gather(250 * time.Millisecond)
	close(stop)
	if n := <-sent; len(s.reqs) != 12 || n != 12 {
		t.Errorf("gathered %d of a burst of %d", len(s.reqs), n)
	}

	// An endless stream: the window closes at the cap (100ms).
	s = idle()
	s.lm.fixed = 1
	stop = make(chan struct{})
	sent = send(s, 1<<20, 5*time.Millisecond, stop)
	s.admit(<-s.submit)
	t0 := time.Now()
	s.gather(60 * time.Millisecond)
	took := time.Since(t0)
	close(stop)
	<-sent
	if took > time.Second {
		t.Errorf("gathering a stream took %v, want about the 100ms cap", took)
	}

	// A request still inside Embed (arriving) keeps the window open past
	// the gap after the latest arrival, up to the cap: the second request
	// comes 300ms after the first with a 20ms gap, and shares the step.
	s = idle()
	s.lm.fixed = 20
	s.e.arriving.Add(1)
	late := &request{arriving: true}
	go func() {
		time.Sleep(300 * time.Millisecond)
		s.submit <- late
	}()
	s.admit(&request{})
	s.gather(20 * time.Millisecond)
	if len(s.reqs) != 2 || s.e.arriving.Load() != 0 {
		t.Errorf("gathered %d requests (want 2), %d still arriving", len(s.reqs), s.e.arriving.Load())
	}
	// Nothing arriving: the window closes one gap after the latest.
	s = idle()
	s.lm.fixed = 20
	s.admit(&request{})
	t0 = time.Now()
	s.gather(20 * time.Millisecond)
	if took := time.Since(t0); took > 1500*time.Millisecond {
		t.Errorf("an idle window took %v, want about the 20ms gap", took)
	}
}

// TestArrivingCount checks that every way out of Embed takes a request
// out of the arriving count the gather window waits on: success, a bad
// request, a cancelled one, an overloaded engine.
func TestArrivingCount(t *testing.T) {
	e := newEngine(t, func(c *Config) { uncached(c); c.MaxQueuedRequests = 1 })
	embed(t, e, Request{Inputs: []Input{TextInput("hello arriving")}})
	if _, err := e.Embed(context.Background(), Request{}); err == nil {
		t.Fatal("an empty request embedded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Embed(ctx, Request{Inputs: []Input{TextInput("cancelled before it starts")}})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Embed(context.Background(), Request{Inputs: []Input{TextInput(fmt.Sprintf("one of several %d", i))}})
		}()
	}
	wg.Wait()
	if n := e.arriving.Load(); n != 0 {
		t.Errorf("%d requests still counted as arriving", n)
	}
}
