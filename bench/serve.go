package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/synth"
)

// Serve, "vembed bench serve", is the load benchmark of the serving
// design (scenarios of its §11.2): it drives a server over HTTP,
// in-process on a loopback port or at ServeConfig.URLs, and reports per
// scenario requests/s, prompt tokens/s, latency percentiles and,
// in-process, the hit ratio of every cache.
//
//	Q         16 clients each send one short query at once, against 16
//	          other queries of the same length sent one at a time (the
//	          batching gain; QRounds repeats both, median reported)
//	T         texts: queries and passages from Clients clients
//	I-0       distinct images (mixed sizes), one per request; with
//	          Images, those files, each once, in order (pages rendered
//	          by vembed index, say, to compare its rate with the engine's)
//	I-50      the same, every second request repeating an earlier image
//	          (drawn from those sent before the last Clients requests)
//	I-50-text like I-50 with a text of its own beside each image (and
//	          tasks in turn), so only the encoder cache can hit
//	repeat    one image request sent twice: the second run's cost
//	M         two clients keep sending large images while one client sends
//	          short queries: query latency against its idle latency

// ServeConfig is one run of the load benchmark.
type ServeConfig struct {
	// URLs are running replicas, sent requests round robin (cache hit
	// ratios are summed over their /metrics; with a shared cache, its
	// ratio is the cross-replica one). Empty: an in-process server of
	// LM and MMProj (both empty: the tiny synthetic model).
	URLs       []string
	LM, MMProj string
	// Scenarios to run, in order.
	Scenarios []string
	// Clients concurrent clients send Requests requests in the T and I
	// scenarios.
	Clients, Requests int
	// Sizes are the square image sizes of the I scenarios, used in turn;
	// Large the size the M scenario's background clients send.
	Sizes []int
	Large int
	// QRounds rounds of the Q scenario; the round with the median ratio
	// is reported.
	QRounds int
	// Images are files or folders whose images I-0 sends, each once in
	// name order, instead of synthetic images.
	Images []string
	// Load loads the in-process engine.
	Load Loader
	// Log receives progress lines.
	Log io.Writer
}

func (c *ServeConfig) check() error {
	if len(c.Sizes) == 0 {
		return errors.New("--image-sizes: want sizes like 448,640")
	}
	if c.Clients < 1 || c.Requests < 2 || c.Large < 28 || c.QRounds < 1 || c.QRounds > 100 {
		return errors.New("--clients must be at least 1, --requests at least 2, --large at least 28, --q-rounds 1 to 100")
	}
	return nil
}

// Serve runs the scenarios of c and returns their figures, in order.
func Serve(c ServeConfig) ([]ServeFigure, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	b := &serveBench{clients: c.Clients, requests: c.Requests, sizes: c.Sizes, large: c.Large, qRounds: c.QRounds, w: logTo(c.Log),
		client: &http.Client{Timeout: 30 * time.Minute}}
	if len(c.Images) > 0 {
		var err error
		if b.images, err = imageFiles(c.Images); err != nil {
			return nil, err
		}
	}
	if len(c.URLs) > 0 {
		b.urls = c.URLs
	} else {
		stop, err := b.startLocal(c.Load, c.LM, c.MMProj)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	for _, s := range c.Scenarios {
		if err := b.run(strings.TrimSpace(s)); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s, err)
		}
	}
	return b.rows, nil
}

type serveBench struct {
	urls     []string
	eng      *engine.Engine // nil with --url
	clients  int
	requests int
	sizes    []int
	large    int
	qRounds  int
	images   []string // ServeConfig.Images: I-0 sends these files instead
	w        io.Writer
	rows     []ServeFigure
	client   *http.Client
}

