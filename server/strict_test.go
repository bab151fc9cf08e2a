package server

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vembed/vembed/visionsvc"
)

// TestUnknownFieldsRefused: every JSON route refuses a field it does not
// know with a 400 naming it, at the top level and inside an input item;
// the compatibility list's fields are accepted.
func TestUnknownFieldsRefused(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	n := 0
	for _, r := range h.routes {
		path, ok := strings.CutPrefix(r, "POST ")
		if !ok || path == visionsvc.Path {
			continue
		}
		n++
		status, out := do(t, h, "POST", path, `{"no_such_field":1}`)
		if status != 400 {
			t.Errorf("%s: unknown field: status %d %v", path, status, out)
			continue
		}
		checkError(t, out, "no_such_field", `unknown field "no_such_field"`)
	}
	if n < 10 {
		t.Fatalf("only %d POST routes checked", n)
	}
	for _, c := range []struct{ path, body, param string }{
		{"/v1/embeddings", `{"input":[{"text":"a","extra":1}]}`, "input[0]"},
		{"/v1/embeddings", `{"input":{"content":[{"text":"a","extra":1}]}}`, "input.content[0]"},
		{"/v1/rerank", `{"query":{"text":"q","extra":1},"documents":["a"]}`, "query"},
		{"/v1/rerank", `{"query":"q","documents":{"content":["a"],"extra":1}}`, "documents"},
		{"/api/embed", `{"input":[{"image":"AAAA","extra":1}]}`, "input[0]"},
	} {
		status, out := do(t, h, "POST", c.path, c.body)
		if status != 400 {
			t.Errorf("%s %s: status %d", c.path, c.body, status)
			continue
		}
		checkError(t, out, c.param, `"extra"`)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/embeddings", `{"input":"a","model":"m","user":"u"}`},
		{"/api/embed", `{"input":"a","model":"m","keep_alive":"5m","options":{"temperature":0}}`},
		{"/api/embeddings", `{"prompt":"a","model":"m","keep_alive":-1,"options":{}}`},
	} {
		if status, out := do(t, h, "POST", c.path, c.body); status != 200 {
			t.Errorf("%s %s: status %d %v", c.path, c.body, status, out)
		}
	}
}

// TestQuantizeInt8: the integer encodings scale the largest magnitude to
// 127 and round half away from zero; uint8 is int8 + 128.
func TestQuantizeInt8(t *testing.T) {
	for _, c := range []struct {
		in   []float32
		want []int
	}{
		{[]float32{0.5, -0.25, 0, 1.0 / 254}, []int{127, -64, 0, 1}}, // -63.5 rounds away from zero
		{[]float32{-2, 1, 0.0078740157}, []int{-127, 64, 0}},
		{[]float32{0, 0}, []int{0, 0}},
		{[]float32{3}, []int{127}},
	} {
		got := quantizeInt8(c.in, 0)
		for i := range c.in {
			if got[i] != c.want[i] {
				t.Errorf("int8(%v) = %v, want %v", c.in, got, c.want)
				break
			}
		}
		u := quantizeInt8(c.in, 128)
		for i := range got {
			if u[i] != got[i]+128 || u[i] < 1 || u[i] > 255 {
				t.Errorf("uint8(%v) = %v, int8 %v", c.in, u, got)
				break
			}
		}
	}
	// Cosine survives: on a spread vector the cosine of the int8 vector
	// to the float one is within the rounding (each value off by at most
	// 0.5 of 127 steps of the largest).
	v := make([]float32, 64)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)*1.7)) * float32(1+i%5)
	}
	q := quantizeInt8(v, 0)
	var dot, nv, nq float64
	for i := range v {
		dot += float64(v[i]) * float64(q[i])
		nv += float64(v[i]) * float64(v[i])
		nq += float64(q[i]) * float64(q[i])
	}
	if cos := dot / math.Sqrt(nv*nq); cos < 0.9999 {
		t.Errorf("cosine of int8 to float %v", cos)
	}
}

// TestErrorsQuoteNoPayload: a request whose refused value is large (a
// field name, a model, a role, an encoding, a number) gets an error that
// names it in a few hundred bytes, never the value whole.
func TestErrorsQuoteNoPayload(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	big := strings.Repeat("x", 100000)
	digits := strings.Repeat("9", 100000)
	for _, c := range []struct{ path, body string }{
		{"/v1/embeddings", `{"input":"a","` + big + `":1}`},
		{"/v1/embeddings", `{"input":[{"text":"a","` + big + `":1}]}`},
		{"/v1/embeddings", `{"input":"a","encoding_format":"` + big + `"}`},
		{"/v1/embeddings", `{"input":"a","dimensions":` + digits + `}`},
		{"/v1/embeddings", `{"input":[{"type":"` + big + `","text":"a"}]}`},
		{"/v1/embeddings", `{"messages":[{"role":"` + big + `","content":"a"}]}`},
		{"/v1/embeddings", `{"input":[{"image":"data:` + big + `;base64,AAAA"}]}`},
		{"/v2/embed", `{"texts":["a"],"input_type":"search_query","embedding_types":["` + big + `"]}`},
		{"/v2/embed", `{"texts":["a"],"input_type":"search_query","truncate":"` + big + `"}`},
	} {
		status, out := do(t, h, "POST", c.path, c.body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != 400 || msg == "" {
			t.Errorf("%s %.60s: status %d %.200v", c.path, c.body, status, out)
			continue
		}
		if len(msg) > 400 {
			t.Errorf("%s %.60s: a message of %d bytes: %.200s", c.path, c.body, len(msg), msg)
		}
	}
	if status, out := do(t, h, "GET", "/v1/models/"+big, ""); status != 404 || len(fmt.Sprint(out)) > 600 {
		t.Errorf("GET /v1/models/LONG: status %d, %d bytes", status, len(fmt.Sprint(out)))
	}
}
