package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/synth"
)

// fakeReranker is an embedder that scores pairs itself when reranker is
// set: a document's score is the length of its text over 100, so tests
// know the order.
type fakeReranker struct {
	fakeEmbedder
	reranker bool
	err      error // returned by Rerank
	calls    []rerankCall
}

type rerankCall struct {
	query, instruction string
	docs               []string
}

func (f *fakeReranker) Info() engine.Info {
	info := f.fakeEmbedder.Info()
	info.Reranker = f.reranker
	return info
}

func (f *fakeReranker) Rerank(ctx context.Context, query engine.Input, docs []engine.Input, instruction string) ([]float64, int, error) {
	c := rerankCall{query: query.Parts[0].Text, instruction: instruction}
	scores := make([]float64, len(docs))
	for i, d := range docs {
		c.docs = append(c.docs, d.Parts[0].Text)
		scores[i] = float64(len(d.Parts[0].Text)) / 100
	}
	f.calls = append(f.calls, c)
	if f.err != nil {
		return nil, 0, f.err
	}
	return scores, 7 * len(docs), nil
}

// TestRerankerModelScoresPairs: an embedder that implements Reranker and
// says it is one scores every pair itself, with the instruction; one that
// does not say so, or whose Rerank reports ErrNotReranker, is ranked by
// its embeddings.
func TestRerankerModelScoresPairs(t *testing.T) {
	f := &fakeReranker{reranker: true}
	h := newTestHandler(f, Options{})
	status, out := do(t, h, "POST", "/v1/rerank", `{"query":"q","documents":["bb","a","dddd","ccc"],"top_n":3,"instruction":"judge"}`)
	if status != 200 {
		t.Fatalf("rerank: %d %v", status, out)
	}
	var order []int
	for _, r := range out["results"].([]any) {
		m := r.(map[string]any)
		order = append(order, int(m["index"].(float64)))
		if want := []float64{0.02, 0.01, 0.04, 0.03}[order[len(order)-1]]; m["relevance_score"] != want {
			t.Errorf("result %v: score %v, want %v", m["index"], m["relevance_score"], want)
		}
	}
	if !slices.Equal(order, []int{2, 3, 0}) {
		t.Errorf("order %v, want [2 3 0]", order)
	}
	if len(f.calls) != 1 || f.calls[0].query != "q" || f.calls[0].instruction != "judge" || len(f.calls[0].docs) != 4 {
		t.Errorf("calls %+v", f.calls)
	}
	if u := out["usage"].(map[string]any); u["total_tokens"] != float64(28) {
		t.Errorf("usage %v", u)
	}

	// Score pair by pair: each pair its own call; one text_1: one call.
	f.calls = nil
	status, out = do(t, h, "POST", "/v1/score", `{"text_1":["x","y"],"text_2":["aa","bbb"]}`)
	if status != 200 || len(f.calls) != 2 || f.calls[1].query != "y" || f.calls[1].docs[0] != "bbb" {
		t.Fatalf("score pairs: %d %v, calls %+v", status, out, f.calls)
	}
	if d := out["data"].([]any); d[1].(map[string]any)["score"] != 0.03 {
		t.Errorf("score data %v", d)
	}

	// TEI's raw_scores: the logit of the probability.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/rerank", strings.NewReader(`{"query":"q","texts":["aaaaaaaaaa"],"raw_scores":true}`)))
	var tei []struct{ Score float64 }
	if err := json.Unmarshal(rec.Body.Bytes(), &tei); err != nil || len(tei) != 1 || math.Abs(tei[0].Score-(math.Log(0.1)-math.Log(0.9))) > 1e-12 {
		t.Errorf("raw_scores: %d %s", rec.Code, rec.Body)
	}
	status, out = do(t, h, "POST", "/v1/rerank", `{"query":"q","documents":["a"],"truncate":true}`)
	if status != 400 {
		t.Errorf("truncate with a reranker: %d", status)
	}
	checkError(t, out, "truncate", "reranker")

	// multivector has no meaning for a reranker: refused, not ignored.
	status, out = do(t, h, "POST", "/v1/rerank", `{"query":"q","documents":["a"],"multivector":true}`)
	if status != 400 {
		t.Errorf("multivector with a reranker: %d", status)
	}
	checkError(t, out, "multivector", "reranker")

	// Not a reranker by its info: embeddings, Rerank never called.
	f.calls, f.reranker = nil, false
	if status, _ := do(t, h, "POST", "/v1/rerank", `{"query":"q","documents":["a","b"]}`); status != 200 || len(f.calls) != 0 {
		t.Errorf("embedding model: %d, %d Rerank calls", status, len(f.calls))
	}

	// Says reranker, then reports ErrNotReranker: falls back to embeddings.
	f.reranker, f.err = true, fmt.Errorf("engine: m: %w", engine.ErrNotReranker)
	status, out = do(t, h, "POST", "/v1/rerank", `{"query":"q","documents":["a","b"]}`)
	if status != 200 || len(out["results"].([]any)) != 2 {
		t.Errorf("ErrNotReranker fallback: %d %v", status, out)
	}
	// Any other failure is the request's error.
	f.err = errors.New("boom")
	if status, _ := do(t, h, "POST", "/v1/rerank", `{"query":"q","documents":["a"]}`); status != 500 {
		t.Errorf("reranker failure: %d", status)
	}
}