// ServeFigure is what one scenario (or phase of one) measured.
type ServeFigure struct {
	Scenario  string             `json:"scenario"`
	Requests  int                `json:"requests"`
	Seconds   float64            `json:"seconds"`
	ReqPerSec float64            `json:"requests_per_second"`
	TokPerSec float64            `json:"tokens_per_second"`
	P50       float64            `json:"p50_s"`
	P95       float64            `json:"p95_s"`
	P99       float64            `json:"p99_s"`
	Ratio     float64            `json:"ratio,omitempty"` // scenario-specific, see Note
	Note      string             `json:"note,omitempty"`
	CacheHits map[string]float64 `json:"cache_hit_ratio,omitempty"`
	// CrossReplica is, with several --url replicas, the hit ratio of
	// their shared cache: lookups one replica's memory missed that
	// another replica's work answered.
	CrossReplica float64 `json:"cross_replica_hit_ratio,omitempty"`
	// Steps is, in-process, the scheduler steps the scenario took (each
	// at most one language-model pass).
	Steps  int64 `json:"steps,omitempty"`
	Errors int   `json:"errors,omitempty"`
	// CPUSeconds is, in-process, the CPU time the process used during the
	// scenario (server and clients); CPURatio, for Q, the CPU time per
	// request one at a time over that of the simultaneous requests: the
	// ratio a machine shared with other jobs still measures, where the
	// wall clock's moves with their load.
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	CPURatio   float64 `json:"cpu_ratio,omitempty"`
}

// startLocal serves the model on a loopback port.
func (b *serveBench) startLocal(load Loader, lm, mmproj string) (func(), error) {
	if lm == "" {
		dir, err := os.MkdirTemp("", "vembed-bench-serve-")
		if err != nil {
			return nil, err
		}
		cfg, err := synth.Preset("tiny")
		if err != nil {
			return nil, err
		}
		if lm, mmproj, err = synth.WritePair(dir, cfg); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir) // the files stay mapped until the engine closes
		fmt.Fprintln(b.w, "vembed bench serve: no --lm given; figures are for the tiny synthetic model")
	}
	eng, err := load.load(engine.Config{Model: lm, MMProj: mmproj, MaxQueuedRequests: 1 << 16})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		eng.Close()
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := &http.Server{Handler: server.New(eng, server.Options{MaxPending: 1 << 16, Logger: quiet})}
	go srv.Serve(ln)
	b.eng = eng
	b.urls = []string{"http://" + ln.Addr().String()}
	return func() {
		srv.Close()
		eng.Close()
	}, nil
}

// replica spreads request i over n replicas round robin, shifted by one
// every round, so that a pattern in the requests' order does not line up
// with the replicas: with plain round robin over two replicas, I-50's
// distinct images (even requests) all went to one replica and its repeats
// to the other, which then bounded the run whatever the caches did.
func replica(i, n int) int { return (i + i/n) % n }

// call sends one /v1/embeddings request and returns its prompt tokens.
func (b *serveBench) call(ctx context.Context, i int, body map[string]any) (int, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	url := strings.TrimSuffix(b.urls[replica(i, len(b.urls))], "/") + "/v1/embeddings"
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, err
	}
	return out.Usage.PromptTokens, nil
}

