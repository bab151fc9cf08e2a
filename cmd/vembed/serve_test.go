package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/synth"
)

// writeTestModel writes the synthetic tiny model and projector into dir.
func writeTestModel(t *testing.T, dir string) modelFlags {
	t.Helper()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	lm, mmproj, err := synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mv := filepath.Join(dir, "mv.gguf")
	if err := synth.WriteMVProj(mv, cfg); err != nil {
		t.Fatal(err)
	}
	return modelFlags{model: lm, mmproj: mmproj, mvproj: mv}
}

func writePNG(t *testing.T, path string, w, h, seed int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(3*x + seed), uint8(5*y + 7*seed), uint8(x*y + seed), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// startServer runs serve on a free loopback port until the test ends and
// checks that it then shuts down cleanly.
func startServer(t *testing.T, o serveOptions) string {
	t.Helper()
	o.addr = "127.0.0.1:0"
	o.grace = 5 * time.Second
	addrc := make(chan string, 1)
	o.ready = func(a string) { addrc <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("server did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v after shutdown", err)
		}
	})
	return "http://" + addr
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("response is not JSON (%d): %q", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// cliEmbeddings runs "vembed embed --json" in-process.
func cliEmbeddings(t *testing.T, m modelFlags, args ...string) []any {
	t.Helper()
	args = append([]string{"embed", "--model", m.model, "--mmproj", m.mmproj, "--mvproj", m.mvproj, "--json"}, args...)
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("vembed %v: exit %d: %s", args, code, errOut.String())
	}
	var res struct{ Embeddings []any }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("embed output: %v", err)
	}
	return res.Embeddings
}

// TestServeMatchesEmbed sends text, image and interleaved requests over
// real HTTP and checks that the vectors equal those of "vembed embed" for
// the same inputs. Both run the same float32 code on the same inputs, and
// JSON carries float32 exactly, so the values must be identical.
func TestServeMatchesEmbed(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	imgPath := filepath.Join(dir, "a.png")
	img := writePNG(t, imgPath, 70, 50, 1)
	b64 := base64.StdEncoding.EncodeToString(img)
	url := startServer(t, serveOptions{models: m})

	interleaved := `[{"text":"a picture: "},{"image":"` + imgPath + `"},{"text":" the end"}]`
	for _, tc := range []struct {
		name    string
		request string // fields besides input
		input   string
		cli     []string
		field   string // data item field holding the result
	}{
		{"text", `"task":"retrieval.passage"`, `["hello world"]`, []string{"--task", "retrieval.passage", "--text", "hello world"}, "embedding"},
		{"image", `"dimensions":16`, `[{"image":"data:image/png;base64,` + b64 + `"}]`, []string{"--dimensions", "16", "--image", imgPath}, "embedding"},
		{"interleaved", `"task":"code.query"`, `[{"content":[{"text":"a picture: "},{"image":"` + b64 + `"},{"text":" the end"}]}]`,
			[]string{"--task", "code.query", "--input", interleaved}, "embedding"},
		{"several", `"max_pixels":6272`, `["one",{"image":"` + b64 + `"},"two"]`,
			[]string{"--max-pixels", "6272", "--text", "one", "--image", imgPath, "--input", `"two"`}, "embedding"},
		{"template", `"per_span":true`, `[{"template":"<|im_start|>user\nSee <|vision_start|><|image_pad|><|vision_end|> here<|im_end|>\n","images":["` + b64 + `"]}]`,
			[]string{"--input", `{"template":"<|im_start|>user\nSee <|vision_start|><|image_pad|><|vision_end|> here<|im_end|>\n","images":["` + imgPath + `"]}`}, "embedding"},
		{"multivector", `"return_multivector":true`, `["late",{"image":"` + b64 + `"}]`,
			[]string{"--multivector", "--text", "late", "--image", imgPath}, "embeddings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := post(t, url, `{"model":"x",`+tc.request+`,"input":`+tc.input+`}`)
			if status != 200 {
				t.Fatalf("status %d: %v", status, out)
			}
			want := cliEmbeddings(t, m, tc.cli...)
			data := out["data"].([]any)
			if len(data) != len(want) {
				t.Fatalf("%d results over HTTP, %d from embed", len(data), len(want))
			}
			for i, d := range data {
				got, ok := d.(map[string]any)[tc.field].([]any)
				if !ok || len(got) == 0 {
					t.Fatalf("input %d: no %q in %v", i, tc.field, d)
				}
				if fmt.Sprint(got) != fmt.Sprint(want[i]) {
					t.Errorf("input %d: HTTP and embed differ:\n%.200v\n%.200v", i, got, want[i])
				}
			}
			if u := out["usage"].(map[string]any); u["prompt_tokens"].(float64) <= 0 || u["total_tokens"] != u["prompt_tokens"] {
				t.Errorf("usage %v", u)
			}
		})
	}

	// base64 output is the little-endian float32 array of the float output.
	_, plain := post(t, url, `{"input":["base64 check",{"image":"`+b64+`"}]}`)
	_, enc := post(t, url, `{"input":["base64 check",{"image":"`+b64+`"}],"encoding_format":"base64"}`)
	for i := range plain["data"].([]any) {
		floats := plain["data"].([]any)[i].(map[string]any)["embedding"].([]any)
		raw, err := base64.StdEncoding.DecodeString(enc["data"].([]any)[i].(map[string]any)["embedding"].(string))
		if err != nil || len(raw) != 4*len(floats) {
			t.Fatalf("input %d: base64 embedding: %v, %d bytes for %d floats", i, err, len(raw), len(floats))
		}
		for k, f := range floats {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:])); got != float32(f.(float64)) {
				t.Fatalf("input %d dim %d: base64 %v, float %v", i, k, got, f)
			}
		}
	}
}

