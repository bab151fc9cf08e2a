package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/synth"
)

var tiny struct {
	once sync.Once
	eng  *engine.Engine
	lm   string // the demo model's language model file
	dir  string
	err  error
}

// tinyServer serves the demo (tiny, random-weight) model with a
// multi-vector projector over real HTTP on 127.0.0.1.
func tinyServer(t *testing.T) string {
	t.Helper()
	tiny.once.Do(func() {
		if tiny.dir, tiny.err = os.MkdirTemp("", "vembed-server-test-"); tiny.err != nil {
			return
		}
		m, err := synth.WriteDemo(tiny.dir)
		if err != nil {
			tiny.err = err
			return
		}
		tiny.lm = m.LM
		tiny.eng, tiny.err = engine.New(engine.Config{Model: m.LM, MMProj: m.MMProj, MVProj: m.MVProj})
	})
	if tiny.err != nil {
		t.Fatal(tiny.err)
	}
	srv := httptest.NewServer(New(tiny.eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tiny.eng != nil {
		tiny.eng.Close()
	}
	if tiny.dir != "" {
		os.RemoveAll(tiny.dir)
	}
	os.Exit(code)
}

func call(t *testing.T, url, body string, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v: %s", url, err, b)
	}
}

type openAIOut struct {
	Data []struct {
		Embedding  []float32   `json:"embedding"`
		Embeddings [][]float32 `json:"embeddings"`
	} `json:"data"`
}

// reference returns /v1/embeddings vectors for a request body.
func reference(t *testing.T, url, body string) openAIOut {
	var o openAIOut
	call(t, url+"/v1/embeddings", body, &o)
	return o
}

func testImage(t *testing.T) string {
	img := image.NewRGBA(image.Rect(0, 0, 56, 42))
	for y := range 42 {
		for x := range 56 {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 6), uint8(x ^ y), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func sameVectors(t *testing.T, name string, got, want [][]float32) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) == 0 {
		t.Errorf("%s: vectors differ from /v1/embeddings\n got %.120v\nwant %.120v", name, got, want)
	}
}

func vectors(o openAIOut) [][]float32 {
	var vs [][]float32
	for _, d := range o.Data {
		vs = append(vs, d.Embedding)
	}
	return vs
}

// TestCompatShapes: every other API's form gives the vectors
// /v1/embeddings gives for the same inputs.
func TestCompatShapes(t *testing.T) {
	url := tinyServer(t)
	img := testImage(t)
	want := vectors(reference(t, url, `{"input":["alpha","beta gamma"]}`))

	var ollama struct{ Embeddings [][]float32 }
	call(t, url+"/api/embed", `{"model":"m","input":["alpha","beta gamma"]}`, &ollama)
	sameVectors(t, "ollama /api/embed", ollama.Embeddings, want)

	var legacy struct{ Embedding []float32 }
	call(t, url+"/api/embeddings", `{"model":"m","prompt":"alpha"}`, &legacy)
	sameVectors(t, "ollama /api/embeddings", [][]float32{legacy.Embedding}, want[:1])

	var tei [][]float32
	call(t, url+"/embed", `{"inputs":["alpha","beta gamma"]}`, &tei)
	sameVectors(t, "TEI /embed", tei, want)

	var teiAll [][][]float32
	call(t, url+"/embed_all", `{"inputs":"alpha"}`, &teiAll)
	mv := reference(t, url, `{"input":"alpha","return_multivector":true}`)
	sameVectors(t, "TEI /embed_all", teiAll[0], mv.Data[0].Embeddings)

	wantImg := vectors(reference(t, url, `{"input":[{"image":"`+img+`"}]}`))
	infinity := vectors(reference(t, url, `{"input":["`+img+`"],"modality":"image"}`))
	sameVectors(t, "Infinity modality image", infinity, wantImg)

	wantMixed := vectors(reference(t, url, `{"input":[{"content":[{"text":"look"},{"image":"`+img+`"}]}]}`))
	chat := vectors(reference(t, url, `{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,`+img+`"}}]}]}`))
	sameVectors(t, "vLLM messages", chat, wantMixed)

	var pool struct {
		Data []struct {
			Object string    `json:"object"`
			Data   []float32 `json:"data"`
		}
	}
	call(t, url+"/pooling", `{"input":["alpha","beta gamma"]}`, &pool)
	var pooled [][]float32
	for _, d := range pool.Data {
		pooled = append(pooled, d.Data)
	}
	sameVectors(t, "vLLM /pooling", pooled, want)

	var info map[string]any
	resp, err := http.Get(url + "/info")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if info["model_id"] == nil || info["max_input_length"] == nil {
		t.Errorf("TEI /info: %v", info)
	}
	name := tiny.eng.Info().Name
	for id, code := range map[string]int{name: 200, "other-model": 404} {
		resp, err := http.Get(url + "/v1/models/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("/v1/models/%s: %d, want %d", id, resp.StatusCode, code)
		}
	}
}

// TestRerankAndScore: rerank and score rank documents by the cosine of the
// /v1/embeddings vectors (query task for the query, passage task for the
// documents), and by MaxSim of the returned multi-vectors.
func TestRerankAndScore(t *testing.T) {
	url := tinyServer(t)
	img := testImage(t)
	docs := []string{`"the first document"`, `"another text entirely"`, `{"image":"` + img + `"}`, `"short"`}
	q := reference(t, url, `{"input":"which one?","task":"retrieval.query"}`)
	d := reference(t, url, fmt.Sprintf(`{"input":[%s,%s,%s,%s],"task":"retrieval.passage"}`, docs[0], docs[1], docs[2], docs[3]))
	qm := reference(t, url, `{"input":"which one?","task":"retrieval.query","return_multivector":true}`)
	dm := reference(t, url, fmt.Sprintf(`{"input":[%s,%s,%s,%s],"task":"retrieval.passage","return_multivector":true}`, docs[0], docs[1], docs[2], docs[3]))

	for _, multi := range []bool{false, true} {
		want := make([]float64, len(docs))
		for i := range docs {
			if multi {
				want[i] = bruteMaxSim(qm.Data[0].Embeddings, dm.Data[i].Embeddings)
			} else {
				want[i] = dot(q.Data[0].Embedding, d.Data[i].Embedding)
			}
		}
		var rr struct {
			Results []struct {
				Index          int
				RelevanceScore float64 `json:"relevance_score"`
				Document       any
			}
		}
		call(t, url+"/v1/rerank", fmt.Sprintf(`{"query":"which one?","documents":[%s,%s,%s,%s],"top_n":3,"multivector":%v}`, docs[0], docs[1], docs[2], docs[3], multi), &rr)
		if len(rr.Results) != 3 {
			t.Fatalf("top_n 3: %d results", len(rr.Results))
		}
		for k, res := range rr.Results {
			if math.Abs(res.RelevanceScore-want[res.Index]) > 1e-9 {
				t.Errorf("multivector=%v: document %d scored %v, want %v", multi, res.Index, res.RelevanceScore, want[res.Index])
			}
			if k > 0 && res.RelevanceScore > rr.Results[k-1].RelevanceScore {
				t.Errorf("results not sorted: %v", rr.Results)
			}
			if res.Document == nil {
				t.Errorf("no document in result %d", k)
			}
		}
		var sc struct {
			Data []struct {
				Index int
				Score float64
			}
		}
		call(t, url+"/score", fmt.Sprintf(`{"text_1":"which one?","text_2":[%s,%s,%s,%s],"multivector":%v}`, docs[0], docs[1], docs[2], docs[3], multi), &sc)
		for _, s := range sc.Data {
			if math.Abs(s.Score-want[s.Index]) > 1e-9 {
				t.Errorf("score multivector=%v: %d = %v, want %v", multi, s.Index, s.Score, want[s.Index])
			}
		}
	}
}

// bruteMaxSim is MaxSim written out with no shared code.
func bruteMaxSim(q, d [][]float32) float64 {
	total := 0.0
	for _, qv := range q {
		best := math.Inf(-1)
		for _, dv := range d {
			s := 0.0
			for k := range qv {
				s += float64(qv[k]) * float64(dv[k])
			}
			if s > best {
				best = s
			}
		}
		total += best
	}
	return total
}

func TestRerankBounds(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{MaxInputs: 10})
	for _, c := range []struct{ body, param string }{
		{`{"query":"q","documents":[]}`, "documents"},
		{`{"query":"q"}`, "documents"},
		{`{"query":"q","documents":["a","b","c","d","e","f","g","h","i","j","k"]}`, "documents"},
		{`{"query":"q","documents":["a"],"top_n":-1}`, "top_n"},
		{`{"query":"q","documents":["a"],"texts":["a"]}`, "texts"},
		{`{"documents":["a"]}`, "query"},
		{`{"query":["a","b"],"documents":["a"]}`, "query"},
	} {
		status, out := do(t, h, "POST", "/v1/rerank", c.body)
		if status != 400 {
			t.Errorf("%s: status %d", c.body, status)
			continue
		}
		checkError(t, out, c.param, "")
	}
}

