package server

import (
	"cmp"
	"net/http"
	"reflect"
	"strings"

	"github.com/vembed/vembed/engine"
)

// routeDocs describes every route for the OpenAPI document; a test checks
// that it names exactly the registered routes.
var routeDocs = map[string]struct {
	summary string
	request string // a schema name in components, or ""
}{
	"POST /v1/embeddings":  {"Embeddings (OpenAI, Jina, vLLM messages, Infinity modality)", "EmbeddingsRequest"},
	"POST /embeddings":     {"Alias of /v1/embeddings", "EmbeddingsRequest"},
	"POST /pooling":        {"vLLM pooling: the /v1/embeddings body, answered as pooling data", "EmbeddingsRequest"},
	"GET /v1/models":       {"The served model", ""},
	"GET /v1/models/{id}":  {"One model card; 404 for another id", ""},
	"GET /health":          {"Liveness and readiness", ""},
	"GET /metrics":         {"Prometheus metrics", ""},
	"GET /openapi.json":    {"This document", ""},
	"POST /api/embed":      {"Ollama embed", "OllamaEmbedRequest"},
	"POST /api/embeddings": {"Ollama embeddings (older form)", "OllamaEmbeddingsRequest"},
	"POST /embed":          {"text-embeddings-inference embed", "TEIRequest"},
	"POST /embed_all":      {"text-embeddings-inference embed_all: the multi-vector rows", "TEIRequest"},
	"GET /info":            {"text-embeddings-inference model information", ""},
	"POST /v1/rerank":      {"Rerank documents for a query (Jina, Cohere)", "RerankRequest"},
	"POST /rerank":         {"Alias of /v1/rerank", "RerankRequest"},
	"POST /v2/rerank":      {"Cohere v2 rerank: results by relevance_score, best first", "CohereRerankRequest"},
	"POST /v2/embed":       {"Cohere v2 embed: texts, images or inputs; vectors keyed by embedding type", "CohereEmbedRequest"},
	"POST /v1/score":       {"Score text_2 against text_1 (vLLM)", "ScoreRequest"},
	"POST /score":          {"Alias of /v1/score", "ScoreRequest"},
}

// responseDocs names the schema of each route's 200 answer (in
// components); a test checks the answers against them.
var responseDocs = map[string]string{
	"POST /v1/embeddings":  "EmbeddingsResponse",
	"POST /embeddings":     "EmbeddingsResponse",
	"POST /pooling":        "PoolingResponse",
	"GET /v1/models":       "ModelList",
	"GET /v1/models/{id}":  "Model",
	"GET /health":          "Health",
	"POST /api/embed":      "OllamaEmbedResponse",
	"POST /api/embeddings": "OllamaEmbeddingsResponse",
	"POST /embed":          "Vectors",
	"POST /embed_all":      "MultiVectors",
	"GET /info":            "TEIInfo",
	"POST /v1/rerank":      "RerankResponse",
	"POST /rerank":         "RerankResponse",
	"POST /v2/rerank":      "CohereRerankResponse",
	"POST /v2/embed":       "CohereEmbedResponse",
	"POST /v1/score":       "ScoreResponse",
	"POST /score":          "ScoreResponse",
}