// TestServeRefusesBadRequests checks every refusal over real HTTP: status
// and a message that names the problem.
func TestServeRefusesBadRequests(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	img := writePNG(t, filepath.Join(dir, "ok.png"), 56, 56, 2)
	wide := writePNG(t, filepath.Join(dir, "wide.png"), 600, 30, 3)
	o := serveOptions{models: m}
	o.eng.MaxTokens = 120
	o.eng.Decode.Limits = imageproc.Limits{MaxWidth: 500}
	o.http.MaxBodyBytes = 256 << 10
	url := startServer(t, o)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

	for _, tc := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"invalid json", `{"input": [`, 400, "invalid JSON"},
		{"empty input", `{"input": ""}`, 400, "empty text"},
		{"empty list", `{"input": []}`, 400, "empty list"},
		{"broken base64", `{"input": [{"image": "%%%%"}]}`, 400, "broken base64"},
		{"undecodable image", `{"input": [{"image": "` + b64([]byte("GIF89a but not really an image")) + `"}]}`, 400, "image"},
		{"truncated image", `{"input": [{"image": "` + b64(img[:60]) + `"}]}`, 400, "image"},
		{"oversized image", `{"input": [{"image": "` + b64(wide) + `"}]}`, 413, "too large"},
		{"oversized body", `{"input": "` + strings.Repeat("x", 300<<10) + `"}`, 413, "exceeds"},
		{"unknown task", `{"input": "a", "task": "summarize"}`, 400, "unknown task"},
		{"bad dimensions", `{"input": "a", "dimensions": 65}`, 400, "dimensions 65"},
		{"zero dimensions", `{"input": "a", "dimensions": 0}`, 400, "positive"},
		{"dimensions as string", `{"input": "a", "dimensions": "16"}`, 400, "must be an integer"},
		{"too long", `{"input": "` + strings.Repeat("word ", 200) + `"}`, 400, "over the limit of 120 tokens"},
		{"invalid utf8", "{\"input\": \"bad \xc3\x28 text\"}", 400, "UTF-8"},
		{"vision token", `{"input": "look <|vision_start|> here"}`, 400, "vision special token"},
		{"max_pixels above the model", `{"input": [{"image": "` + b64(img) + `"}], "max_pixels": 99999999}`, 400, "max_pixels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := post(t, url, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, out)
			}
			e, ok := out["error"].(map[string]any)
			if !ok {
				t.Fatalf("no OpenAI error object: %v", out)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not say %q", msg, tc.msg)
			}
			if e["type"] != "invalid_request_error" {
				t.Errorf("type %v", e["type"])
			}
		})
	}
	// The server still works after all that.
	if status, out := post(t, url, `{"input": ["fine", {"image": "`+b64(img)+`"}]}`); status != 200 {
		t.Errorf("status %d after bad requests: %v", status, out)
	}
}

