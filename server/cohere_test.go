package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/tokenizer"
)

// cohereEmbedOut is the part of a /v2/embed answer the tests read.
type cohereEmbedOut struct {
	ID         string                       `json:"id"`
	Type       string                       `json:"response_type"`
	Embeddings map[string][]json.RawMessage `json:"embeddings"`
	Texts      []string                     `json:"texts"`
	Meta       struct {
		APIVersion  map[string]string `json:"api_version"`
		BilledUnits map[string]int    `json:"billed_units"`
	} `json:"meta"`
}

var cohereTypeNames = []string{"float", "int8", "uint8", "binary", "ubinary", "base64"}

// wantEncoding derives an encoding of a float vector as this test reads
// the documented rules (independently of the server's code).
func wantEncoding(t *testing.T, v []float32, typ string) string {
	t.Helper()
	var out any
	switch typ {
	case "float":
		out = v
	case "base64":
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		out = base64.StdEncoding.EncodeToString(b)
	case "int8", "uint8":
		var m float64
		for _, x := range v {
			m = max(m, math.Abs(float64(x)))
		}
		q := make([]int, len(v))
		for i, x := range v {
			q[i] = int(math.Round(float64(x) * 127 / m))
			if typ == "uint8" {
				q[i] += 128
			}
		}
		out = q
	case "binary", "ubinary":
		q := make([]int, (len(v)+7)/8)
		for i, x := range v {
			if x > 0 {
				q[i/8] += 1 << (7 - i%8)
			}
		}
		if typ == "binary" {
			for i := range q {
				q[i] -= 128
			}
		}
		out = q
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// TestCohereEmbedMatchesV1: every input form and input type of /v2/embed
// gives, in every embedding type, the /v1/embeddings vector of the same
// inputs with the task the type maps to, encoded by the documented rules.
func TestCohereEmbedMatchesV1(t *testing.T) {
	url := tinyServer(t)
	img := testImage(t)
	types := `["float","int8","uint8","binary","ubinary","base64"]`
	for _, c := range []struct {
		name, v2, v1 string
	}{
		{"texts query", `"texts":["alpha","beta gamma"],"input_type":"search_query"`, `"input":["alpha","beta gamma"],"task":"retrieval.query"`},
		{"texts document", `"texts":["alpha","beta gamma"],"input_type":"search_document"`, `"input":["alpha","beta gamma"],"task":"retrieval.passage"`},
		{"texts classification", `"texts":["alpha"],"input_type":"classification"`, `"input":["alpha"],"task":"text-matching"`},
		{"texts clustering", `"texts":["alpha"],"input_type":"clustering"`, `"input":["alpha"],"task":"text-matching"`},
		{"texts default", `"texts":["alpha"]`, `"input":["alpha"]`},
		{"images", `"images":["data:image/png;base64,` + img + `"],"input_type":"image"`, `"input":[{"image":"` + img + `"}],"task":"retrieval.passage"`},
		{"inputs", `"inputs":[{"content":[{"type":"text","text":"figure 3:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + img + `"}}]},{"content":[{"type":"text","text":"alpha"}]}],"input_type":"search_document"`,
			`"input":[{"content":[{"text":"figure 3:"},{"image":"` + img + `"}]},"alpha"],"task":"retrieval.passage"`},
	} {
		for _, dims := range []string{"", `,"output_dimension":20`} {
			var got cohereEmbedOut
			call(t, url+"/v2/embed", `{"model":"m",`+c.v2+`,"embedding_types":`+types+dims+`}`, &got)
			want := vectors(reference(t, url, `{`+c.v1+strings.Replace(dims, "output_dimension", "dimensions", 1)+`}`))
			if got.Type != "embeddings_by_type" || got.ID == "" || got.Meta.APIVersion["version"] != "2" || got.Meta.BilledUnits["input_tokens"] <= 0 {
				t.Errorf("%s: answer's envelope %+v", c.name, got)
			}
			for _, typ := range cohereTypeNames {
				if len(got.Embeddings[typ]) != len(want) {
					t.Fatalf("%s%s: %d %s vectors for %d inputs", c.name, dims, len(got.Embeddings[typ]), typ, len(want))
				}
				for i, w := range want {
					if g, wv := string(got.Embeddings[typ][i]), wantEncoding(t, w, typ); g != wv {
						t.Errorf("%s%s: %s of input %d\n got %.200s\nwant %.200s", c.name, dims, typ, i, g, wv)
					}
				}
			}
		}
	}
	// /v1/embeddings gives the same encodings through Jina's list of
	// embedding types.
	var v1 struct {
		Data []struct {
			Embedding map[string]json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	call(t, url+"/v1/embeddings", `{"input":["alpha","beta gamma"],"dimensions":24,"embedding_type":`+types+`}`, &v1)
	floats := vectors(reference(t, url, `{"input":["alpha","beta gamma"],"dimensions":24}`))
	for i, d := range v1.Data {
		for _, typ := range cohereTypeNames {
			if g, w := string(d.Embedding[typ]), wantEncoding(t, floats[i], typ); g != w {
				t.Errorf("/v1/embeddings %s of input %d\n got %.200s\nwant %.200s", typ, i, g, w)
			}
		}
	}
	var got cohereEmbedOut
	call(t, url+"/v2/embed", `{"model":"m","texts":["a","b"],"input_type":"search_query"}`, &got)
	if !slices.Equal(got.Texts, []string{"a", "b"}) || len(got.Embeddings) != 1 || got.Embeddings["float"] == nil {
		t.Errorf("default embedding types: %v, texts %v", got.Embeddings, got.Texts)
	}
}

// TestCohereEmbedTruncation: truncate END (the default) cuts a long text
// to max_tokens, NONE refuses it.
func TestCohereEmbedTruncation(t *testing.T) {
	url := tinyServer(t)
	long := strings.Repeat("word ", 200)
	var got cohereEmbedOut
	call(t, url+"/v2/embed", `{"model":"m","texts":["`+long+`","`+long+`"],"input_type":"search_document","max_tokens":16}`, &got)
	if n := got.Meta.BilledUnits["input_tokens"]; n != 32 {
		t.Errorf("two texts cut to 16 tokens: %d tokens billed", n)
	}
	for _, c := range []struct{ body, param, msg string }{
		{`"truncate":"NONE","max_tokens":16`, "texts[0]", "over the limit of 16 tokens"},
		{`"truncate":"MIDDLE"`, "truncate", "NONE, START or END"},
		{`"max_tokens":0`, "max_tokens", "positive"},
	} {
		status, body := post(t, url+"/v2/embed", `{"model":"m","texts":["`+long+`"],"input_type":"search_document",`+c.body+`}`)
		if status != 400 || !strings.Contains(body, `"param":"`+c.param+`"`) || !strings.Contains(body, c.msg) {
			t.Errorf("%s: %d %s", c.body, status, body)
		}
	}
}

// TestCohereEmbedTruncateStart: truncate START gives the vector
// /v1/embeddings gives of the text with its first tokens dropped (found
// here through the model's tokenizer: the fewest dropped tokens whose
// prompt fits max_tokens), with the model's prompt prefix kept; an input
// whose prompt cannot fit even without its text is refused.
func TestCohereEmbedTruncateStart(t *testing.T) {
	url := tinyServer(t)
	f, err := gguf.Open(tiny.lm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 12
	for _, text := range []string{
		strings.Repeat("word ", 30) + "the end",
		"début " + strings.Repeat("ünïcödé ", 20) + "fin",
		"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho",
	} {
		ids := tok.Encode(text, true)
		var got cohereEmbedOut
		call(t, url+"/v2/embed", `{"texts":[`+jsonString(text)+`],"input_type":"search_query","truncate":"START","max_tokens":`+fmt.Sprint(limit)+`}`, &got)
		if n := got.Meta.BilledUnits["input_tokens"]; n > limit {
			t.Errorf("%.20q: %d tokens billed, over max_tokens %d", text, n, limit)
		}
		found := -1
		for drop := 1; drop < len(ids) && found < 0; drop++ {
			rest, err := tok.Decode(ids[drop:])
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(rest) {
				continue // the first kept token ends a character
			}
			var v1 struct {
				openAIOut
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			status, body := post(t, url+"/v1/embeddings", `{"input":[`+jsonString(rest)+`],"task":"retrieval.query"}`)
			if status != 200 {
				t.Fatalf("%d %s", status, body)
			}
			if err := json.Unmarshal([]byte(body), &v1); err != nil {
				t.Fatal(err)
			}
			if v1.Usage.PromptTokens > limit {
				continue
			}
			found = drop
			if g, w := string(got.Embeddings["float"][0]), wantEncoding(t, v1.Data[0].Embedding, "float"); g != w {
				t.Errorf("%.20q: START vector is not /v1/embeddings of %q (the first prompt that fits)\n got %.120s\nwant %.120s", text, rest, g, w)
			}
			if n := got.Meta.BilledUnits["input_tokens"]; n != v1.Usage.PromptTokens {
				t.Errorf("%.20q: %d tokens billed, /v1/embeddings of %q counts %d", text, n, rest, v1.Usage.PromptTokens)
			}
		}
		if found < 0 {
			t.Errorf("%.20q: no suffix of its tokens fits %d tokens", text, limit)
		}
		// END keeps the start: another vector.
		var end cohereEmbedOut
		call(t, url+"/v2/embed", `{"texts":[`+jsonString(text)+`],"input_type":"search_query","max_tokens":`+fmt.Sprint(limit)+`}`, &end)
		if string(end.Embeddings["float"][0]) == string(got.Embeddings["float"][0]) {
			t.Errorf("%.20q: END and START give the same vector", text)
		}
	}
	// A text too long for the byte pre-check is cut from its start too.
	huge := strings.Repeat("x", 3<<20) + " tail words"
	status, body := post(t, url+"/v2/embed", `{"texts":["`+huge+`"],"truncate":"START"}`)
	if status != 200 {
		t.Errorf("a 3 MB text with START: %d %.300s", status, body)
	}
	// "Query: " alone is over 2 tokens.
	status, body = post(t, url+"/v2/embed", `{"texts":["some words here"],"truncate":"START","max_tokens":2}`)
	if status != 400 || !strings.Contains(body, "does not make it fit") {
		t.Errorf("max_tokens below the prompt prefix: %d %s", status, body)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestCohereEmbedRefusals: what /v2/embed cannot honour is a 400 naming
// the field.
func TestCohereEmbedRefusals(t *testing.T) {
	url := tinyServer(t)
	for _, c := range []struct{ body, param string }{
		{`{"texts":["a"],"images":["data:image/png;base64,AAAA"]}`, "texts"},
		{`{"model":"m"}`, "texts"},
		{`{"texts":[]}`, "texts"},
		{`{"texts":[""]}`, "texts[0]"},
		{`{"texts":["a"],"input_type":"search"}`, "input_type"},
		{`{"texts":["a"],"embedding_types":[]}`, "embedding_types"},
		{`{"texts":["a"],"embedding_types":["int4"]}`, "embedding_types"},
		{`{"texts":["a"],"output_dimension":0}`, "output_dimension"},
		{`{"texts":["a"],"output_dimension":100000}`, "dimensions"},
		{`{"texts":["a"],"embedding_type":"int8"}`, "embedding_type"},
		{`{"inputs":[{"content":[{"type":"text","text":"a","x":1}]}]}`, "inputs[0].content[0]"},
	} {
		status, body := post(t, url+"/v2/embed", c.body)
		if status != 400 || !strings.Contains(body, `"param":"`+c.param+`"`) {
			t.Errorf("%s: %d %s", c.body, status, body)
		}
	}
}

// TestCohereRerank: /v2/rerank ranks as /v1/rerank does (cosine of the
// query and passage embeddings), answers Cohere's shape, honours top_n,
// and cuts long documents instead of refusing them.
func TestCohereRerank(t *testing.T) {
	url := tinyServer(t)
	docs := `["the first document","another text entirely","short"]`
	q := reference(t, url, `{"input":"which one?","task":"retrieval.query"}`)
	d := reference(t, url, `{"input":`+docs+`,"task":"retrieval.passage"}`)
	var got struct {
		ID      string `json:"id"`
		Results []struct {
			Index          int     `json:"index"`
			RelevanceScore float64 `json:"relevance_score"`
		} `json:"results"`
		Meta struct {
			APIVersion  map[string]string `json:"api_version"`
			BilledUnits map[string]int    `json:"billed_units"`
		} `json:"meta"`
	}
	call(t, url+"/v2/rerank", `{"model":"m","query":"which one?","documents":`+docs+`,"top_n":2}`, &got)
	if len(got.Results) != 2 || got.ID == "" || got.Meta.APIVersion["version"] != "2" || got.Meta.BilledUnits["search_units"] != 1 {
		t.Fatalf("answer %+v", got)
	}
	for k, r := range got.Results {
		if want := dot(q.Data[0].Embedding, d.Data[r.Index].Embedding); math.Abs(r.RelevanceScore-want) > 1e-9 {
			t.Errorf("document %d scored %v, want %v", r.Index, r.RelevanceScore, want)
		}
		if k > 0 && r.RelevanceScore > got.Results[k-1].RelevanceScore {
			t.Errorf("not best first: %+v", got.Results)
		}
	}
	long := strings.Repeat("word ", 5000)
	status, body := post(t, url+"/v2/rerank", `{"model":"m","query":"q","documents":["`+long+`","b"],"max_tokens_per_doc":8}`)
	if status != 200 {
		t.Errorf("long document with max_tokens_per_doc: %d %s", status, body)
	}
	for _, c := range []struct{ body, param string }{
		{`{"query":"q","documents":["a"],"top_n":0}`, "top_n"},
		{`{"query":"q","documents":["a"],"max_tokens_per_doc":0}`, "max_tokens_per_doc"},
		{`{"query":"q","documents":[]}`, "documents"},
		{`{"query":["q","r"],"documents":["a"]}`, "query"},
		{`{"query":"q","documents":["a"],"return_documents":true}`, "return_documents"},
	} {
		status, body := post(t, url+"/v2/rerank", c.body)
		if status != 400 || !strings.Contains(body, fmt.Sprintf(`"param":%q`, c.param)) {
			t.Errorf("%s: %d %s", c.body, status, body)
		}
	}
}

// FuzzCohere sends arbitrary bodies to /v2/embed and /v2/rerank: each
// answer is JSON with a 200 or 4xx status, never a crash or a 5xx.
func FuzzCohere(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","texts":["a","b"],"input_type":"search_query","embedding_types":["float","int8","uint8","binary","ubinary","base64"]}`,
		`{"images":["data:image/png;base64,AAAA"],"input_type":"image","output_dimension":2}`,
		`{"inputs":[{"content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"truncate":"NONE","max_tokens":3}`,
		`{"texts":["a"],"truncate":"START"}`, `{"texts":[]}`, `{"texts":["a"],"priority":3}`,
		`{"model":"m","query":"q","documents":["a","b"],"top_n":1,"max_tokens_per_doc":2}`,
		`{"query":{"text":"q"},"documents":[{"image":"AAAA"}]}`, `{"query":"q","documents":"a"}`, `[]`, `null`, `{"texts":["\ud800"]}`,
	} {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	h := newTestHandler(&fakeEmbedder{}, Options{})
	f.Fuzz(func(t *testing.T, rerank bool, body []byte) {
		path := "/v2/embed"
		if rerank {
			path = "/v2/rerank"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		if rec.Code != 200 && rec.Code/100 != 4 {
			t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: answer is not JSON: %q", path, body, rec.Body.Bytes())
		}
	})
}
