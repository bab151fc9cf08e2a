package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Request bodies are decoded strictly: a field a route does not know is a
// 400 that names it, never ignored, since a client that sends a field
// believes it had an effect (Cohere's "embedding_types": ["int8"] on a
// route that knew no such field used to return float vectors).
//
// Fields that other servers' clients send and that cannot change a result
// are declared on the request types, accepted and ignored on purpose (the
// compatibility list, also in the package documentation and docs/http-api.md):
//
//	model       every route: one model per server; its name is in the answer
//	user        OpenAI: an end-user id for the provider's abuse monitoring
//	keep_alive, options  Ollama: how long the model stays loaded (it always
//	            does) and generation options (an embedding has none)
//	priority    Cohere v2: a scheduling hint; vembed serves requests in
//	            arrival order, and a request's vectors do not depend on it

// decodeStrict decodes one JSON value into v, refusing fields v does not
// declare and data after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("invalid JSON: data after the value")
	}
	return nil
}

// unknownField returns the field name of encoding/json's unknown-field
// error.
func unknownField(err error) (string, bool) {
	rest, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	name, uerr := strconv.Unquote(rest)
	if uerr != nil {
		return rest, true
	}
	return name, true
}

// unknownFieldError is the refusal of an unknown field of a body of type v.
func unknownFieldError(field string, v any) *badRequest {
	return &badRequest{http.StatusBadRequest, field, "unknown_field",
		fmt.Sprintf("unknown field %s: this route takes %s", echo(field), strings.Join(jsonFields(v), ", "))}
}

// jsonFields lists the JSON names of a struct's fields (v a struct or a
// pointer to one), sorted.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// errOrNil turns a nil error into one that matches nothing, so that a
// check on an error that may be nil reads in one line.
func errOrNil(err error) error {
	if err == nil {
		return errors.New("")
	}
	return err
}