// load sends bodies from clients concurrent clients, in order, and
// returns the figure of the run.
func (b *serveBench) load(name string, clients int, bodies []map[string]any) (ServeFigure, error) {
	before := b.cacheCounts()
	var steps0 int64
	if b.eng != nil {
		steps0 = b.eng.Stats().Steps
	}
	lat := make([]float64, len(bodies))
	var next, tokens, done, failed atomic.Int64
	var firstErr atomic.Value
	cpu0, cpuOK := processCPU()
	start := time.Now()
	stopProgress := b.progress(name, len(bodies), &done)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(bodies) {
					return
				}
				t0 := time.Now()
				n, err := b.call(context.Background(), i, bodies[i])
				lat[i] = time.Since(t0).Seconds()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				tokens.Add(int64(n))
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	stopProgress()
	secs := time.Since(start).Seconds()
	if err, _ := firstErr.Load().(error); err != nil && failed.Load() == int64(len(bodies)) {
		return ServeFigure{}, err
	}
	f := ServeFigure{Scenario: name, Requests: len(bodies), Seconds: round4(secs), ReqPerSec: round4(float64(len(bodies)) / secs),
		TokPerSec: round4(float64(tokens.Load()) / secs), Errors: int(failed.Load())}
	f.P50, f.P95, f.P99 = percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)
	f.CacheHits = b.hitRatios(before)
	if b.eng != nil {
		f.Steps = b.eng.Stats().Steps - steps0
		if cpu1, _ := processCPU(); cpuOK {
			f.CPUSeconds = round4((cpu1 - cpu0).Seconds())
		}
	}
	if len(b.urls) > 1 {
		f.CrossReplica = f.CacheHits["shared"]
	}
	return f, nil
}

// progress prints a line every few seconds while a scenario runs.
func (b *serveBench) progress(name string, total int, done *atomic.Int64) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := done.Load()
				el := time.Since(start).Seconds()
				eta := "?"
				if n > 0 {
					eta = fmt.Sprintf("%.0fs", el/float64(n)*float64(int64(total)-n))
				}
				fmt.Fprintf(b.w, "vembed bench serve: %s %d/%d requests, %.1fs, eta %s\n", name, n, total, el, eta)
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}

// cacheCounts reads the cache counters: the in-process engine's, or the
// sum over every --url replica's /metrics (so that with several replicas
// the "shared" cache's ratio is the cross-replica hit ratio).
func (b *serveBench) cacheCounts() map[string][2]int64 {
	out := map[string][2]int64{}
	if b.eng != nil {
		for _, c := range b.eng.Stats().Caches {
			out[c.Name] = [2]int64{c.Hits, c.Misses}
		}
		return out
	}
	for _, u := range b.urls {
		resp, err := b.client.Get(strings.TrimSuffix(u, "/") + "/metrics")
		if err != nil {
			continue
		}
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		for _, line := range strings.Split(string(text), "\n") {
			for i, metric := range []string{"vembed_cache_hits_total{cache=\"", "vembed_cache_misses_total{cache=\""} {
				rest, ok := strings.CutPrefix(line, metric)
				if !ok {
					continue
				}
				name, value, ok := strings.Cut(rest, "\"} ")
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if !ok || err != nil {
					continue
				}
				c := out[name]
				c[i] += int64(v)
				out[name] = c
			}
		}
	}
	return out
}

func (b *serveBench) hitRatios(before map[string][2]int64) map[string]float64 {
	out := map[string]float64{}
	for name, now := range b.cacheCounts() {
		h, m := now[0]-before[name][0], now[1]-before[name][1]
		if h+m > 0 {
			out[name] = round4(float64(h) / float64(h+m))
		}
	}
	return out
}

// imageFiles lists the files of --images: files as given, folders'
// regular files in name order.
func imageFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		a = strings.TrimSpace(a)
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("--images: %w", err)
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("--images: %w", err)
		}
		for _, e := range ents { // ReadDir sorts by name
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(a, e.Name()))
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--images: no files")
	}
	return out, nil
}

// fileImageItem is a data URI of an image file's bytes, its type sniffed.
func fileImageItem(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--images: %w", err)
	}
	return "data:" + http.DetectContentType(data) + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

// imageItem is a data URI of a distinct synthetic photograph per seed.
func imageItem(size, seed int) (string, error) {
	data, err := synth.Photo(size, seed, "jpeg")
	if err != nil {
		return "", err
	}
	return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(data), nil
}

// planned is one image request of the I scenarios: which image, at what size.
type planned struct{ seed, size int }

