package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// npmDir holds the pinned JavaScript clients (package.json and
// package-lock.json; .ci/run installs node_modules with npm ci).
const npmDir = "testdata/npm"

// TestJSClients runs the official OpenAI (embeddings) and Cohere (v2 embed
// and rerank) JavaScript clients against the demo model over HTTP, with an
// API key, and checks what they return against /v1/embeddings: the same
// floats, each Cohere embedding type derived from them by the documented
// rules, rerank scores equal to the embeddings' cosines.
func TestJSClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: the JavaScript client test needs Node.js 18 or later and `npm ci` in server/testdata/npm (.ci/run does both)")
	}
	if v, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output(); err != nil {
		t.Skipf("node does not run: %v", err)
	} else if major, _ := strconv.Atoi(strings.TrimSpace(string(v))); major < 18 {
		t.Skipf("node %s is older than 18, which the pinned clients need", strings.TrimSpace(string(v)))
	}
	for _, pkg := range []string{"openai", "cohere-ai"} {
		if _, err := os.Stat(filepath.Join(npmDir, "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("%s is not installed: run `npm ci` in server/testdata/npm (.ci/run does)", pkg)
		}
	}
	tinyServer(t) // loads the demo model
	const key = "js-client-test-key"
	srv := httptest.NewServer(New(tiny.eng, Options{APIKeys: []string{key}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	img := testImage(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients.mjs")
	cmd.Dir = npmDir
	cmd.Env = append(os.Environ(), "VEMBED_URL="+srv.URL, "VEMBED_KEY="+key, "VEMBED_IMAGE="+img)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node clients.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		OpenAIDefault [][]float32 `json:"openaiDefault"`
		OpenAIFloat16 [][]float32 `json:"openaiFloat16"`
		CohereTexts   struct {
			Embeddings map[string][]json.RawMessage `json:"embeddings"`
			Texts      []string                     `json:"texts"`
			ID         string                       `json:"id"`
			Version    string                       `json:"version"`
		} `json:"cohereTexts"`
		CohereQuery  map[string][]json.RawMessage `json:"cohereQuery"`
		CohereImages map[string][]json.RawMessage `json:"cohereImages"`
		CohereInputs map[string][]json.RawMessage `json:"cohereInputs"`
		CohereRerank []struct {
			Index          int     `json:"index"`
			RelevanceScore float64 `json:"relevance_score"`
		} `json:"cohereRerank"`
		CohereStart map[string][]json.RawMessage `json:"cohereStart"`
		CohereError string                       `json:"cohereError"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("clients' output: %v: %.300s", err, stdout.String())
	}
	url := srv.URL
	ref := func(body string) [][]float32 {
		t.Helper()
		var o openAIOut
		status, b := postKey(t, url+"/v1/embeddings", key, body)
		if status != 200 || json.Unmarshal([]byte(b), &o) != nil {
			t.Fatalf("/v1/embeddings %s: %d %s", body, status, b)
		}
		return vectors(o)
	}
	sameVectors(t, "openai (base64 decoded by the client)", got.OpenAIDefault, ref(`{"input":["alpha","beta gamma"]}`))
	sameVectors(t, "openai float, 16 dimensions", got.OpenAIFloat16, ref(`{"input":"alpha","dimensions":16}`))

	checkTypes := func(name string, embs map[string][]json.RawMessage, want [][]float32, types []string) {
		t.Helper()
		for _, typ := range types {
			if len(embs[typ]) != len(want) {
				t.Errorf("%s: %d %s vectors, want %d", name, len(embs[typ]), typ, len(want))
				continue
			}
			for i, w := range want {
				if g, wv := compactJSON(embs[typ][i]), wantEncoding(t, w, typ); g != wv {
					t.Errorf("%s: %s of input %d\n got %.200s\nwant %.200s", name, typ, i, g, wv)
				}
			}
		}
	}
	checkTypes("cohere texts", got.CohereTexts.Embeddings, ref(`{"input":["alpha","beta gamma"],"task":"retrieval.passage"}`), cohereTypeNames)
	if got.CohereTexts.Version != "2" || got.CohereTexts.ID == "" || strings.Join(got.CohereTexts.Texts, "|") != "alpha|beta gamma" {
		t.Errorf("cohere embed envelope: id %q version %q texts %v", got.CohereTexts.ID, got.CohereTexts.Version, got.CohereTexts.Texts)
	}
	checkTypes("cohere query", got.CohereQuery, ref(`{"input":["alpha"],"task":"retrieval.query","dimensions":16}`), []string{"float"})
	checkTypes("cohere images", got.CohereImages, ref(`{"input":[{"image":"`+img+`"}],"task":"retrieval.passage"}`), cohereTypeNames)
	checkTypes("cohere inputs", got.CohereInputs, ref(`{"input":[{"content":[{"text":"figure 3:"},{"image":"`+img+`"}]}],"task":"retrieval.passage"}`), cohereTypeNames)

	docs := []string{"the first document", "another text entirely", "short"}
	q := ref(`{"input":"which one?","task":"retrieval.query"}`)
	d := ref(`{"input":["the first document","another text entirely","short"],"task":"retrieval.passage"}`)
	if len(got.CohereRerank) != 2 {
		t.Fatalf("cohere rerank topN 2: %d results", len(got.CohereRerank))
	}
	for k, r := range got.CohereRerank {
		if r.Index < 0 || r.Index >= len(docs) {
			t.Fatalf("cohere rerank: index %d", r.Index)
		}
		if want := dot(q[0], d[r.Index]); math.Abs(r.RelevanceScore-want) > 1e-9 {
			t.Errorf("cohere rerank: document %d scored %v, want %v", r.Index, r.RelevanceScore, want)
		}
		if k > 0 && r.RelevanceScore > got.CohereRerank[k-1].RelevanceScore {
			t.Errorf("cohere rerank: not best first %+v", got.CohereRerank)
		}
	}
	var start cohereEmbedOut
	if status, b := postKey(t, url+"/v2/embed", key, `{"texts":["one two three four five six seven eight nine ten eleven twelve"],"input_type":"search_query","max_tokens":8,"truncate":"START"}`); status != 200 || json.Unmarshal([]byte(b), &start) != nil {
		t.Fatalf("/v2/embed truncate START: %d %s", status, b)
	}
	if len(got.CohereStart["float"]) != 1 || string(got.CohereStart["float"][0]) != string(start.Embeddings["float"][0]) {
		t.Errorf("truncate START through the Cohere client: %.200s, want %.200s", got.CohereStart["float"], start.Embeddings["float"])
	}
	if !strings.HasPrefix(got.CohereError, "400 ") || !strings.Contains(got.CohereError, `over the limit of 8 tokens`) {
		t.Errorf("a refused request through the Cohere client: %s", got.CohereError)
	}
}

// compactJSON re-encodes a JSON value without spaces (node writes none;
// this keeps the comparison independent of the writer).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// postKey posts a JSON body with an API key.
func postKey(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