// FuzzRoutes sends arbitrary bodies to every registered POST route: each
// answer is a JSON body with a 200 or 4xx status, never a crash or a 5xx.
func FuzzRoutes(f *testing.F) {
	for i, s := range []string{`{"input":"a"}`, `{"model":"m","input":["a","b"]}`, `{"prompt":"x"}`, `{"inputs":"a"}`,
		`{"messages":[{"role":"user","content":"a"}]}`, `{"input":["AAAA"],"modality":"image"}`, `{"query":"q","documents":["a",{"text":"b"}],"top_n":1}`,
		`{"text_1":"a","text_2":["b","c"]}`, `{"text_1":["a","b"],"text_2":["b"]}`, `{"input":"\ud800"}`, `[]`, `null`, `{"input":"a","return_multivector":true,"pool_factor":2,"encoding_format":"base64"}`,
		`{"query":"q","documents":["a"],"instruction":"i","multivector":true}`, `{"model":"m","input":"x","truncate":false}`,
		`{"query":"q","texts":["a","b"],"return_text":true,"raw_scores":true}`, `{"query":"q","documents":{"content":[{"type":"text","text":"a"}]},"top_n":0}`} {
		f.Add(uint8(i), []byte(s))
	}
	h := newTestHandler(&fakeEmbedder{}, Options{})
	var routes []string
	for _, r := range h.routes {
		if p, ok := strings.CutPrefix(r, "POST "); ok {
			routes = append(routes, p)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		if rec.Code >= 500 || (rec.Code != 200 && rec.Code/100 != 4) {
			t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: answer is not JSON: %q", path, body, rec.Body.Bytes())
		}
	})
}