// imagePlan lists the images of n requests of an I scenario. Distinct
// images take the sizes in turn, so that with repeats every second
// request repeats an image already sent, drawn uniformly (the same draws
// every run) from the history but for the last clients-1 requests, which
// may still be in flight: a repeat of an image being computed waits for
// it, on another replica it is computed twice, and no cache can change
// that. The distinct images of I-50 thus have I-0's mix of sizes, and the
// ratio of the two measures the caches, not cheaper images. salt makes
// the images of different scenarios differ.
func imagePlan(repeats bool, n int, sizes []int, clients, salt int) []planned {
	pick := rand.New(rand.NewPCG(uint64(salt), 50))
	var plan []planned
	distinct := 0
	for i := range n {
		if repeats && i%2 == 1 {
			plan = append(plan, plan[pick.IntN(max(len(plan)-clients+1, 1))])
			continue
		}
		plan = append(plan, planned{seed: 10000*salt + i, size: sizes[distinct%len(sizes)]})
		distinct++
	}
	return plan
}

func (b *serveBench) run(name string) error {
	// Queries differ by their numbers only, all of the same width, so
	// that every query has the same token count: Q's two phases then
	// compare equal work.
	query := func(i int) map[string]any {
		return map[string]any{"input": fmt.Sprintf("what does page %d say about topic %d?", 1000+i, 10+i*7%13)}
	}
	switch name {
	case "Q":
		// Each round sends 16 new queries one at a time, then 16 more at
		// once; the round with the median ratio is reported.
		type round struct{ one, many ServeFigure }
		var rounds []round
		for r := range b.qRounds {
			bodies := make([]map[string]any, 16)
			for i := range bodies {
				bodies[i] = query(200*r + i) // new texts: no cache hit
			}
			one, err := b.load("Q sequential", 1, bodies)
			if err != nil {
				return err
			}
			for i := range bodies {
				bodies[i] = query(200*r + 100 + i)
			}
			many, err := b.load("Q 16 clients", 16, bodies)
			if err != nil {
				return err
			}
			many.Ratio = round4(many.ReqPerSec / one.ReqPerSec)
			if one.CPUSeconds > 0 && many.CPUSeconds > 0 {
				many.CPURatio = round4(one.CPUSeconds / many.CPUSeconds)
			}
			rounds = append(rounds, round{one, many})
		}
		slices.SortFunc(rounds, func(x, y round) int { return cmp.Compare(x.many.Ratio, y.many.Ratio) })
		med := rounds[len(rounds)/2]
		med.many.Note = "req/s vs one at a time"
		if len(rounds) > 1 {
			var all, cpu []string
			for _, r := range rounds {
				all = append(all, strconv.FormatFloat(r.many.Ratio, 'g', 3, 64))
				cpu = append(cpu, strconv.FormatFloat(r.many.CPURatio, 'g', 3, 64))
			}
			med.many.Note += fmt.Sprintf("; median of %d rounds (%s; CPU time %s)", len(rounds), strings.Join(all, ", "), strings.Join(cpu, ", "))
		}
		b.rows = append(b.rows, med.one, med.many)
	case "T":
		var bodies []map[string]any
		for i := range b.requests {
			if i%2 == 0 {
				bodies = append(bodies, query(50000+i)) // past every Q round's numbers
			} else {
				bodies = append(bodies, map[string]any{"input": strings.Repeat(fmt.Sprintf("passage %d sentence about things. ", i), 20), "task": "retrieval.passage"})
			}
		}
		f, err := b.load("T", b.clients, bodies)
		if err != nil {
			return err
		}
		b.rows = append(b.rows, f)
	case "I-0", "I-50", "I-50-text":
		var bodies []map[string]any
		tasks := []string{"retrieval.query", "retrieval.passage", "text-matching", "code.query"}
		if name == "I-0" && len(b.images) > 0 {
			for _, path := range b.images {
				img, err := fileImageItem(path)
				if err != nil {
					return err
				}
				bodies = append(bodies, map[string]any{"input": []any{map[string]any{"image": img}}})
			}
		}
		synthetic := b.requests
		if len(bodies) > 0 {
			synthetic = 0 // I-0 of --images files
		}
		for i, im := range imagePlan(name != "I-0", synthetic, b.sizes, b.clients, len(b.rows)) {
			img, err := imageItem(im.size, im.seed)
			if err != nil {
				return err
			}
			if name == "I-50-text" {
				// A text of its own beside every image: only the encoder
				// cache can serve a repeated image.
				text := fmt.Sprintf("question %d about this page", i)
				bodies = append(bodies, map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"text": text}, map[string]any{"image": img}}}}, "task": tasks[i%len(tasks)]})
			} else {
				bodies = append(bodies, map[string]any{"input": []any{map[string]any{"image": img}}})
			}
		}
		f, err := b.load(name, b.clients, bodies)
		if err != nil {
			return err
		}
		f.Note = "images/s = req/s"
		b.rows = append(b.rows, f)
		if name != "I-0" {
			for _, r := range b.rows {
				if r.Scenario == "I-0" {
					f.Ratio = round4(f.ReqPerSec / r.ReqPerSec)
					f.Note = "images/s vs I-0"
					b.rows[len(b.rows)-1] = f
				}
			}
		}
	case "repeat":
		img, err := imageItem(b.sizes[len(b.sizes)-1], 777)
		if err != nil {
			return err
		}
		body := map[string]any{"input": []any{map[string]any{"image": img}}}
		first, err := b.load("repeat first", 1, []map[string]any{body})
		if err != nil {
			return err
		}
		again, err := b.load("repeat again", 1, []map[string]any{body, body, body})
		if err != nil {
			return err
		}
		again.Ratio = round4(again.P50 / first.P50)
		again.Note = "latency vs first run"
		b.rows = append(b.rows, first, again)
	case "M":
		return b.mixed()
	default:
		return fmt.Errorf("unknown scenario %q", name)
	}
	return nil
}

