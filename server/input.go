package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/clip"
)

// ImageSource turns the string of an "image" field into encoded image bytes.
// The server's source (DecodeImageString) accepts base64 and data URIs; the
// command line also accepts file paths.
type ImageSource func(s string) ([]byte, error)

// ParseInputs parses the "input" field of an embeddings request. Accepted
// forms, each element of a list being one input:
//
//	"text"                                    one text input
//	["a", "b"]                                texts
//	[{"text": "a"}, {"image": "<base64>"}]    Jina items
//	[{"content": [{"text": "a"}, {"image": "…"}]}]  one interleaved input
//	[[{"text": "a"}, {"image": "…"}]]         the same, as a bare list of parts
//
// Content parts may also use the OpenAI chat form {"type": "text", "text": …}
// and {"type": "image_url", "image_url": {"url": …}}. An expert item
// {"template": "…", "images": ["…", …]} gives the whole prompt, each
// <|vision_start|><|image_pad|><|vision_end|> in it standing for the next
// image. Token-id arrays are refused: a text is always tokenized.
func ParseInputs(raw json.RawMessage, img ImageSource) ([]engine.Input, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, inputErr("input", engine.CodeEmpty, "input is required")
	}
	if raw[0] != '[' {
		in, err := parseItem(raw, "input", img)
		if err != nil {
			return nil, err
		}
		return []engine.Input{in}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, inputErr("input", engine.CodeInvalid, "not a valid list: %v", err)
	}
	if len(elems) == 0 {
		return nil, inputErr("input", engine.CodeEmpty, "input is an empty list")
	}
	if isNumber(elems[0]) {
		return nil, inputErr("input", engine.CodeUnsupported, "token-id input is not supported; send text")
	}
	ins := make([]engine.Input, len(elems))
	for i, e := range elems {
		in, err := parseItem(e, fmt.Sprintf("input[%d]", i), img)
		if err != nil {
			return nil, err
		}
		ins[i] = in
	}
	return ins, nil
}

// ParseInput parses one input in any of the element forms of ParseInputs
// (a string, an item object, or a list of parts).
func ParseInput(raw json.RawMessage, img ImageSource) (engine.Input, error) {
	return parseItem(bytes.TrimSpace(raw), "input", img)
}

// item is the union of the object forms of an input element and of a
// content part; which fields may be set is checked after decoding.
type item struct {
	Type     string            `json:"type"`
	Text     *string           `json:"text"`
	Image    *string           `json:"image"`
	ImageURL *imageURL         `json:"image_url"`
	Content  []json.RawMessage `json:"content"`
	Template *string           `json:"template"`
	Images   []string          `json:"images"`
}

type imageURL struct {
	URL string `json:"url"`
}

func parseItem(raw json.RawMessage, param string, img ImageSource) (engine.Input, error) {
	if len(raw) == 0 {
		return engine.Input{}, inputErr(param, engine.CodeEmpty, "empty item")
	}
	switch raw[0] {
	case '"':
		p, err := parseText(raw, param)
		return engine.Input{Parts: []engine.Part{p}}, err
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return engine.Input{}, inputErr(param, engine.CodeInvalid, "not a valid list of parts: %v", err)
		}
		if len(parts) > 0 && isNumber(parts[0]) {
			return engine.Input{}, inputErr(param, engine.CodeUnsupported, "token-id input is not supported; send text")
		}
		return parseParts(parts, param, img)
	case '{':
		var it item
		if err := decodeStrict(raw, &it); err != nil {
			return engine.Input{}, itemError(param, "not a valid item", err)
		}
		if it.Template != nil {
			return it.templated(param, img)
		}
		if it.Images != nil {
			return engine.Input{}, inputErr(param, engine.CodeInvalid, `"images" needs a "template"`)
		}
		if it.Content != nil {
			if it.Text != nil || it.Image != nil || it.ImageURL != nil {
				return engine.Input{}, inputErr(param, engine.CodeInvalid, `an item has either "content" or one of "text", "image"`)
			}
			return parseParts(it.Content, param+".content", img)
		}
		p, err := it.part(param, img)
		return engine.Input{Parts: []engine.Part{p}}, err
	}
	return engine.Input{}, inputErr(param, engine.CodeInvalid, "must be a string, an object or a list of parts")
}

func parseParts(parts []json.RawMessage, param string, img ImageSource) (engine.Input, error) {
	if len(parts) == 0 {
		return engine.Input{}, inputErr(param, engine.CodeEmpty, "no parts")
	}
	in := engine.Input{Parts: make([]engine.Part, len(parts))}
	for j, raw := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '"' {
			p, err := parseText(raw, pp)
			if err != nil {
				return engine.Input{}, err
			}
			in.Parts[j] = p
			continue
		}
		var it item
		if err := decodeStrict(raw, &it); err != nil {
			return engine.Input{}, itemError(pp, "a part must be an object with \"text\" or \"image\"", err)
		}
		if it.Content != nil || it.Template != nil || it.Images != nil {
			return engine.Input{}, inputErr(pp, engine.CodeInvalid, "parts cannot be nested")
		}
		p, err := it.part(pp, img)
		if err != nil {
			return engine.Input{}, err
		}
		in.Parts[j] = p
	}
	return in, nil
}

