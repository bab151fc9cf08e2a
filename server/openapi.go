package server

import (
	"net/http"
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
	"POST /v2/rerank":      {"Alias of /v1/rerank (Cohere v2 path)", "RerankRequest"},
	"POST /v1/score":       {"Score text_2 against text_1 (vLLM)", "ScoreRequest"},
	"POST /score":          {"Alias of /v1/score", "ScoreRequest"},
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
	enc      = map[string]any{"enum": []any{"float", "base64", "binary", "ubinary"}}
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
		op := map[string]any{
			"summary": d.summary,
			"responses": map[string]any{
				"200":     map[string]any{"description": "OK"},
				"default": map[string]any{"description": "An error", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}},
			},
		}
		if d.request != "" {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + d.request}}}}
		}
		if route == "GET /health" || (route == "GET /metrics" && h.opts.MetricsPublic) {
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
			"schemas": map[string]any{
				"Item": obj(map[string]any{
					"text": str, "image": map[string]any{"type": "string", "description": "base64, data URI, or http(s) URL when the server fetches URLs"},
					"type": str, "image_url": obj(map[string]any{"url": str}), "content": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Item"}},
					"template": str, "images": map[string]any{"type": "array", "items": str},
				}),
				"EmbeddingsRequest": obj(map[string]any{
					"input": inputs, "messages": map[string]any{"type": "array", "items": obj(map[string]any{"role": str, "content": map[string]any{}}),
						"description": "vLLM's chat form: the user messages' content parts make one input"},
					"model": str, "user": str, "task": str,
					"instruction":     desc(str, "the instruction of models that take one (Qwen3-VL-Embedding)"),
					"dimensions":      desc(integer, "Matryoshka size; refused with return_multivector"),
					"encoding_format": enc, "embedding_type": map[string]any{"oneOf": []any{enc, map[string]any{"type": "array", "items": enc}}},
					"return_multivector": boolean, "per_span": boolean,
					"pool_factor": desc(integer, "with return_multivector: hierarchical token pooling to max(n/pool_factor, 1) vectors"),
					"normalized":  boolean, "normalize": boolean,
					"truncate":      desc(boolean, "cut texts over the model's limit instead of refusing them"),
					"late_chunking": desc(boolean, "refused when true (not supported)"),
					"min_pixels":    integer, "max_pixels": integer,
					"modality": desc(map[string]any{"enum": []any{"text", "image"}}, "Infinity's: image makes every input string an image"),
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
				"ScoreRequest": obj(map[string]any{"model": str, "text_1": inputs, "text_2": inputs, "multivector": boolean}, "text_1", "text_2"),
				"Error": obj(map[string]any{"error": obj(map[string]any{"message": str, "type": str,
					"param": map[string]any{"type": []any{"string", "null"}}, "code": map[string]any{"type": []any{"string", "null"}}})}),
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
}

// openapi is GET /openapi.json.
func (h *Handler) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.openapiDoc())
}
