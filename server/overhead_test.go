package server

import (
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

// BenchmarkKeysAndMetrics reports requests/s of short text requests over
// HTTP on the demo (tiny) model with API keys and metrics off and on, and
// the overhead of having them on. The two servers share one engine and
// take turns request by request, so that the load of a shared machine
// weighs on both alike. The embedding cache is off, so every request
// reaches the model.
func BenchmarkKeysAndMetrics(b *testing.B) {
	dir := b.TempDir()
	sc, err := synth.Preset("tiny")
	if err != nil {
		b.Fatal(err)
	}
	lm, mmproj, err := synth.WritePair(dir, sc)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Model: lm, MMProj: mmproj, EmbeddingCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	off := httptest.NewServer(New(eng, Options{NoMetrics: true, Logger: quiet}))
	defer off.Close()
	on := httptest.NewServer(New(eng, Options{APIKeys: []string{"k1", "k2", "k3"}, Logger: quiet}))
	defer on.Close()
	i := 0
	send := func(url string) time.Duration {
		req, _ := http.NewRequest("POST", url+"/v1/embeddings", strings.NewReader(fmt.Sprintf(`{"input":"query number %d"}`, i)))
		req.Header.Set("Authorization", "Bearer k3")
		i++
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return took
	}
	for range 20 { // connections and caches warm on both sides
		send(off.URL)
		send(on.URL)
	}
	var tOff, tOn time.Duration
	for n := 0; b.Loop(); n++ {
		// Alternate which goes first, so neither always follows the other.
		if n%2 == 0 {
			tOff += send(off.URL)
			tOn += send(on.URL)
		} else {
			tOn += send(on.URL)
			tOff += send(off.URL)
		}
	}
	rOff, rOn := float64(b.N)/tOff.Seconds(), float64(b.N)/tOn.Seconds()
	b.ReportMetric(rOff, "off-req/s")
	b.ReportMetric(rOn, "on-req/s")
	b.ReportMetric(100*(1-rOn/rOff), "overhead-%")
}
