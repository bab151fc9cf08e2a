package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

type fixtureCase struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Task       string `json:"task"`
	PromptName string `json:"prompt_name"`
	InputText  string `json:"input_text"`
	Prompt     string `json:"prompt"`
	NTokens    int    `json:"n_tokens"`
	Images     []struct {
		File      string `json:"file"`
		MinPixels int    `json:"min_pixels"`
		MaxPixels int    `json:"max_pixels"`
	} `json:"images"`
	Embedding    []float32 `json:"embedding"`
	Alternatives struct {
		AllTokens []float32 `json:"text_rule_all_tokens"`
	} `json:"embedding_alternatives"`
	Multivector struct {
		File  string `json:"file"`
		Shape []int  `json:"shape"`
	} `json:"multivector"`
}

const visionSpan = "<|vision_start|><|image_pad|><|vision_end|>"

// TestFixtureParity runs the reference cases through the whole engine: the
// request (task, text, image files, pixel limits) goes in, and the pooled
// vector and the multi-vectors must match the reference computed in float64.
// The reference gives float32 rounding of ~1e-6 relative; the suggested
// bounds are cosine ≥ 0.99999 for text and 0.9999 for image paths, whose
// vision encoder adds a longer chain of float32 operations.
func TestFixtureParity(t *testing.T) {
	dir := fixtures.Dir(t, "model")
	e, err := New(Config{
		Model:  filepath.Join(dir, "qwen25vl-tiny-sv-lm-F32.gguf"),
		MMProj: filepath.Join(dir, "mmproj-qwen25vl-tiny-sv-F32.gguf"),
		MVProj: filepath.Join(dir, "mvproj-tiny-sv-F32.gguf"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cases, _ := filepath.Glob(filepath.Join(dir, "cases", "*", "case.json"))
	if len(cases) == 0 {
		t.Fatalf("no cases in %s", dir)
	}
	ran := 0
	for _, path := range cases {
		var c fixtureCase
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		req, want, minCos, ok := fixtureRequest(t, e, filepath.Dir(path), &c)
		if !ok {
			t.Logf("%s: prompt %q is not a form the engine builds; skipped", c.ID, c.Prompt)
			continue
		}
		ran++
		t.Run(c.ID, func(t *testing.T) {
			resp := embed(t, e, req)
			got := resp.Embeddings[0]
			if got.Tokens != c.NTokens {
				t.Errorf("tokens %d, want %d", got.Tokens, c.NTokens)
			}
			cs := fixtures.Cosine(got.Vector, want)
			if cs < minCos {
				t.Errorf("embedding cosine %.9f < %g", cs, minCos)
			}
			req.Multivector = true
			mv := embed(t, e, req).Embeddings[0].Multi
			rows := fixtures.ReadF32File(t, filepath.Join(filepath.Dir(path), c.Multivector.File))
			od := c.Multivector.Shape[1]
			if len(mv)*od != len(rows) {
				t.Fatalf("%d multi-vector rows, want %d", len(mv), len(rows)/od)
			}
			worst := 1.0
			for r := range mv {
				worst = min(worst, fixtures.Cosine(mv[r], rows[r*od:(r+1)*od]))
			}
			if worst < minCos {
				t.Errorf("worst multi-vector row cosine %.9f < %g", worst, minCos)
			}
			t.Logf("1-cosine: embedding %.3g, worst multi-vector row %.3g", 1-cs, 1-worst)
		})
	}
	if ran < len(cases) {
		t.Errorf("only %d cases ran", ran)
	}
}

// fixtureRequest rebuilds the request a client would send for case c and
// the vector the engine's rules should give.
func fixtureRequest(t *testing.T, e *Engine, dir string, c *fixtureCase) (Request, []float32, float64, bool) {
	var req Request
	if c.Kind == "text" {
		task := c.Task + "." + c.PromptName
		if c.Task == "text-matching" {
			task = c.Task
		}
		req = Request{Task: task, Inputs: []Input{TextInput(c.InputText)}}
		return req, c.Embedding, 0.99999, true
	}
	var imgs [][]byte
	for _, im := range c.Images {
		b, err := os.ReadFile(filepath.Join(dir, im.File))
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, b)
		if im.MaxPixels != e.Info().MaxPixels && (req.MaxPixels == 0 || im.MaxPixels < req.MaxPixels) {
			req.MaxPixels = im.MaxPixels
		}
		if im.MinPixels != e.Info().MinPixels {
			req.MinPixels = im.MinPixels
		}
	}
	if strings.HasPrefix(c.Prompt, "<|im_start|>user\n") {
		// The reference image prompts: image-only inputs, pooled over the
		// vision span ("embedding"). Text inside the chat wrapper is not a
		// form the engine builds, but a template reproduces it.
		var in Input
		for _, b := range imgs {
			in.Parts = append(in.Parts, Image(b))
		}
		if c.Kind == "interleaved" {
			in.Template = c.Prompt
		}
		req.Inputs = []Input{in}
		return req, c.Embedding, 0.9999, true
	}
	// Interleaved: task prefix, then text and images in order; any input
	// with text pools all tokens.
	prompt := c.Prompt
	switch {
	case strings.HasPrefix(prompt, "Query: "):
		req.Task, prompt = "retrieval.query", strings.TrimPrefix(prompt, "Query: ")
	case strings.HasPrefix(prompt, "Passage: "):
		req.Task, prompt = "retrieval.passage", strings.TrimPrefix(prompt, "Passage: ")
	default:
		return req, nil, 0, false
	}
	var in Input
	for k, text := range strings.Split(prompt, visionSpan) {
		if k > 0 {
			in.Parts = append(in.Parts, Image(imgs[k-1]))
		}
		if text != "" {
			in.Parts = append(in.Parts, Text(text))
		}
	}
	req.Inputs = []Input{in}
	return req, c.Alternatives.AllTokens, 0.9999, true
}
