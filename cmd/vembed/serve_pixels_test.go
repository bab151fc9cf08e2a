package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
)

// TestServeMaxPixelsBounds: serve --max-pixels below the model's minimum
// image budget exits at start-up naming the model's bounds (the tiny
// model's mmproj states none: jina-embeddings-v4's 3136..602112 apply),
// as a request's max_pixels is refused; within the bounds it lowers the
// maximum and leaves the minimum alone.
func TestServeMaxPixelsBounds(t *testing.T) {
	m := writeTestModel(t, t.TempDir())
	var o, e bytes.Buffer
	code := run([]string{"serve", "--model", m.model, "--mmproj", m.mmproj, "--max-pixels", "3000", "--addr", "127.0.0.1:0"}, &o, &e)
	if code == 0 || !strings.Contains(e.String(), "--max-pixels") || !strings.Contains(e.String(), "3136..602112") {
		t.Errorf("serve --max-pixels 3000: exit %d, %q; want an error naming the flag and the model's 3136..602112", code, e.String())
	}
	url := startServer(t, serveOptions{models: m, eng: engine.Config{MaxPixels: 4000}})
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Min int `json:"min_pixels"`
			Max int `json:"max_pixels"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) != 1 || out.Data[0].Min != 3136 || out.Data[0].Max != 4000 {
		t.Errorf("models with --max-pixels 4000: %+v (%v), want 3136..4000", out, err)
	}
}