// TestRerankDocumentLimit: the documented limit, engine.MaxRerankDocuments,
// holds whatever MaxInputs allows; one more is a 400 naming the field.
func TestRerankDocumentLimit(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{MaxInputs: 4096})
	docs := func(n int) string {
		return `["` + strings.Repeat(`d","`, n-1) + `d"]`
	}
	n := engine.MaxRerankDocuments
	for _, c := range []struct {
		path, body string
		status     int
		param      string
	}{
		{"/v1/rerank", `{"query":"q","documents":` + docs(n) + `}`, 200, ""},
		{"/v1/rerank", `{"query":"q","documents":` + docs(n+1) + `}`, 400, "documents"},
		{"/v1/score", `{"text_1":"q","text_2":` + docs(n+1) + `}`, 400, "text_2"},
	} {
		status, out := do(t, h, "POST", c.path, c.body)
		if status != c.status {
			t.Errorf("%s with %d bytes: %d, want %d", c.path, len(c.body), status, c.status)
			continue
		}
		if c.param != "" {
			checkError(t, out, c.param, fmt.Sprint(n))
		}
	}
}

// TestOpenAPIRequestFields: each request schema of /openapi.json lists
// exactly the JSON fields its handler decodes.
func TestOpenAPIRequestFields(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	schemas := h.openapiDoc()["components"].(map[string]any)["schemas"].(map[string]any)
	for name, v := range map[string]any{
		"EmbeddingsRequest":       embeddingsRequest{},
		"OllamaEmbedRequest":      ollamaEmbedRequest{},
		"OllamaEmbeddingsRequest": ollamaEmbeddingsRequest{},
		"TEIRequest":              teiRequest{},
		"RerankRequest":           rerankRequest{},
		"ScoreRequest":            scoreRequest{},
		"CohereEmbedRequest":      cohereEmbedRequest{},
		"CohereRerankRequest":     cohereRerankRequest{},
	} {
		var fields []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields = append(fields, tag)
		}
		var documented []string
		for p := range schemas[name].(map[string]any)["properties"].(map[string]any) {
			documented = append(documented, p)
		}
		slices.Sort(fields)
		slices.Sort(documented)
		if !slices.Equal(fields, documented) {
			t.Errorf("%s documents %v, the handler reads %v", name, documented, fields)
		}
	}
}