// responseSchemas are the components responseDocs names.
func responseSchemas() map[string]any {
	vector := map[string]any{"description": "numbers, or with encoding_format base64 a string, with binary/ubinary bytes as numbers, with a list of types an object of one encoding per type"}
	vectors := map[string]any{"type": "array", "items": vector}
	floats := map[string]any{"type": "array", "items": map[string]any{"type": "number"}}
	usage := obj(map[string]any{"prompt_tokens": integer, "total_tokens": integer})
	list := func(item map[string]any, extra map[string]any) map[string]any {
		props := map[string]any{"object": str, "model": str, "usage": usage, "data": map[string]any{"type": "array", "items": item}}
		for k, v := range extra {
			props[k] = v
		}
		return obj(props, "data")
	}
	model := map[string]any{"type": "object", "properties": map[string]any{}}
	for _, f := range modelCardFields() {
		model["properties"].(map[string]any)[f] = map[string]any{}
	}
	return map[string]any{
		"EmbeddingsResponse": list(obj(map[string]any{"object": str, "index": integer, "embedding": vector,
			"embeddings": desc(vectors, "return_multivector: one vector per token"), "span_embeddings": desc(vectors, "per_span: one vector per image span")}), nil),
		"PoolingResponse": list(obj(map[string]any{"object": str, "index": integer, "data": desc(map[string]any{}, "the vector, or the multi-vector rows")}),
			map[string]any{"id": str, "created": integer}),
		"ScoreResponse": list(obj(map[string]any{"object": str, "index": integer, "score": map[string]any{"type": "number"}}),
			map[string]any{"id": str, "created": integer}),
		"RerankResponse": map[string]any{"oneOf": []any{
			obj(map[string]any{"model": str, "object": str, "usage": usage, "results": map[string]any{"type": "array",
				"items": obj(map[string]any{"index": integer, "relevance_score": map[string]any{"type": "number"}, "document": map[string]any{}})}}, "results"),
			desc(map[string]any{"type": "array", "items": obj(map[string]any{"index": integer, "score": map[string]any{"type": "number"}, "text": map[string]any{}})},
				"text-embeddings-inference's answer, to a request with texts"),
		}},
		"CohereEmbedResponse": obj(map[string]any{"id": str, "response_type": desc(str, "embeddings_by_type"),
			"embeddings": desc(obj(cohereTypes()), "one list of vectors per embedding type asked, in input order"),
			"texts":      map[string]any{"type": "array", "items": str}, "meta": cohereMetaSchema}, "id", "embeddings"),
		"CohereRerankResponse": obj(map[string]any{"id": str, "meta": cohereMetaSchema, "results": map[string]any{"type": "array",
			"items": obj(map[string]any{"index": integer, "relevance_score": map[string]any{"type": "number"}}, "index", "relevance_score")}}, "results"),
		"ModelList":                obj(map[string]any{"object": str, "data": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Model"}}}, "data"),
		"Model":                    model,
		"Health":                   obj(map[string]any{"status": str}),
		"OllamaEmbedResponse":      obj(map[string]any{"model": str, "embeddings": map[string]any{"type": "array", "items": floats}, "total_duration": integer, "load_duration": integer, "prompt_eval_count": integer}),
		"OllamaEmbeddingsResponse": obj(map[string]any{"embedding": floats}),
		"Vectors":                  map[string]any{"type": "array", "items": floats},
		"MultiVectors":             map[string]any{"type": "array", "items": map[string]any{"type": "array", "items": floats}},
		"TEIInfo": obj(map[string]any{"model_id": str, "model_type": map[string]any{}, "max_input_length": integer, "max_client_batch_size": integer,
			"max_concurrent_requests": integer, "max_batch_tokens": integer, "version": str, "prompts": map[string]any{"type": "array", "items": str}}),
	}
}

// cohereTypes are the properties of Cohere's embeddings object: one list of
// vectors per encoding.
func cohereTypes() map[string]any {
	ints := map[string]any{"type": "array", "items": map[string]any{"type": "array", "items": integer}}
	return map[string]any{
		"float":   map[string]any{"type": "array", "items": map[string]any{"type": "array", "items": map[string]any{"type": "number"}}},
		"base64":  desc(map[string]any{"type": "array", "items": str}, "standard base64 of the little-endian float32 array"),
		"int8":    desc(ints, "round(x·127/max|x|) per value: -127..127"),
		"uint8":   desc(ints, "int8 + 128: 1..255"),
		"binary":  desc(ints, "one bit per dimension (1 when > 0), 8 per byte, first dimension in the most significant bit, as the byte - 128"),
		"ubinary": desc(ints, "the same bytes, 0..255"),
	}
}

var cohereMetaSchema = obj(map[string]any{"api_version": obj(map[string]any{"version": str}),
	"billed_units": obj(map[string]any{"input_tokens": integer, "images": integer, "search_units": integer}),
	"tokens":       obj(map[string]any{"input_tokens": integer})})

// modelCardFields are the JSON names of a model card's fields.
func modelCardFields() []string {
	t := reflect.TypeOf(modelCard{})
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}

// inputSchema is the schema of one input element (see ParseInputs).
var inputSchema = map[string]any{
	"oneOf": []any{
		map[string]any{"type": "string", "description": "a text"},
		map[string]any{"$ref": "#/components/schemas/Item"},
		map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Item"}, "description": "parts of one interleaved input"},
	},
}

func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// desc returns schema with a description.
func desc(schema map[string]any, d string) map[string]any {
	out := map[string]any{"description": d}
	for k, v := range schema {
		out[k] = v
	}
	return out
}

var (
	enc      = map[string]any{"enum": []any{"float", "base64", "binary", "ubinary", "int8", "uint8"}}
	anything = map[string]any{}

	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "integer"}
	boolean = map[string]any{"type": "boolean"}
	inputs  = map[string]any{"oneOf": []any{inputSchema, map[string]any{"type": "array", "items": inputSchema}}}
)

// openapiDoc is the OpenAPI 3.1 document of the routes.
func (h *Handler) openapiDoc() map[string]any {
	paths := map[string]any{}
	for _, route := range h.routes {
		method, path, _ := strings.Cut(route, " ")
		d, ok := routeDocs[route]
		if !ok {
			d = optionalRouteDocs[route]
		}
		ok200 := map[string]any{"description": "OK"}
		if name := cmp.Or(responseDocs[route], searchResponseDocs[route]); name != "" {
			ok200["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + name}}}
		}
		op := map[string]any{
			"summary": d.summary,
			"responses": map[string]any{
				"200":     ok200,
				"default": map[string]any{"description": "An error", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}},
			},
		}
		if d.request != "" {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + d.request}}}}
		}
		if route == "GET /{$}" {
			// The search page: "/{$}" is the mux's way to say "/" alone.
			path = "/"
			ok200["content"] = map[string]any{"text/html": map[string]any{}}
		}
		if route == "GET /health" || route == "GET /{$}" || (route == "GET /metrics" && h.opts.MetricsPublic) {
			op["security"] = []any{} // served without a key
		}
		if strings.Contains(path, "{id}") {
			op["parameters"] = []any{map[string]any{"name": "id", "in": "path", "required": true, "schema": str}}
		}
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[strings.ToLower(method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "vembed", "version": version(), "description": "Embeddings of texts, images and interleaved documents; see the server package documentation."},
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": mergeSchemas(mergeSchemas(responseSchemas(), searchSchemas()), map[string]any{
				"Item": obj(map[string]any{
					"text": str, "image": map[string]any{"type": "string", "description": "base64, data URI, or http(s) URL when the server fetches URLs"},
					"type": str, "image_url": obj(map[string]any{"url": str}), "content": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Item"}},
					"template": str, "images": map[string]any{"type": "array", "items": str},
				}),
				"EmbeddingsRequest": obj(map[string]any{
					"input": inputs, "messages": map[string]any{"type": "array", "items": obj(map[string]any{"role": str, "content": map[string]any{}}),
						"description": "vLLM's chat form: the user messages' content parts make one input"},
					"model": str, "user": str, "task": str,
					"instruction":     desc(str, "the instruction of models that take one (GME, Qwen3-VL-Embedding)"),
					"dimensions":      desc(integer, "Matryoshka size; refused with return_multivector"),
					"encoding_format": enc, "embedding_type": map[string]any{"oneOf": []any{enc, map[string]any{"type": "array", "items": enc}}},
					"return_multivector": boolean, "per_span": boolean,
					"pool_factor": desc(integer, "with return_multivector: hierarchical token pooling to max(n/pool_factor, 1) vectors"),
					"normalized":  boolean, "normalize": boolean,
					"truncate":      desc(boolean, "cut texts over the model's limit instead of refusing them"),
					"late_chunking": desc(boolean, "refused when true (not supported)"),
					"min_pixels":    desc(integer, "smallest resized image area, within the model's bounds (GET /v1/models: min_pixels..max_pixels)"),
					"max_pixels":    desc(integer, "largest resized image area, within the model's bounds (GET /v1/models: min_pixels..max_pixels)"),
					"modality":      desc(map[string]any{"enum": []any{"text", "image"}}, "Infinity's: image makes every input string an image"),
				}),
				"OllamaEmbedRequest":      obj(map[string]any{"model": str, "input": inputs, "truncate": boolean, "dimensions": integer, "keep_alive": anything, "options": anything}, "input"),
				"OllamaEmbeddingsRequest": obj(map[string]any{"model": str, "prompt": str, "keep_alive": anything, "options": anything}, "prompt"),
				"TEIRequest":              obj(map[string]any{"inputs": inputs, "normalize": boolean, "truncate": boolean, "dimensions": integer, "prompt_name": desc(str, "one of the model's tasks")}, "inputs"),
				"RerankRequest": obj(map[string]any{"model": str, "query": inputSchema, "documents": map[string]any{"oneOf": []any{
					map[string]any{"type": "array", "items": inputSchema, "maxItems": engine.MaxRerankDocuments},
					desc(obj(map[string]any{"content": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Item"}}}, "content"), "vLLM's multimodal form: each part is one document")}},
					"top_n": integer, "return_documents": boolean, "multivector": desc(boolean, "MaxSim of multi-vectors instead of cosine (embedding models)"),
					"instruction": desc(str, "a reranker's instruction, or for embedding models that take one, the query's"),
					"texts":       desc(map[string]any{"type": "array", "items": inputSchema}, "text-embeddings-inference's documents; the answer is then its bare list of {index, score, text}"),
					"return_text": boolean, "truncate": desc(boolean, "cut texts over the limit (embedding models)"),
					"raw_scores": desc(boolean, "a reranker model's logit instead of its probability")}, "query"),
				"CohereEmbedRequest": obj(map[string]any{"model": desc(str, "accepted and ignored: one model per server"),
					"input_type": desc(map[string]any{"enum": []any{"search_query", "search_document", "classification", "clustering", "image"}},
						"mapped onto the model's tasks or instructions; refused where the model has no such notion (absent: the model's default)"),
					"texts":            map[string]any{"type": "array", "items": str},
					"images":           desc(map[string]any{"type": "array", "items": str}, "data URIs (or http(s) URLs when the server fetches URLs)"),
					"inputs":           desc(map[string]any{"type": "array", "items": inputSchema}, `{"content": [{"type": "text", "text"}, {"type": "image_url", "image_url": {"url"}}]} per input, or any element form of /v1/embeddings' input`),
					"embedding_types":  map[string]any{"type": "array", "items": enc, "description": "default [float]"},
					"output_dimension": desc(integer, "Matryoshka size, as dimensions on /v1/embeddings"),
					"max_tokens":       desc(integer, "a lower token limit per input prompt"),
					"truncate":         desc(map[string]any{"enum": []any{"NONE", "END", "START"}}, "END (default) cuts the end of long text inputs, START drops the first tokens of their text (the model's prompt around it is kept), NONE refuses them"),
					"priority":         desc(integer, "accepted and ignored: requests are served in arrival order")}),
				"CohereRerankRequest": obj(map[string]any{"model": desc(str, "accepted and ignored: one model per server"), "query": inputSchema,
					"documents":          map[string]any{"type": "array", "items": inputSchema, "maxItems": engine.MaxRerankDocuments},
					"top_n":              desc(integer, "at least 1; absent: every document"),
					"max_tokens_per_doc": desc(integer, "documents are cut to this many tokens (default 4096, or the model's limit when lower); refused by reranker models"),
					"priority":           desc(integer, "accepted and ignored: requests are served in arrival order")}, "query", "documents"),
				"ScoreRequest": obj(map[string]any{"model": str, "text_1": inputs, "text_2": inputs, "multivector": boolean}, "text_1", "text_2"),
				"Error": obj(map[string]any{"error": obj(map[string]any{"message": str, "type": str,
					"param": map[string]any{"type": []any{"string", "null"}}, "code": map[string]any{"type": []any{"string", "null"}}, "request_id": str})}),
			}),
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
}

// mergeSchemas returns a with b's entries added.
func mergeSchemas(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// openapi is GET /openapi.json.
func (h *Handler) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.openapiDoc())
}

// Route is one route a Handler serves.
type Route struct {
	Pattern string // "METHOD /path", as registered
	Summary string // as /openapi.json gives it
	// AliasOf is the path of the route this one repeats under another
	// name ("" for none).
	AliasOf string
}

// Routes lists the routes h serves, in registration order.
func (h *Handler) Routes() []Route {
	out := make([]Route, len(h.routes))
	for i, p := range h.routes {
		d, ok := routeDocs[p]
		if !ok {
			d = optionalRouteDocs[p]
		}
		out[i] = Route{Pattern: p, Summary: d.summary}
		if rest, ok := strings.CutPrefix(d.summary, "Alias of "); ok {
			out[i].AliasOf = strings.Fields(rest)[0]
		}
	}
	return out
}
