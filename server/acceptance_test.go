package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/synth"
)

// demoEngine serves the demo model with cfg's limits over real HTTP on
// 127.0.0.1.
func demoEngine(t *testing.T, cfg engine.Config) (*engine.Engine, string) {
	t.Helper()
	m, err := synth.WriteDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.MMProj, cfg.MVProj = m.LM, m.MMProj, m.MVProj
	return serveEngine(t, cfg)
}

// serveEngine serves a new engine of cfg over real HTTP on 127.0.0.1
// until the test ends, and returns it and the server's URL.
func serveEngine(t *testing.T, cfg engine.Config) (*engine.Engine, string) {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	srv := httptest.NewServer(New(eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	return eng, srv.URL
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// TestAbandonedRequestStopsComputing: a client that gives up on a long
// request over HTTP stops its computing at the engine's next step, as the
// engine's counters show: one cancelled request, and no step run after it
// left, far fewer than the request needed.
func TestAbandonedRequestStopsComputing(t *testing.T) {
	const stepTokens = 32
	eng, url := demoEngine(t, engine.Config{MaxBatchTokens: stepTokens, EmbeddingCacheBytes: -1})
	const reps = 700 // about 7000 tokens, under the default limit
	text := strings.Repeat("abandoned request ", reps)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/embeddings", strings.NewReader(`{"input": "`+text+`"}`))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = fmt.Errorf("answered %d %s", resp.StatusCode, msg)
		} else {
			err = nil
		}
		errc <- err
	}()
	waitFor(t, "the request computes", func() bool { return eng.Stats().Steps >= 3 || len(errc) > 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("the abandoned request: %v", err)
	}
	waitFor(t, "the engine counts the request cancelled", func() bool { return eng.Stats().Cancelled == 1 })
	left := eng.Stats()
	time.Sleep(300 * time.Millisecond)
	after := eng.Stats()
	if after.Steps != left.Steps || after.RunningRequests != 0 || after.QueuedRequests != 0 {
		t.Errorf("the engine kept working after the request left: steps %d -> %d, running %d, queued %d",
			left.Steps, after.Steps, after.RunningRequests, after.QueuedRequests)
	}
	// The same request to the end, for the steps it takes (and to show the
	// engine still serves).
	resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(`{"input": "`+text+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the whole request: status %d", resp.StatusCode)
	}
	full := eng.Stats()
	need := full.Steps - after.Steps
	t.Logf("the abandoned request stopped after %d steps and %d LM tokens; the whole request takes %d steps and %d tokens",
		after.Steps, after.LMTokens, need, full.LMTokens-after.LMTokens)
	if after.Steps*2 > need {
		t.Errorf("the abandoned request ran %d of the %d steps it needed", after.Steps, need)
	}
}

// TestHugeTextRefusedOverHTTP: a 50 MB text sent over HTTP to the demo
// model is refused as too long without reaching the engine (no token
// computed), in a few tens of milliseconds once its upload ends.
func TestHugeTextRefusedOverHTTP(t *testing.T) {
	eng, url := demoEngine(t, engine.Config{})
	body := `{"input": "` + strings.Repeat("lorem ipsum ", 50<<20/12) + `"}`
	var best, bestAfter time.Duration
	for range 3 {
		r := &uploadTimer{r: strings.NewReader(body)}
		start := time.Now()
		req, _ := http.NewRequest("POST", url+"/v1/embeddings", r)
		req.ContentLength = int64(len(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		end := time.Now()
		if resp.StatusCode != 400 || !strings.Contains(string(msg), "over the model's limit") {
			t.Fatalf("status %d: %s", resp.StatusCode, msg)
		}
		if took := end.Sub(start); best == 0 || took < best {
			best = took
		}
		if after := end.Sub(r.sent); bestAfter == 0 || after < bestAfter {
			bestAfter = after
		}
	}
	t.Logf("a %d MB text refused over HTTP in %v, %v after its upload ended (best of 3)", len(body)>>20, best, bestAfter)
	if s := eng.Stats(); s.LMTokens != 0 || s.Requests != 0 {
		t.Errorf("the engine saw the refused text: %d tokens, %d requests", s.LMTokens, s.Requests)
	}
	if bestAfter > 2*time.Second {
		t.Errorf("refused %v after the upload", bestAfter)
	}
}

// uploadTimer notes when a request body has been read to its end.
type uploadTimer struct {
	r    io.Reader
	sent time.Time
}

func (u *uploadTimer) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err == io.EOF && u.sent.IsZero() {
		u.sent = time.Now()
	}
	return n, err
}