// TestEmbeddingFieldsOverHTTP: fields that change what is computed are
// applied or refused on the demo model, never ignored.
func TestEmbeddingFieldsOverHTTP(t *testing.T) {
	url := tinyServer(t)
	status, body := post(t, url+"/v1/embeddings", `{"input":"a","return_multivector":true,"dimensions":16}`)
	if status != 400 || !strings.Contains(body, `"param":"dimensions"`) {
		t.Errorf("dimensions with return_multivector: %d %s", status, body)
	}

	// pool_factor and the encoding reach /pooling as /v1/embeddings.
	img := testImage(t)
	req := `{"input":["several words of text here",{"image":"` + img + `"}],"return_multivector":true,"pool_factor":2,"encoding_format":"base64"}`
	var emb struct {
		Data []struct{ Embeddings []string }
	}
	call(t, url+"/v1/embeddings", req, &emb)
	var pool struct {
		Data []struct{ Data []string }
	}
	call(t, url+"/pooling", req, &pool)
	for i := range emb.Data {
		if !slices.Equal(emb.Data[i].Embeddings, pool.Data[i].Data) || len(emb.Data[i].Embeddings) == 0 {
			t.Errorf("/pooling input %d: %d rows, /v1/embeddings %d", i, len(pool.Data[i].Data), len(emb.Data[i].Embeddings))
		}
	}

	var rr struct{ Results []struct{ Index int } }
	call(t, url+"/v2/rerank", `{"query":"q","documents":["a","b c"]}`, &rr)
	if len(rr.Results) != 2 {
		t.Errorf("/v2/rerank: %+v", rr)
	}

	// vLLM's multimodal documents: each content part is one document.
	type ranked struct {
		Results []struct {
			Index          int
			RelevanceScore float64 `json:"relevance_score"`
		}
	}
	var list, parts ranked
	call(t, url+"/v1/rerank", `{"query":"q","documents":["a",{"image":"`+img+`"}]}`, &list)
	call(t, url+"/rerank", `{"query":"q","documents":{"content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,`+img+`"}}]}}`, &parts)
	if fmt.Sprint(list) != fmt.Sprint(parts) || len(parts.Results) != 2 {
		t.Errorf("documents as content parts: %+v, as a list: %+v", parts, list)
	}
	// text-embeddings-inference's form of /rerank: texts in, a bare list
	// of {index, score, text} out, scored as the documents are.
	var teiOut []struct {
		Index int
		Score float64
		Text  any
	}
	call(t, url+"/rerank", `{"query":"q","texts":["a",{"image":"`+img+`"}],"return_text":true}`, &teiOut)
	if len(teiOut) != 2 || teiOut[0].Score < teiOut[1].Score {
		t.Fatalf("TEI rerank: %+v", teiOut)
	}
	for i, r := range teiOut {
		if r.Index != list.Results[i].Index || r.Score != list.Results[i].RelevanceScore {
			t.Errorf("TEI rerank %d: %+v, Jina's %+v", i, r, list.Results[i])
		}
		if r.Index == 0 && r.Text != "a" {
			t.Errorf("TEI text of document 0: %v", r.Text)
		}
	}
	// vLLM's top_n 0 means every document.
	var all ranked
	call(t, url+"/v1/rerank", `{"query":"q","documents":["a","b","c"],"top_n":0}`, &all)
	if len(all.Results) != 3 {
		t.Errorf("top_n 0: %d results", len(all.Results))
	}
	for _, b := range []string{`{"query":"q","documents":{"text":"a"}}`, `{"query":"q","documents":"a"}`} {
		if status, body := post(t, url+"/v1/rerank", b); status != 400 || !strings.Contains(body, `"param":"documents"`) {
			t.Errorf("%s: %d %s", b, status, body)
		}
	}
}