// mixed measures short-query latency idle, then while two clients keep
// sending large images.
func (b *serveBench) mixed() error {
	n := 12
	var idle []map[string]any
	for i := range n {
		idle = append(idle, map[string]any{"input": fmt.Sprintf("idle query number %d about a topic", i)})
	}
	base, err := b.load("M idle queries", 1, idle)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent atomic.Int64
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				img, err := imageItem(b.large, 50000+100*c+i)
				if err != nil {
					return
				}
				if _, err := b.call(ctx, c, map[string]any{"input": []any{map[string]any{"image": img}}}); err == nil {
					sent.Add(1)
				}
			}
		}()
	}
	// Let the image clients fill the engine before measuring.
	time.Sleep(time.Duration(2*base.P50*float64(time.Second)) + 500*time.Millisecond)
	var busy []map[string]any
	for i := range n {
		busy = append(busy, map[string]any{"input": fmt.Sprintf("busy query number %d about a topic", i)})
		// Queries arrive spaced, as interactive traffic does.
	}
	lat := make([]float64, 0, n)
	start := time.Now()
	for i, body := range busy {
		t0 := time.Now()
		if _, err := b.call(context.Background(), i, body); err != nil {
			cancel()
			wg.Wait()
			return err
		}
		lat = append(lat, time.Since(t0).Seconds())
		time.Sleep(time.Duration(base.P50 * float64(time.Second) / 2))
	}
	secs := time.Since(start).Seconds()
	cancel()
	wg.Wait()
	f := ServeFigure{Scenario: "M queries under image load", Requests: n, Seconds: round4(secs), ReqPerSec: round4(float64(n) / secs)}
	f.P50, f.P95, f.P99 = percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)
	f.Ratio = round4(f.P50 / base.P50)
	f.Note = fmt.Sprintf("p50 vs idle p50 (p95 %.3gx); %d large images done meanwhile", f.P95/base.P50, sent.Load())
	b.rows = append(b.rows, base, f)
	return nil
}
