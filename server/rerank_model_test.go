package server

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/fixtures"
)

// TestRerankWithRerankerModel: with a reranker model (the Qwen3-VL-Reranker
// fixture) /v1/rerank and /v1/score give the model's P(yes), equal to the
// reference's score.
func TestRerankWithRerankerModel(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl")
	_, url := serveEngine(t, engine.Config{Model: filepath.Join(dir, "qwen3vl-tiny-reranker-F32.gguf"), MMProj: filepath.Join(dir, "mmproj-qwen3vl-tiny-F32.gguf")})
	const want = 0.553164 // cases/q3rerank01: query "sunset"
	var rr struct {
		Results []struct {
			Index          int
			RelevanceScore float64 `json:"relevance_score"`
		}
	}
	call(t, url+"/v1/rerank", `{"query":"sunset","documents":["The sun sets over the sea.","The sun sets over the sea."]}`, &rr)
	if len(rr.Results) != 2 || math.Abs(rr.Results[0].RelevanceScore-want) > 1e-4 || rr.Results[0].RelevanceScore != rr.Results[1].RelevanceScore {
		t.Errorf("rerank: %+v, want %v twice", rr.Results, want)
	}
	var sc struct{ Data []struct{ Score float64 } }
	call(t, url+"/v1/score", `{"text_1":"sunset","text_2":"The sun sets over the sea."}`, &sc)
	if len(sc.Data) != 1 || math.Abs(sc.Data[0].Score-want) > 1e-4 {
		t.Errorf("score: %+v", sc.Data)
	}
}
