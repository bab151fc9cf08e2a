package heads

import (
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/portmath"
)

// Ranker is the pair-scoring head of a reranker GGUF in llama.cpp's form
// (pooling_type RANK): cls.output.weight, ggml ne = [hidden, labels], one
// row of hidden weights per label named in <arch>.classifier.output_labels,
// and an optional cls.output.bias. Qwen3-VL-Reranker stores the LM head's
// rows of "yes" and "no", so the relevance score is P(yes), the softmax of
// the two logits at the last token (= sigmoid of their difference).
type Ranker struct {
	Labels []string
	Hidden int
	w      []float64 // labels × hidden
	bias   []float64
	yes    int // the label whose probability is the score
}

// rankPooling is llama.cpp's LLAMA_POOLING_TYPE_RANK.
const rankPooling = 4

// IsRanker reports whether an LM GGUF is a reranker: pooling_type RANK or a
// cls.output.weight tensor.
func IsRanker(f *gguf.File) bool {
	arch, _ := f.String("general.architecture")
	if p, err := f.Uint(arch + ".pooling_type"); err == nil && p == rankPooling {
		return true
	}
	return f.Tensor("cls.output.weight") != nil
}

// RankerFrom reads the ranking head of an LM GGUF.
func RankerFrom(f *gguf.File) (*Ranker, error) {
	arch, _ := f.String("general.architecture")
	t := f.Tensor("cls.output.weight")
	if t == nil {
		return nil, fmt.Errorf("heads: reranker: tensor cls.output.weight is missing")
	}
	if len(t.Dims) != 2 || t.Dims[1] < 1 || t.Dims[1] > 16 {
		return nil, fmt.Errorf("heads: reranker: cls.output.weight has shape %v, want [hidden, labels]", t.Dims)
	}
	r := &Ranker{Hidden: int(t.Dims[0])}
	n := int(t.Dims[1])
	w, err := t.Float32s()
	if err != nil {
		return nil, fmt.Errorf("heads: reranker: cls.output.weight: %w", err)
	}
	r.w = widen(w)
	if b := f.Tensor("cls.output.bias"); b != nil {
		bv, err := b.Float32s()
		if err != nil || len(bv) != n {
			return nil, fmt.Errorf("heads: reranker: cls.output.bias: %d values for %d labels (%v)", len(bv), n, err)
		}
		r.bias = widen(bv)
	}
	if labels, err := f.Strings(arch + ".classifier.output_labels"); err == nil {
		r.Labels = labels
	}
	if len(r.Labels) != n {
		return nil, fmt.Errorf("heads: reranker: %d labels in %s.classifier.output_labels for %d rows of cls.output.weight", len(r.Labels), arch, n)
	}
	r.yes = -1
	for i, l := range r.Labels {
		if l == "yes" {
			r.yes = i
		}
	}
	if n == 1 {
		r.yes = 0
	}
	if r.yes < 0 {
		return nil, fmt.Errorf("heads: reranker: labels %q have no \"yes\"", r.Labels)
	}
	return r, nil
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Score returns the relevance of a pair from the final hidden state of its
// last token: the softmax probability of the "yes" label (for one label,
// the sigmoid of its logit).
func (r *Ranker) Score(h []float32) (float64, error) {
	if len(h) != r.Hidden {
		return 0, fmt.Errorf("heads: reranker: hidden state of %d values, want %d", len(h), r.Hidden)
	}
	n := len(r.w) / r.Hidden
	logits := make([]float64, n)
	for l := range logits {
		s := 0.0
		if r.bias != nil {
			s = r.bias[l]
		}
		for i, v := range h {
			// A product is converted before it is added to (float64(a*b) + c): that
			// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
			// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
			s += float64(r.w[l*r.Hidden+i] * float64(v))
		}
		logits[l] = s
	}
	if n == 1 {
		// portmath: math.Exp's last bit differs between amd64 and arm64.
		return 1 / (1 + portmath.Exp(-logits[0])), nil
	}
	// P(yes) = 1 / Σ_l exp(logit_l − logit_yes), stable for any magnitudes.
	sum := 0.0
	for _, z := range logits {
		sum += portmath.Exp(z - logits[r.yes])
	}
	return 1 / sum, nil
}
