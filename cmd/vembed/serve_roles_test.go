package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// metricValue reads one sample of a replica's /metrics.
func metricValue(t *testing.T, url, sample string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// TestServeEncoderRole: vembed serve --role encoder serves the vision
// encoder of its model, and a replica started with --encoder-url sends it
// the images, with the vectors "vembed embed" makes.
func TestServeEncoderRole(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	enc := startServer(t, serveOptions{models: m, role: "encoder"})
	lm := startServer(t, serveOptions{models: m, encoders: enc})
	img := writePNG(t, filepath.Join(dir, "a.png"), 70, 42, 3)
	code, out := post(t, lm, fmt.Sprintf(`{"input":[{"image":%q}]}`, base64.StdEncoding.EncodeToString(img)))
	if code != 200 {
		t.Fatalf("%d %v", code, out)
	}
	want := cliEmbeddings(t, m, "--image", filepath.Join(dir, "a.png"))
	if fmt.Sprint(out["data"].([]any)[0].(map[string]any)["embedding"]) != fmt.Sprint(want[0]) {
		t.Error("the vector through the encoder replica differs from vembed embed's")
	}
	if v := metricValue(t, enc, "vembed_engine_images_total"); v != "1" {
		t.Errorf("the encoder replica encoded %q images, want 1", v)
	}
	if v := metricValue(t, lm, "vembed_engine_images_total"); v != "0" {
		t.Errorf("the lm replica encoded %q images itself, want 0", v)
	}
	if v := metricValue(t, lm, `vembed_cache_misses_total{cache="encoder-service"}`); v != "1" {
		t.Errorf("images sent to the encoder replica: %q, want 1", v)
	}
	for _, bad := range []serveOptions{{models: m, role: "gpu"}, {models: m, role: "encoder", encoders: enc}} {
		bad.addr = "127.0.0.1:0"
		if err := serve(t.Context(), bad, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
			t.Errorf("serve %+v started", bad)
		}
	}
}
