package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/synth"
)

// testModel is the synthetic tiny model pair (plus projector) shared by the
// tests of this package, written once into a temporary directory.
var testModel struct {
	once                  sync.Once
	dir                   string
	lm, mmproj, mv        string
	err                   error
	engine                *Engine
	engineErr             error
	hidden, multivectorOD int
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testModel.engine != nil {
		testModel.engine.Close()
	}
	if testModel.dir != "" {
		os.RemoveAll(testModel.dir)
	}
	os.Exit(code)
}

func modelFiles(t testing.TB) (lm, mmproj, mv string) {
	t.Helper()
	testModel.once.Do(func() {
		dir, err := os.MkdirTemp("", "vembed-engine-test-")
		if err != nil {
			testModel.err = err
			return
		}
		testModel.dir = dir
		cfg, err := synth.Preset("tiny")
		if err != nil {
			testModel.err = err
			return
		}
		if testModel.lm, testModel.mmproj, err = synth.WritePair(dir, cfg); err != nil {
			testModel.err = err
			return
		}
		testModel.mv = filepath.Join(dir, "mvproj.gguf")
		testModel.err = synth.WriteMVProj(testModel.mv, cfg)
		testModel.hidden, testModel.multivectorOD = cfg.LM.Hidden, cfg.MVProj.OutputDim
		if testModel.err == nil {
			// The shared engine keeps no cache, so that every test computes.
			cfg := Config{Model: testModel.lm, MMProj: testModel.mmproj, MVProj: testModel.mv}
			uncached(&cfg)
			testModel.engine, testModel.engineErr = New(cfg)
		}
	})
	if testModel.err != nil {
		t.Fatalf("writing the synthetic model: %v", testModel.err)
	}
	return testModel.lm, testModel.mmproj, testModel.mv
}

// sharedEngine is an engine over the tiny model with default limits and
// no caches.
func sharedEngine(t testing.TB) *Engine {
	t.Helper()
	modelFiles(t)
	if testModel.engineErr != nil {
		t.Fatalf("New: %v", testModel.engineErr)
	}
	return testModel.engine
}

