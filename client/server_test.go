package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/client"
)

// TestAgainstServer: the client's vectors (sent as base64) equal the float
// JSON the server gives for the same request, for every input form and
// option; scores agree between rerank, score and pairs; errors carry the
// server's fields.
func TestAgainstServer(t *testing.T) {
	url, stop := demoServer()
	defer stop()
	ctx := context.Background()
	c := client.New(url)
	png, err := os.ReadFile(filepath.Join("testdata", "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	floats := func(body map[string]any) []struct {
		Embedding      []float32
		Embeddings     [][]float32
		SpanEmbeddings [][]float32 `json:"span_embeddings"`
	} {
		b, _ := json.Marshal(body)
		resp, err := http.Post(url+"/v1/embeddings", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Data []struct {
				Embedding      []float32
				Embeddings     [][]float32
				SpanEmbeddings [][]float32 `json:"span_embeddings"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("reference request: %d %v", resp.StatusCode, err)
		}
		return out.Data
	}
	inputs := []client.Input{client.Text("a cat"), client.ImageBytes(png), client.Parts(client.Text("figure 3:"), client.ImageBytes(png))}
	for _, c2 := range []struct {
		req  client.EmbedRequest
		body map[string]any
	}{
		{client.EmbedRequest{Inputs: inputs, Dimensions: 16, Task: "retrieval.passage"}, map[string]any{"input": inputs, "dimensions": 16, "task": "retrieval.passage"}},
		{client.EmbedRequest{Inputs: inputs, PerSpan: true}, map[string]any{"input": inputs, "per_span": true}},
		{client.EmbedRequest{Inputs: inputs, Multivector: true, PoolFactor: 2}, map[string]any{"input": inputs, "return_multivector": true, "pool_factor": 2}},
	} {
		res, err := c.Embed(ctx, c2.req)
		if err != nil {
			t.Fatal(err)
		}
		want := floats(c2.body)
		for i, d := range res.Data {
			if fmt.Sprint(d.Vector, d.Multi, d.SpanVector) != fmt.Sprint(want[i].Embedding, want[i].Embeddings, want[i].SpanEmbeddings) ||
				len(d.Vector)+len(d.Multi) == 0 {
				t.Errorf("%+v input %d: client and server vectors differ", c2.body, i)
			}
		}
		if res.Usage.PromptTokens == 0 {
			t.Errorf("no usage")
		}
	}

	docs := []client.Input{client.Text("first"), client.ImageBytes(png), client.Text("a third one")}
	for _, multi := range []bool{false, true} {
		scores, err := c.Score(ctx, client.Text("which?"), docs, multi)
		if err != nil {
			t.Fatal(err)
		}
		ranked, err := c.Rerank(ctx, client.RerankRequest{Query: client.Text("which?"), Documents: docs, Multivector: multi})
		if err != nil || len(ranked) != len(docs) {
			t.Fatalf("rerank: %v %v", ranked, err)
		}
		for _, r := range ranked {
			if math.Abs(r.RelevanceScore-scores[r.Index]) > 1e-12 {
				t.Errorf("multivector=%v: rerank %v, score %v", multi, r, scores)
			}
		}
		pairs, err := c.ScorePairs(ctx, []client.Input{client.Text("which?"), client.Text("which?"), client.Text("which?")}, docs, multi)
		if err != nil || fmt.Sprint(pairs) != fmt.Sprint(scores) {
			t.Errorf("pairs %v (%v), want %v", pairs, err, scores)
		}
	}

	models, err := c.Models(ctx)
	if err != nil || len(models) != 1 {
		t.Fatal(models, err)
	}
	if m, err := c.Model(ctx, models[0].ID); err != nil || m.ID != models[0].ID {
		t.Errorf("Model(%q): %+v %v", models[0].ID, m, err)
	}
	var apiErr *client.Error
	if _, err := c.Model(ctx, "other model"); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.RequestID == "" {
		t.Errorf("another model: %v", err)
	}
	if _, err := c.Embed(ctx, client.EmbedRequest{Inputs: []client.Input{client.Text("a")}, Multivector: true, Dimensions: 8}); !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Param != "dimensions" {
		t.Errorf("dimensions with multivector: %v", err)
	}
}
