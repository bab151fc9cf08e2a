package server

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/fixtures"
)

// TestQwen3VLEmbeddings sends the qwen3vl fixtures' text cases to
// /v1/embeddings with their instruction and checks the vectors, and that a
// Jina task is refused with a 400 that points to the instruction field.
func TestQwen3VLEmbeddings(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl")
	_, url := serveEngine(t, engine.Config{Model: filepath.Join(dir, "qwen3vl-tiny-lm-F32.gguf"), MMProj: filepath.Join(dir, "mmproj-qwen3vl-tiny-F32.gguf")})
	post := func(body any) (int, []byte) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	for _, id := range []string{"q3text00", "q3text01"} {
		var c struct {
			Instruction *string `json:"instruction"`
			Input       []struct {
				Text string `json:"text"`
			} `json:"input"`
			Embedding []float32 `json:"embedding"`
		}
		fixtures.ReadJSON(t, filepath.Join(dir, "cases", id, "case.json"), &c)
		body := map[string]any{"input": []string{c.Input[0].Text}}
		if c.Instruction != nil {
			body["instruction"] = *c.Instruction
		}
		code, out := post(body)
		var resp struct {
			Data []struct {
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if code != 200 || json.Unmarshal(out, &resp) != nil || len(resp.Data) != 1 {
			t.Fatalf("%s: %d %s", id, code, out)
		}
		if cs := fixtures.Cosine(resp.Data[0].Embedding, c.Embedding); cs < 0.99999 {
			t.Errorf("%s: cosine %.8f", id, cs)
		}
	}
	if code, out := post(map[string]any{"input": "x", "task": "retrieval.query"}); code != 400 || !strings.Contains(string(out), "instruction") {
		t.Errorf("task on a Qwen3-VL model: %d %s", code, out)
	}
	if code, out := post(map[string]any{"input": "see <|image_pad|>"}); code != 400 {
		t.Errorf("image pad in text: %d %s", code, out)
	}
}
