package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
)

type modelCase struct {
	Prompt             string   `json:"prompt"`
	Task               string   `json:"task"`
	PromptName         string   `json:"prompt_name"`
	InputText          string   `json:"input_text"`
	TokenIDsUnexpanded []int32  `json:"token_ids_unexpanded"`
	TokenIDs           []int32  `json:"token_ids"`
	VisionSpans        [][2]int `json:"vision_spans"`
	ImageTokenRanges   [][2]int `json:"image_token_ranges"`
	Images             []struct {
		NMergedTokens int `json:"n_merged_tokens"`
	} `json:"images"`
}

// smallVocabTokenizer returns the tokenizer of the tiny model of the
// fixtures (512-token vocabulary) and its end-to-end cases.
func smallVocabTokenizer(t *testing.T) (*Tokenizer, map[string]modelCase) {
	t.Helper()
	dir := fixtures.Dir(t, "model")
	f, err := gguf.Open(filepath.Join(dir, "qwen25vl-tiny-sv-lm-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "cases", "*", "case.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases in %s (%v)", dir, err)
	}
	cases := map[string]modelCase{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c modelCase
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cases[filepath.Base(filepath.Dir(p))] = c
	}
	return tok, cases
}

const visionMarkup = visionStart + imagePad + visionEnd

// jinaParts recovers the task and parts of a case whose prompt has the
// structure JinaV4Prompt builds; ok is false for other prompts.
func jinaParts(c modelCase) (task Task, parts []Part, ok bool) {
	var imgs []int
	for _, im := range c.Images {
		imgs = append(imgs, im.NMergedTokens)
	}
	switch {
	case len(imgs) == 0:
		task, err := ParseTask(c.Task + "." + c.PromptName)
		return task, []Part{{Text: c.InputText}}, err == nil
	case strings.HasPrefix(c.Prompt, imStart):
		chat := imStart + "user\n" + strings.Repeat(visionMarkup, len(imgs))
		if len(imgs) == 1 {
			chat += "Describe the image."
		}
		if c.Prompt != chat+imEnd+"\n" {
			return "", nil, false
		}
		for _, n := range imgs {
			parts = append(parts, Part{ImageTokens: n})
		}
		return TaskRetrievalPassage, parts, true
	}
	task = TaskRetrievalQuery
	rest, ok := strings.CutPrefix(c.Prompt, "Query: ")
	if !ok {
		task = TaskRetrievalPassage
		if rest, ok = strings.CutPrefix(c.Prompt, "Passage: "); !ok {
			return "", nil, false
		}
	}
	texts := strings.Split(rest, visionMarkup)
	for i, s := range texts {
		if i > 0 {
			parts = append(parts, Part{ImageTokens: imgs[i-1]})
		}
		parts = append(parts, Part{Text: s})
	}
	return task, parts, len(texts) == len(imgs)+1
}

// TestPromptFixtures checks JinaV4Prompt and RawPrompt against the ids and
// spans of the end-to-end model cases.
func TestPromptFixtures(t *testing.T) {
	tok, cases := smallVocabTokenizer(t)
	jina := 0
	for name, c := range cases {
		var imgs []int
		for _, im := range c.Images {
			imgs = append(imgs, im.NMergedTokens)
		}
		if got := tok.Encode(c.Prompt, true); !slices.Equal(got, c.TokenIDsUnexpanded) {
			t.Errorf("%s: Encode: got %v, want %v", name, got, c.TokenIDsUnexpanded)
		}
		raw, err := tok.RawPrompt(c.Prompt, imgs)
		if err != nil {
			t.Errorf("%s: RawPrompt: %v", name, err)
		} else {
			checkPrompt(t, name+" raw", raw, c)
		}
		task, parts, ok := jinaParts(c)
		if !ok {
			t.Logf("%s: not a JinaV4Prompt structure; checked as a raw prompt only", name)
			continue
		}
		p, err := tok.JinaV4Prompt(task, parts)
		if err != nil {
			t.Errorf("%s: JinaV4Prompt: %v", name, err)
			continue
		}
		checkPrompt(t, name, p, c)
		wantKind := Interleaved
		switch {
		case len(imgs) == 0:
			wantKind = TextOnly
		case strings.HasPrefix(c.Prompt, imStart):
			wantKind = ImageOnly
		}
		if p.Kind != wantKind {
			t.Errorf("%s: kind %v, want %v", name, p.Kind, wantKind)
		}
		jina++
	}
	t.Logf("%d cases as raw prompts, %d as JinaV4Prompt", len(cases), jina)
}

func checkPrompt(t *testing.T, name string, p *Prompt, c modelCase) {
	t.Helper()
	want := c.TokenIDs
	if want == nil {
		want = c.TokenIDsUnexpanded
	}
	if !slices.Equal(p.IDs, want) {
		t.Errorf("%s: ids\n got %v\nwant %v", name, p.IDs, want)
	}
	if len(p.Images) != len(c.VisionSpans) || len(p.Images) != len(c.ImageTokenRanges) {
		t.Fatalf("%s: %d images, want %d", name, len(p.Images), len(c.VisionSpans))
	}
	for k, sp := range p.Images {
		if sp.VisionStart != c.VisionSpans[k][0] || sp.VisionEnd != c.VisionSpans[k][1] ||
			sp.First != c.ImageTokenRanges[k][0] || sp.End != c.ImageTokenRanges[k][1] {
			t.Errorf("%s: image %d span %+v, want vision %v pads %v", name, k, sp, c.VisionSpans[k], c.ImageTokenRanges[k])
		}
	}
}

func TestPromptErrors(t *testing.T) {
	tok, _ := smallVocabTokenizer(t)
	for _, tc := range []struct {
		name  string
		parts []Part
		want  error
	}{
		{"no parts", nil, ErrPrompt},
		{"negative image", []Part{{ImageTokens: -1}}, ErrPrompt},
		{"text and image in one part", []Part{{Text: "x", ImageTokens: 4}}, ErrPrompt},
		{"too many image tokens", []Part{{ImageTokens: MaxPromptTokens}, {ImageTokens: 1}}, ErrPrompt},
		{"vision start in text", []Part{{Text: "look <|vision_start|>"}}, ErrVisionToken},
		{"image pad in interleaved text", []Part{{ImageTokens: 4}, {Text: "<|image_pad|>"}}, ErrVisionToken},
		{"marker split across parts", []Part{{Text: "<|vision_"}, {Text: "end|>"}}, ErrVisionToken},
		{"video pad", []Part{{Text: "a<|video_pad|>b"}}, ErrVisionToken},
	} {
		_, err := tok.JinaV4Prompt(TaskRetrievalQuery, tc.parts)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := tok.JinaV4Prompt("summarize", []Part{{Text: "x"}}); !errors.Is(err, ErrPrompt) {
		t.Errorf("unknown task: error %v", err)
	}
	for _, tc := range []struct {
		template string
		images   []int
	}{
		{"no images here", []int{4}},
		{visionMarkup + visionMarkup, []int{4}},
		{visionMarkup, nil},
		{visionMarkup, []int{0}},
		{visionStart + "x" + imagePad + visionEnd, []int{4}},
		{imagePad, []int{4}},
		{visionStart + videoPad + visionEnd, []int{4}},
		{visionMarkup, []int{MaxPromptTokens + 1}},
	} {
		if _, err := tok.RawPrompt(tc.template, tc.images); !errors.Is(err, ErrPrompt) {
			t.Errorf("RawPrompt(%q, %v): error %v, want ErrPrompt", tc.template, tc.images, err)
		}
	}
}

// TestPromptStructure checks what the fixtures do not cover: joined text
// parts, special tokens in user text, spans of several interleaved images.
func TestPromptStructure(t *testing.T) {
	tok, _ := smallVocabTokenizer(t)
	joined, err := tok.JinaV4Prompt(TaskTextMatching, []Part{{Text: "sunset over "}, {Text: ""}, {Text: "the beach"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := tok.Encode("Query: sunset over the beach", true); !slices.Equal(joined.IDs, want) || joined.Kind != TextOnly {
		t.Errorf("joined text: %v %v, want %v", joined.IDs, joined.Kind, want)
	}
	im, _ := tok.TokenID(imStart)
	sp, err := tok.JinaV4Prompt(TaskCodePassage, []Part{{Text: "a <|im_start|> b"}})
	if err != nil || !slices.Contains(sp.IDs, im) {
		t.Errorf("special token in user text: %v, %v; want %d among the ids", sp, err, im)
	}
	p, err := tok.JinaV4Prompt(TaskRetrievalQuery, []Part{{ImageTokens: 2}, {Text: "between"}, {ImageTokens: 3}})
	if err != nil {
		t.Fatal(err)
	}
	pad, _ := tok.TokenID(imagePad)
	vs, _ := tok.TokenID(visionStart)
	ve, _ := tok.TokenID(visionEnd)
	if p.Kind != Interleaved || len(p.Images) != 2 {
		t.Fatalf("kind %v, %d images", p.Kind, len(p.Images))
	}
	for k, n := range []int{2, 3} {
		s := p.Images[k]
		if p.IDs[s.VisionStart] != vs || p.IDs[s.VisionEnd] != ve || s.First != s.VisionStart+1 || s.End != s.VisionEnd || s.End-s.First != n {
			t.Errorf("image %d: bad span %+v", k, s)
		}
		for _, id := range p.IDs[s.First:s.End] {
			if id != pad {
				t.Errorf("image %d: id %d inside the placeholder span", k, id)
			}
		}
	}
	if prefix := tok.Encode("Query: ", true); !slices.Equal(p.IDs[:len(prefix)], prefix) {
		t.Errorf("interleaved prompt starting with an image does not start with the prefix: %v", p.IDs)
	}
}

func TestParseTask(t *testing.T) {
	for in, want := range map[string]Task{
		"": TaskRetrievalQuery, "retrieval": TaskRetrievalQuery, "retrieval.passage": TaskRetrievalPassage,
		"code": TaskCodeQuery, "code.passage": TaskCodePassage, "text-matching.passage": TaskTextMatching,
	} {
		got, err := ParseTask(in)
		if err != nil || got != want {
			t.Errorf("ParseTask(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseTask("retrieval.document"); err == nil {
		t.Error("ParseTask accepted retrieval.document")
	}
	if TaskTextMatching.Prefix() != "Query: " || TaskCodePassage.Prefix() != "Passage: " || TaskCodePassage.Adapter() != "code" {
		t.Error("task prefix or adapter wrong")
	}
}