// TestOpenAPICoversRoutes: /openapi.json documents exactly the registered
// routes, each with a summary.
func TestOpenAPICoversRoutes(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: %v %.200s", err, rec.Body.String())
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			route := strings.ToUpper(method) + " " + path
			documented[route] = true
			if s, _ := op["summary"].(string); s == "" {
				t.Errorf("%s has no summary", route)
			}
		}
	}
	for _, r := range h.routes {
		if !documented[r] {
			t.Errorf("route %s is not in /openapi.json", r)
		}
		delete(documented, r)
	}
	for r := range documented {
		t.Errorf("/openapi.json documents %s, which is not a route", r)
	}
	for r := range routeDocs {
		if !slices.Contains(h.routes, r) {
			t.Errorf("routeDocs describes %s, which is not registered", r)
		}
	}
}

// TestPoolFactor: pool_factor clusters each input's multi-vectors as
// heads.PoolTokens does on the vectors /v1/embeddings returns unpooled.
func TestPoolFactor(t *testing.T) {
	url := tinyServer(t)
	img := testImage(t)
	body := `{"input":["a longer text with several tokens in it",{"image":"` + img + `"}],"return_multivector":true%s}`
	full := reference(t, url, fmt.Sprintf(body, ""))
	pooled := reference(t, url, fmt.Sprintf(body, `,"pool_factor":3`))
	for i := range full.Data {
		want := heads.PoolTokens(full.Data[i].Embeddings, 3)
		if len(want) != max(len(full.Data[i].Embeddings)/3, 1) {
			t.Fatalf("input %d: %d rows pooled to %d", i, len(full.Data[i].Embeddings), len(want))
		}
		sameVectors(t, fmt.Sprintf("pooled input %d", i), pooled.Data[i].Embeddings, want)
	}
	h := newTestHandler(&fakeEmbedder{}, Options{})
	for _, b := range []string{`{"input":"a","pool_factor":2}`, `{"input":"a","return_multivector":true,"pool_factor":-1}`} {
		status, out := do(t, h, "POST", "/v1/embeddings", b)
		if status != 400 {
			t.Errorf("%s: %d", b, status)
			continue
		}
		checkError(t, out, "pool_factor", "")
	}
}