// TestTruncateOverHTTP: a text over the model's limit is refused unless
// the request truncates (Jina's truncate, TEI's truncate, Ollama's
// default), and every truncating form gives the same vector.
func TestTruncateOverHTTP(t *testing.T) {
	m, err := synth.WriteDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, url := serveEngine(t, engine.Config{Model: m.LM, MMProj: m.MMProj, MaxTokens: 48})
	long := strings.Repeat("word ", 200)
	if status, body := post(t, url+"/v1/embeddings", `{"input":"`+long+`"}`); status != 400 || !strings.Contains(body, "truncate") {
		t.Errorf("without truncate: %d %s", status, body)
	}
	want := vectors(reference(t, url, `{"input":"`+long+`","truncate":true}`))
	var ollama struct{ Embeddings [][]float32 }
	call(t, url+"/api/embed", `{"input":"`+long+`"}`, &ollama)
	sameVectors(t, "ollama default truncate", ollama.Embeddings, want)
	var tei [][]float32
	call(t, url+"/embed", `{"inputs":"`+long+`","truncate":true}`, &tei)
	sameVectors(t, "TEI truncate", tei, want)
	if status, _ := post(t, url+"/api/embed", `{"input":"`+long+`","truncate":false}`); status != 400 {
		t.Errorf("ollama truncate false: %d", status)
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOpenAPIResponses: every route with a documented answer answers a
// sample request with fields its schema names (at the top level and in
// list items), the required ones present; the model card's schema lists
// exactly its fields; errors match the Error schema.
func TestOpenAPIResponses(t *testing.T) {
	url := tinyServer(t)
	h := newTestHandler(&fakeEmbedder{}, Options{})
	schemas := h.openapiDoc()["components"].(map[string]any)["schemas"].(map[string]any)
	img := testImage(t)
	samples := map[string]string{
		"POST /v1/embeddings":  `{"input":["a",{"image":"` + img + `"}],"per_span":true}`,
		"POST /embeddings":     `{"input":"a","return_multivector":true}`,
		"POST /pooling":        `{"input":"a"}`,
		"GET /v1/models":       "",
		"GET /v1/models/{id}":  "",
		"GET /health":          "",
		"POST /api/embed":      `{"input":"a"}`,
		"POST /api/embeddings": `{"prompt":"a"}`,
		"POST /embed":          `{"inputs":"a"}`,
		"POST /embed_all":      `{"inputs":"a"}`,
		"GET /info":            "",
		"POST /v1/rerank":      `{"query":"q","documents":["a","b"]}`,
		"POST /rerank":         `{"query":"q","texts":["a","b"],"return_text":true}`,
		"POST /v2/rerank":      `{"model":"m","query":"q","documents":["a","b"],"top_n":1}`,
		"POST /v2/embed":       `{"model":"m","texts":["a","b"],"input_type":"search_document","embedding_types":["float","int8","uint8","binary","ubinary","base64"]}`,
		"POST /v1/score":       `{"text_1":"q","text_2":["a","b"]}`,
		"POST /score":          `{"text_1":["q","r"],"text_2":["a","b"]}`,
	}
	if len(samples) != len(responseDocs) {
		t.Fatalf("%d samples for %d documented answers", len(samples), len(responseDocs))
	}
	for route, body := range samples {
		method, path, _ := strings.Cut(route, " ")
		path = strings.Replace(path, "{id}", tiny.eng.Info().Name, 1)
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer any
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %d %v", route, resp.StatusCode, err)
			continue
		}
		if msg := conforms(schemas, schemas[responseDocs[route]].(map[string]any), answer, 2); msg != "" {
			t.Errorf("%s: %s", route, msg)
		}
	}
	var card []string
	for p := range schemas["Model"].(map[string]any)["properties"].(map[string]any) {
		card = append(card, p)
	}
	var fields []string
	typ := reflect.TypeOf(modelCard{})
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields = append(fields, tag)
	}
	slices.Sort(card)
	slices.Sort(fields)
	if !slices.Equal(card, fields) {
		t.Errorf("Model schema %v, card fields %v", card, fields)
	}
	status, body := post(t, url+"/v1/embeddings", `{"input":""}`)
	var e any
	json.Unmarshal([]byte(body), &e)
	if msg := conforms(schemas, schemas["Error"].(map[string]any), e, 2); status != 400 || msg != "" {
		t.Errorf("error answer %d: %s", status, msg)
	}
}

// conforms checks v against a schema's types, property names and required
// properties, depth levels deep; it returns what does not match.
func conforms(all, schema map[string]any, v any, depth int) string {
	if ref, ok := schema["$ref"].(string); ok {
		schema = all[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		var msgs []string
		for _, a := range alts {
			msg := conforms(all, a.(map[string]any), v, depth)
			if msg == "" {
				return ""
			}
			msgs = append(msgs, msg)
		}
		return strings.Join(msgs, "; or ")
	}
	switch schema["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("%T where an object is documented", v)
		}
		props, _ := schema["properties"].(map[string]any)
		for k, sub := range m {
			p, ok := props[k]
			if !ok {
				return fmt.Sprintf("field %q is not documented", k)
			}
			if depth > 0 {
				if msg := conforms(all, p.(map[string]any), sub, depth-1); msg != "" {
					return k + ": " + msg
				}
			}
		}
		req, _ := schema["required"].([]string)
		for _, k := range req {
			if _, ok := m[k]; !ok {
				return fmt.Sprintf("required field %q missing", k)
			}
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%T where an array is documented", v)
		}
		if items, ok := schema["items"].(map[string]any); ok && depth > 0 {
			for i, it := range l {
				if msg := conforms(all, items, it, depth-1); msg != "" {
					return fmt.Sprintf("[%d]: %s", i, msg)
				}
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Sprintf("%T where a string is documented", v)
		}
	case "integer", "number":
		if _, ok := v.(float64); !ok {
			return fmt.Sprintf("%T where a number is documented", v)
		}
	}
	return ""
}