// newEngine builds an engine with changed limits.
func newEngine(t testing.TB, change func(*Config)) *Engine {
	t.Helper()
	lm, mmproj, mv := modelFiles(t)
	cfg := Config{Model: lm, MMProj: mmproj, MVProj: mv}
	change(&cfg)
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// testPNG draws a w×h image whose content depends on seed.
func testPNG(t testing.TB, w, h, seed int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x*7 + seed*31), uint8(y*5 + seed*17), uint8((x ^ y) + seed), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func embed(t testing.TB, e *Engine, req Request) *Response {
	t.Helper()
	resp, err := e.Embed(context.Background(), req)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(resp.Embeddings) != len(req.Inputs) {
		t.Fatalf("%d embeddings for %d inputs", len(resp.Embeddings), len(req.Inputs))
	}
	return resp
}

// tracer keeps every traced tensor.
type tracer map[string][]float32

func (tr tracer) Tensor(name string, data []float32, shape ...int) error {
	tr[name] = append([]float32(nil), data...)
	return nil
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// Same inputs through the same float32 code give the same bits whatever
// else is in the request, unless the kernels split work differently with
// the batch; 1e-6 on unit vectors covers a few float32 roundings.
const sameTol = 1e-6

func TestPoolingRules(t *testing.T) {
	e := sharedEngine(t)
	img := testPNG(t, 60, 50, 1)
	for _, tc := range []struct {
		name    string
		in      Input
		spanned bool // image rule: pool the vision span only
	}{
		{"text", TextInput("a small test"), false},
		{"image", ImageInput(img), true},
		{"two images", Input{Parts: []Part{Image(img), Image(testPNG(t, 56, 84, 2))}}, true},
		{"interleaved", Input{Parts: []Part{Text("look: "), Image(img), Text(" done")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tracer{}
			resp := embed(t, e, Request{Inputs: []Input{tc.in}, Trace: tr})
			got := resp.Embeddings[0]
			hidden := tr["input0.hidden_states"]
			n, dim := got.Tokens, e.Info().Hidden
			if len(hidden) != n*dim {
				t.Fatalf("traced hidden states: %d values, want %d×%d", len(hidden), n, dim)
			}
			all := heads.MeanPool(hidden, dim, 0, n)
			heads.Normalize(all)
			if tc.spanned {
				if maxDiff(got.Vector, all) < 1e-3 {
					t.Errorf("image input pooled over all tokens")
				}
				// The span is the first <|vision_start|> to the last
				// <|vision_end|>: find it from the prompt the engine built.
				o, err := e.options(&Request{})
				if err != nil {
					t.Fatal(err)
				}
				j, err := e.proc.plan(0, tc.in, o, cutNone)
				if err != nil {
					t.Fatal(err)
				}
				sp := j.prompt.Images
				want := heads.MeanPool(hidden, dim, sp[0].VisionStart, sp[len(sp)-1].VisionEnd+1)
				heads.Normalize(want)
				if d := maxDiff(got.Vector, want); d > sameTol {
					t.Errorf("image rule: max diff %g", d)
				}
			} else if d := maxDiff(got.Vector, all); d > sameTol {
				t.Errorf("all-token rule: max diff %g", d)
			}
			if math.Abs(norm(got.Vector)-1) > 1e-6 {
				t.Errorf("norm %g", norm(got.Vector))
			}
		})
	}
}

// TestRequestBatchingInvariance checks that the inputs of one request (all
// images through one vision pass) embed as they do one by one.
func TestRequestBatchingInvariance(t *testing.T) {
	e := sharedEngine(t)
	a, b, c := testPNG(t, 60, 50, 1), testPNG(t, 112, 84, 2), testPNG(t, 30, 90, 3)
	inputs := []Input{
		ImageInput(a),
		TextInput("between the images"),
		{Parts: []Part{Text("first "), Image(b), Text(" then "), Image(c)}},
		{Parts: []Part{Image(c), Image(a)}},
		ImageInput(b),
	}
	all := embed(t, e, Request{Inputs: inputs})
	for i, in := range inputs {
		one := embed(t, e, Request{Inputs: []Input{in}})
		if d := maxDiff(all.Embeddings[i].Vector, one.Embeddings[0].Vector); d > sameTol {
			t.Errorf("input %d: batched vs alone max diff %g", i, d)
		}
		if all.Embeddings[i].Tokens != one.Embeddings[0].Tokens {
			t.Errorf("input %d: tokens %d vs %d", i, all.Embeddings[i].Tokens, one.Embeddings[0].Tokens)
		}
	}
	sum := 0
	for _, emb := range all.Embeddings {
		sum += emb.Tokens
	}
	if all.PromptTokens != sum {
		t.Errorf("PromptTokens %d, sum of inputs %d", all.PromptTokens, sum)
	}
	// Order matters: swapping the two images of a document changes it.
	swapped := embed(t, e, Request{Inputs: []Input{{Parts: []Part{Image(a), Image(c)}}}})
	if maxDiff(swapped.Embeddings[0].Vector, all.Embeddings[3].Vector) < 1e-4 {
		t.Errorf("image order within an input has no effect")
	}
}

// TestPackedDecoderPass checks that many inputs of different lengths,
// packed into one decoder pass, embed exactly as they do one per request.
// Packing only stacks rows: every matrix product computes each row from
// that row alone in the same order, and attention runs per sequence under
// its own mask and positions, so the hidden states, and so the vectors,
// are expected to be bitwise equal.
func TestPackedDecoderPass(t *testing.T) {
	e := sharedEngine(t)
	var inputs []Input
	for i := range 12 {
		text := "word"
		for range i * 3 {
			text += fmt.Sprintf(" w%d", i)
		}
		switch i % 3 {
		case 0:
			inputs = append(inputs, TextInput(text))
		case 1:
			inputs = append(inputs, ImageInput(testPNG(t, 28+14*i, 56, i)))
		default:
			inputs = append(inputs, Input{Parts: []Part{Text(text), Image(testPNG(t, 56, 28+7*i, i)), Text(" end")}})
		}
	}
	for _, multi := range []bool{false, true} {
		req := Request{Inputs: inputs, PerSpan: true}
		if multi {
			req.Multivector = true
		}
		all := embed(t, e, req)
		for i, in := range inputs {
			one := req
			one.Inputs = []Input{in}
			got, want := all.Embeddings[i], embed(t, e, one).Embeddings[0]
			if got.Tokens != want.Tokens {
				t.Errorf("multi=%v input %d: tokens %d packed, %d alone", multi, i, got.Tokens, want.Tokens)
			}
			if d := maxDiff(got.Vector, want.Vector); d != 0 {
				t.Errorf("multi=%v input %d: packed vs alone differ by %g", multi, i, d)
			}
			if len(got.Spans) != len(want.Spans) || len(got.Multi) != len(want.Multi) {
				t.Fatalf("multi=%v input %d: %d spans/%d multi rows packed, %d/%d alone", multi, i, len(got.Spans), len(got.Multi), len(want.Spans), len(want.Multi))
			}
			for k := range got.Spans {
				if d := maxDiff(got.Spans[k], want.Spans[k]); d != 0 {
					t.Errorf("multi=%v input %d span %d: differ by %g", multi, i, k, d)
				}
			}
			for k := range got.Multi {
				if d := maxDiff(got.Multi[k], want.Multi[k]); d != 0 {
					t.Errorf("multi=%v input %d row %d: differ by %g", multi, i, k, d)
				}
			}
		}
	}
}

func TestDefaultTask(t *testing.T) {
	e := sharedEngine(t)
	img := testPNG(t, 56, 56, 4)
	text := TextInput("default task")
	get := func(task string, in Input) []float32 {
		return embed(t, e, Request{Inputs: []Input{in}, Task: task}).Embeddings[0].Vector
	}
	if d := maxDiff(get("", text), get("retrieval.query", text)); d != 0 {
		t.Errorf("text default is not retrieval.query (diff %g)", d)
	}
	if maxDiff(get("retrieval.passage", text), get("retrieval.query", text)) < 1e-4 {
		t.Errorf("query and passage prompts give the same text vector")
	}
	mixed := Input{Parts: []Part{Text("caption"), Image(img)}}
	if d := maxDiff(get("", mixed), get("retrieval.passage", mixed)); d != 0 {
		t.Errorf("interleaved default is not retrieval.passage (diff %g)", d)
	}
	if d := maxDiff(get("code", mixed), get("code.passage", mixed)); d != 0 {
		t.Errorf("adapter name alone does not pick the passage side for images (diff %g)", d)
	}
	if d := maxDiff(get("code", text), get("code.query", text)); d != 0 {
		t.Errorf("adapter name alone does not pick the query side for text (diff %g)", d)
	}
	if d := maxDiff(get("", ImageInput(img)), get("code.query", ImageInput(img))); d != 0 {
		t.Errorf("the image prompt depends on the task (diff %g)", d)
	}
}

func TestMatryoshkaAndNormalization(t *testing.T) {
	e := sharedEngine(t)
	in := []Input{TextInput("matryoshka"), ImageInput(testPNG(t, 56, 56, 5))}
	full := embed(t, e, Request{Inputs: in})
	raw := embed(t, e, Request{Inputs: in, Unnormalized: true})
	for _, k := range []int{1, 16, e.Info().Hidden} {
		cut := embed(t, e, Request{Inputs: in, Dimensions: k})
		rawCut := embed(t, e, Request{Inputs: in, Dimensions: k, Unnormalized: true})
		for i := range in {
			v := cut.Embeddings[i].Vector
			if len(v) != k || math.Abs(norm(v)-1) > 1e-6 {
				t.Fatalf("k=%d input %d: len %d norm %g", k, i, len(v), norm(v))
			}
			want, _ := heads.Truncate(full.Embeddings[i].Vector, k)
			if d := maxDiff(v, want); d > sameTol {
				t.Errorf("k=%d input %d: not the renormalized prefix (diff %g)", k, i, d)
			}
			if d := maxDiff(rawCut.Embeddings[i].Vector, raw.Embeddings[i].Vector[:k]); d != 0 {
				t.Errorf("k=%d input %d: unnormalized truncation is not the prefix", k, i)
			}
		}
	}
	if n := norm(raw.Embeddings[0].Vector); math.Abs(n-1) < 1e-3 {
		t.Errorf("unnormalized vector has norm %g", n)
	}
}

func TestMultivector(t *testing.T) {
	e := sharedEngine(t)
	in := []Input{TextInput("late interaction"), ImageInput(testPNG(t, 84, 56, 6))}
	if _, err := e.Embed(context.Background(), Request{Inputs: in, Multivector: true, Dimensions: 16}); err == nil {
		t.Error("dimensions with multi-vector output was not refused")
	} else if ie, ok := AsInputError(err); !ok || ie.Param != "dimensions" {
		t.Errorf("dimensions with multi-vector output: %v", err)
	}
	resp := embed(t, e, Request{Inputs: in, Multivector: true})
	od := e.Info().MultivectorDim
	if od != testModel.multivectorOD {
		t.Fatalf("MultivectorDim %d, want %d", od, testModel.multivectorOD)
	}
	for i, emb := range resp.Embeddings {
		if emb.Vector != nil {
			t.Errorf("input %d: single vector in a multi-vector answer", i)
		}
		if len(emb.Multi) != emb.Tokens {
			t.Errorf("input %d: %d rows for %d tokens", i, len(emb.Multi), emb.Tokens)
		}
		for r, row := range emb.Multi {
			if len(row) != od || math.Abs(norm(row)-1) > 1e-5 {
				t.Fatalf("input %d row %d: len %d norm %g", i, r, len(row), norm(row))
			}
		}
	}
}

func TestPerSpan(t *testing.T) {
	e := sharedEngine(t)
	a, b := testPNG(t, 56, 56, 7), testPNG(t, 84, 56, 8)
	resp := embed(t, e, Request{Inputs: []Input{{Parts: []Part{Image(a), Text("and"), Image(b)}}, TextInput("none")}, PerSpan: true})
	if n := len(resp.Embeddings[0].Spans); n != 2 {
		t.Fatalf("%d span vectors, want 2", n)
	}
	if resp.Embeddings[1].Spans != nil {
		t.Errorf("text input has span vectors")
	}
	if maxDiff(resp.Embeddings[0].Spans[0], resp.Embeddings[0].Spans[1]) < 1e-4 {
		t.Errorf("the two spans pool to the same vector")
	}
}

func TestInputErrors(t *testing.T) {
	e := sharedEngine(t)
	small := newEngine(t, func(c *Config) {
		c.MaxTokens = 40
		c.MaxImages = 2
		c.Decode.Limits = imageproc.Limits{MaxWidth: 200, MaxHeight: 200}
	})
	textOnly := newEngine(t, func(c *Config) { c.MMProj, c.MVProj = "", "" })
	img := testPNG(t, 56, 56, 9)
	long := ""
	for i := 0; i < 50; i++ {
		long += "word "
	}
	for _, tc := range []struct {
		name  string
		e     *Engine
		req   Request
		param string
		code  string
	}{
		{"no inputs", e, Request{}, "input", CodeEmpty},
		{"no parts", e, Request{Inputs: []Input{{}}}, "input[0]", CodeEmpty},
		{"empty text", e, Request{Inputs: []Input{TextInput("ok"), TextInput("")}}, "input[1]", CodeEmpty},
		{"empty image", e, Request{Inputs: []Input{{Parts: []Part{Text("a"), Image(nil)}}}}, "input[0].content[1]", CodeEmpty},
		{"invalid utf8", e, Request{Inputs: []Input{TextInput("a\xffb")}}, "input[0]", CodeInvalid},
		{"vision token in text", e, Request{Inputs: []Input{TextInput("see <|image_pad|>")}}, "input[0]", CodeInvalid},
		{"vision start in interleaved", e, Request{Inputs: []Input{{Parts: []Part{Text("<|vision_start|>"), Image(img)}}}}, "input[0]", CodeInvalid},
		{"unknown task", e, Request{Inputs: []Input{TextInput("a")}, Task: "summarize"}, "task", CodeInvalid},
		{"dimensions too big", e, Request{Inputs: []Input{TextInput("a")}, Dimensions: e.Info().Hidden + 1}, "dimensions", CodeInvalid},
		{"dimensions negative", e, Request{Inputs: []Input{TextInput("a")}, Dimensions: -3}, "dimensions", CodeInvalid},
		{"max_pixels above model", e, Request{Inputs: []Input{ImageInput(img)}, MaxPixels: e.Info().MaxPixels + 1}, "max_pixels", CodeInvalid},
		{"max_pixels tiny", e, Request{Inputs: []Input{ImageInput(img)}, MaxPixels: 10}, "max_pixels", CodeInvalid},
		{"min above max", e, Request{Inputs: []Input{ImageInput(img)}, MinPixels: 5000, MaxPixels: 4000}, "min_pixels", CodeInvalid},
		{"corrupt image", e, Request{Inputs: []Input{ImageInput(img[:len(img)/2])}}, "input[0]", CodeBadImage},
		{"not an image", e, Request{Inputs: []Input{TextInput("a"), ImageInput([]byte("hello world"))}}, "input[1]", CodeBadImage},
		{"image too small", e, Request{Inputs: []Input{ImageInput(testPNG(t, 10, 40, 1))}}, "input[0]", CodeBadImage},
		{"image too large", small, Request{Inputs: []Input{ImageInput(testPNG(t, 300, 30, 1))}}, "input[0]", CodeImageTooLarge},
		{"text too long", small, Request{Inputs: []Input{TextInput("short"), TextInput(long)}}, "input[1]", CodeTooLong},
		{"image too long", small, Request{Inputs: []Input{ImageInput(testPNG(t, 196, 196, 1))}}, "input[0]", CodeTooLong},
		{"too many images", small, Request{Inputs: []Input{ImageInput(img), ImageInput(img), ImageInput(img)}}, "input", CodeInvalid},
		{"template with text part", e, Request{Inputs: []Input{{Template: "x " + visionSpan, Parts: []Part{Text("a"), Image(img)}}}}, "input[0].content[0]", CodeInvalid},
		{"template markers", e, Request{Inputs: []Input{{Template: "no marker", Parts: []Part{Image(img)}}}}, "input[0].template", CodeInvalid},
		{"template utf8", e, Request{Inputs: []Input{{Template: "\xff"}}}, "input[0].template", CodeInvalid},
		{"no vision", textOnly, Request{Inputs: []Input{ImageInput(img)}}, "input[0]", CodeUnsupported},
		{"no projector", textOnly, Request{Inputs: []Input{TextInput("a")}, Multivector: true}, "return_multivector", CodeUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.e.Embed(context.Background(), tc.req)
			ie, ok := AsInputError(err)
			if !ok {
				t.Fatalf("error %v is not an InputError", err)
			}
			if ie.Param != tc.param || ie.Code != tc.code {
				t.Errorf("param %q code %q, want %q %q (%v)", ie.Param, ie.Code, tc.param, tc.code, ie)
			}
			if ie.Err == nil || ie.Error() == "" {
				t.Errorf("no message")
			}
		})
	}
}

// TestPixelBoundsOfModel: a request's min_pixels and max_pixels move the
// budget within the model's own bounds only; either outside them is
// refused with an error naming those bounds, and within them it applies.
func TestPixelBoundsOfModel(t *testing.T) {
	e := sharedEngine(t)
	lo, hi := e.Info().MinPixels, e.Info().MaxPixels
	if lo <= 28*28 || hi <= lo {
		t.Fatalf("model bounds %d..%d: the test needs a minimum above one merged patch", lo, hi)
	}
	img := testPNG(t, 56, 56, 9)
	bounds := fmt.Sprintf("%d..%d", lo, hi)
	for _, tc := range []struct {
		name     string
		min, max int
		param    string
	}{
		{"min below the model's", lo - 1, 0, "min_pixels"},
		{"min at one patch, below the model's", 28 * 28, 0, "min_pixels"},
		{"min above the model's", hi + 1, 0, "min_pixels"},
		{"max below the model's minimum", 0, lo - 1, "max_pixels"},
		{"max above the model's", 0, hi + 1, "max_pixels"},
		{"both below", 28 * 28, lo - 1, "max_pixels"},
	} {
		_, err := e.Embed(context.Background(), Request{Inputs: []Input{ImageInput(img)}, MinPixels: tc.min, MaxPixels: tc.max})
		ie, ok := AsInputError(err)
		if !ok || ie.Param != tc.param || ie.Code != CodeInvalid || !strings.Contains(ie.Error(), bounds) {
			t.Errorf("%s (min %d, max %d): %v; want a %s error naming %s", tc.name, tc.min, tc.max, err, tc.param, bounds)
		}
	}
	// Within the bounds: a 56x56 image is upscaled to the minimum asked,
	// so the prompt grows with it.
	prev := 0
	for _, px := range []int{lo, lo * 4, lo * 16} {
		resp, err := e.Embed(context.Background(), Request{Inputs: []Input{ImageInput(img)}, MinPixels: px, MaxPixels: hi})
		if err != nil {
			t.Fatalf("min_pixels %d within %s: %v", px, bounds, err)
		}
		if n := resp.PromptTokens; n <= prev {
			t.Errorf("min_pixels %d: %d prompt tokens, not more than %d with a smaller minimum", px, n, prev)
		}
		prev = resp.PromptTokens
	}
	if _, err := e.Embed(context.Background(), Request{Inputs: []Input{ImageInput(img)}, MaxPixels: lo}); err != nil {
		t.Errorf("max_pixels at the model's minimum: %v", err)
	}
}

func TestCancelled(t *testing.T) {
	e := sharedEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Embed(ctx, Request{Inputs: []Input{TextInput("a"), ImageInput(testPNG(t, 56, 56, 1))}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	e := sharedEngine(t)
	reqs := make([]Request, 6)
	for i := range reqs {
		reqs[i] = Request{Inputs: []Input{TextInput(fmt.Sprintf("request %d", i)), ImageInput(testPNG(t, 56, 28+14*i, i))}}
	}
	want := make([]*Response, len(reqs))
	for i, r := range reqs {
		want[i] = embed(t, e, r)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(reqs))
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := e.Embed(context.Background(), r)
			if err != nil {
				errs <- err
				return
			}
			for k := range got.Embeddings {
				if d := maxDiff(got.Embeddings[k].Vector, want[i].Embeddings[k].Vector); d != 0 {
					errs <- fmt.Errorf("request %d input %d: concurrent result differs by %g", i, k, d)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInfo(t *testing.T) {
	e := sharedEngine(t)
	info := e.Info()
	if info.Hidden != testModel.hidden || info.Dimensions != nil || info.ContextLength <= 0 ||
		len(info.Tasks) != 5 || len(info.Modalities) != 2 || info.MaxPixels <= 0 || info.Name == "" {
		t.Errorf("info %+v", info)
	}
	small := newEngine(t, func(c *Config) { c.MaxTokens, c.MaxPixels = 40, 28*28*4 })
	if small.Info().ContextLength != 40 || small.Info().MaxPixels != 28*28*4 {
		t.Errorf("limits not applied: %+v", small.Info())
	}
	// A 112x112 image fits the model's budget as 4x4 merged tokens; under
	// the lowered budget it becomes 2x2.
	req := Request{Inputs: []Input{ImageInput(testPNG(t, 112, 112, 1))}}
	full, low := embed(t, e, req).PromptTokens, embed(t, small, req).PromptTokens
	if full-low != 16-4 {
		t.Errorf("image prompt of %d tokens under the model's budget, %d under the lowered one", full, low)
	}
}

// The benchmarks measure a whole request on the tiny model; compared with
// the model's own benchmarks they show what the engine adds (prompt
// building, image decoding and preprocessing, pooling).
func BenchmarkEmbedText(b *testing.B) {
	e := sharedEngine(b)
	req := Request{Inputs: []Input{TextInput("The quick brown fox jumps over the lazy dog.")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEmbedImage(b *testing.B) {
	e := sharedEngine(b)
	req := Request{Inputs: []Input{ImageInput(testPNG(b, 200, 130, 1))}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzEmbed feeds arbitrary bytes as an image and arbitrary text through the
// whole engine: every outcome must be an embedding or an InputError.
func FuzzEmbed(f *testing.F) {
	f.Add(testPNG(f, 30, 30, 1), "text")
	f.Add(testPNG(f, 60, 28, 2)[:70], "<|vision_end|>")
	f.Add([]byte("GIF89a\x10\x00\x10\x00"), "a\xffb")
	f.Add([]byte("\xff\xd8\xff\xe0"), "")
	e := newEngine(f, func(c *Config) {
		c.MaxTokens = 64
		c.Decode.Limits = imageproc.Limits{MaxBytes: 1 << 16, MaxPixels: 1 << 16}
	})
	f.Fuzz(func(t *testing.T, img []byte, text string) {
		resp, err := e.Embed(context.Background(), Request{Inputs: []Input{
			{Parts: []Part{Text(text), Image(img)}},
			ImageInput(img),
		}})
		if err != nil {
			if _, ok := AsInputError(err); !ok {
				t.Fatalf("not an InputError: %v", err)
			}
			return
		}
		for _, emb := range resp.Embeddings {
			if math.Abs(norm(emb.Vector)-1) > 1e-5 {
				t.Fatalf("norm %g", norm(emb.Vector))
			}
		}
	})
}

// TestTrainedDimensions covers the jina-v4 width without loading a 3B model:
// only the trained Matryoshka sizes pass.
func TestTrainedDimensions(t *testing.T) {
	e := &Engine{info: Info{Hidden: 2048, Dimensions: recipe.JinaV4{}.Dimensions(2048)}}
	for _, d := range []int{128, 256, 512, 1024, 2048} {
		if err := e.checkDims(d); err != nil {
			t.Errorf("%d refused: %v", d, err)
		}
	}
	for _, d := range []int{-1, 1, 64, 768, 2049} {
		if err := e.checkDims(d); err == nil {
			t.Errorf("%d accepted", d)
		} else if ie, _ := AsInputError(err); ie == nil || ie.Param != "dimensions" {
			t.Errorf("%d: %v", d, err)
		}
	}
}

// TestMinPixelsCounted: min_pixels enlarges an image's token count, which
// is known from the header and checked against the token limit before the
// image is decoded; min_pixels may not exceed the model's max_pixels. (A
// 7.6 KB request once expanded to 24,928 tokens this way.)
func TestMinPixelsCounted(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.MaxTokens = 64; c.EmbeddingCacheBytes = -1; c.EncoderCacheBytes = -1 })
	img := testPNG(t, 28, 28, 3)
	if _, err := e.Embed(context.Background(), Request{Inputs: []Input{ImageInput(img)}}); err != nil {
		t.Fatalf("a small image: %v", err)
	}
	before := e.Stats().Images
	_, err := e.Embed(context.Background(), Request{Inputs: []Input{ImageInput(img)}, MinPixels: e.Info().MaxPixels})
	ie, ok := AsInputError(err)
	if !ok || ie.Code != CodeTooLong {
		t.Fatalf("min_pixels = max_pixels under a 64-token limit: %v", err)
	}
	if n := e.Stats().Images - before; n != 0 {
		t.Errorf("%d images encoded for a refused request", n)
	}
	if _, err := e.Embed(context.Background(), Request{Inputs: []Input{ImageInput(img)}, MinPixels: e.Info().MaxPixels + 1}); err == nil {
		t.Error("min_pixels above max_pixels accepted")
	}
}