// TestServeDemoModel starts serve without --model: it must build and serve
// the demo model, labelled as random weights.
func TestServeDemoModel(t *testing.T) {
	url := startServer(t, serveOptions{})
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			ID            string   `json:"id"`
			RandomWeights bool     `json:"random_weights"`
			Modalities    []string `json:"modalities"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 1 || !out.Data[0].RandomWeights || !strings.Contains(out.Data[0].ID, "random") || len(out.Data[0].Modalities) != 2 {
		t.Errorf("models: %+v", out)
	}
	if status, body := post(t, url, `{"input": "demo"}`); status != 200 {
		t.Errorf("embedding with the demo model: %d %v", status, body)
	}
	h, err := http.Get(url + "/health")
	if err != nil || h.StatusCode != 200 {
		t.Errorf("health: %v %v", h, err)
	}
	if h != nil {
		h.Body.Close()
	}
}

func TestEmbedTextOutput(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	imgPath := filepath.Join(dir, "b.png")
	writePNG(t, imgPath, 56, 84, 4)
	want := cliEmbeddings(t, m, "--text", "plain output", "--image", imgPath)
	var out, errOut bytes.Buffer
	args := []string{"embed", "--model", m.model, "--mmproj", m.mmproj, "--text", "plain output", "--image", imgPath}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines for %d inputs", len(lines), len(want))
	}
	for i, line := range lines {
		fields := strings.Fields(line)
		vec := want[i].([]any)
		if len(fields) != len(vec) {
			t.Fatalf("line %d: %d values, want %d", i, len(fields), len(vec))
		}
		for k, f := range fields {
			var x float32
			if _, err := fmt.Sscan(f, &x); err != nil || x != float32(vec[k].(float64)) {
				t.Fatalf("line %d value %d: %q vs %v", i, k, f, vec[k])
			}
		}
	}
	// Flag errors exit with 2, engine errors with 1.
	if code := run([]string{"embed", "--model", m.model}, &out, &errOut); code != 2 {
		t.Errorf("no inputs: exit %d, want 2", code)
	}
	errOut.Reset()
	if code := run([]string{"embed", "--model", m.model, "--text", "a", "--task", "bogus"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "unknown task") {
		t.Errorf("bad task: exit %d, %q", code, errOut.String())
	}
}

func TestEmbedDump(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	imgPath := filepath.Join(dir, "c.png")
	writePNG(t, imgPath, 56, 56, 5)
	dump := filepath.Join(dir, "dump")
	cliEmbeddings(t, m, "--dump", dump, "--image", imgPath, "--text", "x")
	b, err := os.ReadFile(filepath.Join(dump, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Tensors []struct {
			Name, File string
			Shape      []int
		}
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range idx.Tensors {
		names[e.Name] = true
		n := 4
		for _, d := range e.Shape {
			n *= d
		}
		if st, err := os.Stat(filepath.Join(dump, e.File)); err != nil || st.Size() != int64(n) {
			t.Errorf("%s: %v, want %d bytes for shape %v", e.Name, err, n, e.Shape)
		}
	}
	for _, want := range []string{"input0.image0.patches", "input0.image0.vit_out", "input0.image0.merger_out", "input0.hidden_states", "input1.hidden_states"} {
		if !names[want] {
			t.Errorf("dump lacks %s (has %v)", want, names)
		}
	}
}

// TestEmbedPixelBounds: vembed embed refuses --min-pixels and --max-pixels
// outside the model's image budget with an error naming it (the tiny
// model's mmproj states none: jina-embeddings-v4's 3136..602112 apply).
func TestEmbedPixelBounds(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	img := filepath.Join(dir, "a.png")
	writePNG(t, img, 70, 50, 1)
	for _, flags := range [][]string{{"--min-pixels", "784"}, {"--max-pixels", "3000"}, {"--min-pixels", "602113"}, {"--max-pixels", "700000"}} {
		var o, e bytes.Buffer
		args := append([]string{"embed", "--model", m.model, "--mmproj", m.mmproj, "--image", img}, flags...)
		if code := run(args, &o, &e); code == 0 || !strings.Contains(e.String(), "3136..602112") {
			t.Errorf("%v: exit %d, %q; want an error naming the model's 3136..602112", flags, code, e.String())
		}
	}
	cliEmbeddings(t, m, "--min-pixels", "3136", "--max-pixels", "602112", "--image", img)
}
