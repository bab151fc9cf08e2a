package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/synth"
)

// BenchmarkKeysAndMetrics reports requests/s of short text requests over
// HTTP on the demo (tiny) model with API keys and metrics off and on, in
// one run, and the overhead of having them on. The embedding cache is off,
// so every request reaches the model.
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
	rates := map[string]float64{}
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"off", Options{NoMetrics: true, Logger: quiet}},
		{"on", Options{APIKeys: []string{"k1", "k2", "k3"}, Logger: quiet}},
	} {
		srv := httptest.NewServer(New(eng, c.opts))
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/embeddings", strings.NewReader(fmt.Sprintf(`{"input":"query number %d"}`, i)))
				req.Header.Set("Authorization", "Bearer k3")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
				i++
			}
			rates[c.name] = float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rates[c.name], "req/s")
		})
		srv.Close()
	}
	if rates["off"] > 0 && rates["on"] > 0 {
		b.Logf("keys and metrics on: %.1f req/s, off: %.1f req/s, overhead %.2f%%", rates["on"], rates["off"], 100*(1-rates["on"]/rates["off"]))
	}
}
