package recipe

import (
	"strings"
	"testing"
)

// TestInputTypes: each recipe maps every input type onto a task its Task
// accepts (or an instruction), or refuses it with a message saying what to
// send instead; unknown input types are refused.
func TestInputTypes(t *testing.T) {
	for _, c := range []struct {
		r       Recipe
		refused []string
	}{
		{JinaV4{}, nil},
		{ColQwen{QueryPrefix: DefaultQueryPrefix}, []string{InputClassification, InputClustering}},
		{GME{}, []string{InputClassification, InputClustering}},
		{Qwen3MultiVector{}, []string{InputClassification, InputClustering}},
		{Qwen3VLEmbedding{}, []string{InputClassification, InputClustering}},
		{Qwen3VLReranker{}, InputTypes},
	} {
		for _, name := range InputTypes {
			p, err := ForInputType(c.r, name)
			refused := false
			for _, n := range c.refused {
				refused = refused || n == name
			}
			if refused {
				if err == nil || !(strings.Contains(err.Error(), "/v") || strings.Contains(err.Error(), name)) {
					t.Errorf("%s %s: %v, want a refusal naming the route to use or the type", c.r.Name(), name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", c.r.Name(), name, err)
				continue
			}
			if _, err := c.r.Task(p.Task); err != nil {
				t.Errorf("%s %s: task %q: %v", c.r.Name(), name, p.Task, err)
			}
			if _, instructed := c.r.(Instructed); p.Instruction != "" && !instructed {
				t.Errorf("%s %s: an instruction for a task model", c.r.Name(), name)
			}
		}
		if _, err := ForInputType(c.r, "search"); err == nil {
			t.Errorf("%s: unknown input type accepted", c.r.Name())
		}
	}
	p, _ := ForInputType(JinaV4{}, InputSearchQuery)
	q, _ := ForInputType(JinaV4{}, InputSearchDocument)
	if p == q {
		t.Errorf("jina-embeddings-v4: queries and documents map alike (%v)", p)
	}
	p, _ = ForInputType(Qwen3VLEmbedding{}, InputSearchQuery)
	if p.Instruction == "" {
		t.Error("Qwen3-VL-Embedding: queries get the default instruction")
	}
}