func parseText(raw json.RawMessage, param string) (engine.Part, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return engine.Part{}, inputErr(param, engine.CodeInvalid, "not a valid string: %v", err)
	}
	if s == "" {
		return engine.Part{}, inputErr(param, engine.CodeEmpty, "empty text")
	}
	return engine.Text(s), nil
}

// templated returns the input of a {"template", "images"} item.
func (it *item) templated(param string, img ImageSource) (engine.Input, error) {
	if it.Text != nil || it.Image != nil || it.ImageURL != nil || it.Content != nil {
		return engine.Input{}, inputErr(param, engine.CodeInvalid, `a "template" item takes only "images" besides it`)
	}
	if *it.Template == "" {
		return engine.Input{}, inputErr(param+".template", engine.CodeEmpty, "empty template")
	}
	in := engine.Input{Template: *it.Template}
	for k, s := range it.Images {
		pp := fmt.Sprintf("%s.images[%d]", param, k)
		data, err := img(s)
		if err != nil {
			return engine.Input{}, &engine.InputError{Param: pp, Code: engine.CodeBadImage, Err: err}
		}
		if len(data) == 0 {
			return engine.Input{}, inputErr(pp, engine.CodeEmpty, "empty image")
		}
		in.Parts = append(in.Parts, engine.Image(data))
	}
	return in, nil
}

// part returns the single text or image the object holds.
func (it *item) part(param string, img ImageSource) (engine.Part, error) {
	var src *string
	switch {
	case it.ImageURL != nil:
		src = &it.ImageURL.URL
	case it.Image != nil:
		src = it.Image
	}
	n := 0
	for _, set := range []bool{it.Text != nil, it.Image != nil, it.ImageURL != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return engine.Part{}, inputErr(param, engine.CodeInvalid, `an item needs exactly one of "text", "image" or "content"`)
	case it.Type != "" && it.Type != "text" && it.Type != "image" && it.Type != "image_url":
		return engine.Part{}, inputErr(param, engine.CodeInvalid, "unknown part type %s (want text, image or image_url)", echo(it.Type))
	case it.Text != nil:
		if *it.Text == "" {
			return engine.Part{}, inputErr(param, engine.CodeEmpty, "empty text")
		}
		return engine.Text(*it.Text), nil
	}
	data, err := img(*src)
	if err != nil {
		return engine.Part{}, &engine.InputError{Param: param, Code: engine.CodeBadImage, Err: err}
	}
	if len(data) == 0 {
		return engine.Part{}, inputErr(param, engine.CodeEmpty, "empty image")
	}
	return engine.Image(data), nil
}

// DecodeImageString decodes an image given as a data URI
// ("data:image/png;base64,…") or as bare standard or URL-safe base64, with or
// without padding. URLs are refused: fetching them is the Handler's, under
// its imagefetch policy.
func DecodeImageString(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, errors.New("empty image string")
	case isURL(s):
		return nil, errors.New("image URLs are not fetched by this server (see vembed serve --allow-image-urls); send the image as base64 or a data URI")
	case strings.HasPrefix(s, "data:"):
		meta, payload, ok := strings.Cut(s[len("data:"):], ",")
		if !ok {
			return nil, errors.New("malformed data URI: no comma")
		}
		if !strings.HasSuffix(meta, ";base64") {
			return nil, errors.New("data URI must be base64-encoded (data:image/png;base64,…)")
		}
		if mt := strings.TrimSuffix(meta, ";base64"); mt != "" && !strings.HasPrefix(mt, "image/") && mt != "application/octet-stream" {
			return nil, fmt.Errorf("data URI media type %s is not an image", echo(mt))
		}
		s = payload
	}
	return decodeBase64(s)
}

func decodeBase64(s string) ([]byte, error) {
	var firstErr error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("broken base64 image data: %v", firstErr)
}

func isNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// itemError is the error of an item or part that did not decode: an
// unknown field is named (with the fields items take), anything else is
// described after what.
func itemError(param, what string, err error) *engine.InputError {
	if f, ok := unknownField(err); ok {
		return inputErr(param, "unknown_field", "unknown field %s (an item or part takes %s)", echo(f), strings.Join(jsonFields(item{}), ", "))
	}
	return inputErr(param, engine.CodeInvalid, "%s: %v", what, typeMessage(err))
}

func inputErr(param, code, format string, args ...any) *engine.InputError {
	return &engine.InputError{Param: param, Code: code, Err: fmt.Errorf(format, args...)}
}

// typeMessage rewords a JSON type error so it names the field and the
// expected type without Go type names.
func typeMessage(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Errorf("field %s must be %s, got %s", echo(te.Field), jsonKind(te.Type.Kind().String()), clip.String(te.Value, maxEchoBytes))
		}
		return fmt.Errorf("expected %s, got %s", jsonKind(te.Type.Kind().String()), clip.String(te.Value, maxEchoBytes))
	}
	return err
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	}
	return goKind
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}