// TestEmbeddingTypeList: Jina's list of embedding types gives each vector
// in every type asked, equal to asking for each alone.
func TestEmbeddingTypeList(t *testing.T) {
	url := tinyServer(t)
	var both struct {
		Data []struct {
			Embedding map[string]json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	call(t, url+"/v1/embeddings", `{"input":["alpha","beta"],"embedding_type":["float","ubinary","base64"]}`, &both)
	for _, typ := range []string{"float", "ubinary", "base64"} {
		var one struct {
			Data []struct {
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		call(t, url+"/v1/embeddings", `{"input":["alpha","beta"],"embedding_type":"`+typ+`"}`, &one)
		for i := range one.Data {
			if string(both.Data[i].Embedding[typ]) != string(one.Data[i].Embedding) {
				t.Errorf("%s of input %d differs from asking for %s alone", typ, i, typ)
			}
		}
	}
	h := newTestHandler(&fakeEmbedder{}, Options{})
	for _, b := range []string{`{"input":"a","embedding_type":[]}`, `{"input":"a","embedding_type":["float","int4"]}`,
		`{"input":"a","embedding_type":["float"],"encoding_format":"base64"}`} {
		if status, _ := do(t, h, "POST", "/v1/embeddings", b); status != 400 {
			t.Errorf("%s: %d", b, status)
		}
	}
}

// TestPixelBoundsOverHTTP: min_pixels or max_pixels outside the model's
// image budget (as /v1/models reports it) is a 400 naming that budget;
// within it the request is served.
func TestPixelBoundsOverHTTP(t *testing.T) {
	url := tinyServer(t)
	lo, hi := tiny.eng.Info().MinPixels, tiny.eng.Info().MaxPixels
	img := testImage(t)
	post := func(extra string) (int, string) {
		body := `{"input":[{"image":"` + img + `"}]` + extra + `}`
		resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bounds := fmt.Sprintf("%d..%d", lo, hi)
	for _, extra := range []string{
		fmt.Sprintf(`,"min_pixels":%d`, lo-1),
		fmt.Sprintf(`,"min_pixels":%d`, hi+1),
		fmt.Sprintf(`,"max_pixels":%d`, lo-1),
		fmt.Sprintf(`,"max_pixels":%d`, hi+1),
	} {
		if code, msg := post(extra); code != 400 || !strings.Contains(msg, bounds) {
			t.Errorf("%s: %d %s; want 400 naming %s", extra, code, msg, bounds)
		}
	}
	if code, msg := post(fmt.Sprintf(`,"min_pixels":%d,"max_pixels":%d`, lo, 4*lo)); code != 200 {
		t.Errorf("a budget within %s: %d %s", bounds, code, msg)
	}
}
