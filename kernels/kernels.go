// Package kernels is the compute layer of vembed: matrix products of f32
// activations by weights kept in their stored GGUF type, fused attention,
// norms, rotary embeddings and activations.
//
// Model code calls the functions of this file (and Matrix's Packed and
// Unpack, gemm_vnni_pack.go). Each function has a plain,
// single-threaded reference implementation (ref.go, the *Ref functions) that
// the fast paths are tested against; Use(TierReference) routes every call to
// the reference, which is how the model's reference path runs.
//
// Layout conventions: activations are row-major [rows][cols] float32 slices.
// A weight Matrix has Rows output features, each a GGUF row of Cols inputs,
// so MatMul computes x·Wᵀ, the nn.Linear convention.
//
// The fast tiers (see Tier) share one design: work is split into tiles run
// by a pool of GOMAXPROCS goroutines; MatMul decodes weights panel by panel
// into per-worker buffers reused across a block of activation rows (float32,
// gemm.go and decode*.go; bytes on the integer tiers, gemm_int8*.go and
// gemm_vnni.go; bfloat16 pairs for marked weights on the bfloat16 tiers,
// gemm_bf16.go), so weights stay in their stored type, unless Prepare
// packed them at load; Attention is a tiled online-softmax kernel on the
// float32 microkernel (attention.go).
// Every function may be called from several goroutines at once.
package kernels

import (
	"fmt"

	"github.com/vembed/vembed/gguf"
)

// Matrix is a weight matrix of Rows×Cols values stored in a GGUF type:
// row r holds the Cols input weights of output feature r. Data is usually a
// zero-copy view of a memory-mapped file and is never written.
type Matrix struct {
	Type       gguf.Type
	Rows, Cols int
	Data       []byte

	// BF16 lets a tier with bfloat16 products (avx512-bf16, amx-bf16)
	// multiply this float weight in bfloat16: models set it for the weights
	// whose reference runs in bfloat16 anyway and whose results tolerate
	// it (the vision towers' MLPs), and leave it unset where float32 must hold
	// (the LM's float weights, heads, scoring).
	BF16 bool

	// packed holds a repacked copy prepared by a fast tier (see Prepare),
	// or nil.
	packed any
}

// NewMatrix checks that data holds rows×cols values of type t and returns the
// matrix view.
func NewMatrix(t gguf.Type, rows, cols int, data []byte) (*Matrix, error) {
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("kernels: matrix %dx%d: %w", rows, cols, err)
	}
	if rows < 0 || len(data) < rows*rb {
		return nil, fmt.Errorf("kernels: matrix %dx%d of %s needs %d bytes, have %d", rows, cols, t, rows*rb, len(data))
	}
	return &Matrix{Type: t, Rows: rows, Cols: cols, Data: data[:rows*rb]}, nil
}

// RowBytes is the byte length of one stored row.
func (w *Matrix) RowBytes() int {
	n, _ := w.Type.RowBytes(w.Cols)
	return n
}

// Mask describes which keys a query may attend to in Attention. Tokens are
// partitioned into consecutive segments; a query attends only to keys of its
// own segment and, when Causal is set, only to keys at or before itself.
// Segments holds the cumulative boundaries (like cu_seqlens): segment i covers
// tokens [Segments[i], Segments[i+1]). A nil Segments means one segment over
// all tokens.
type Mask struct {
	Causal   bool
	Segments []int
}

// MatMul computes dst[i][n] = Σ_k x[i][k]·W[n][k] + bias[n] for i < m.
// x is m×w.Cols, dst is m×w.Rows; bias may be nil.
func MatMul(dst, x []float32, m int, w *Matrix, bias []float32) {
	active.Load().matMul(dst, x, m, w, bias)
}

// Attention computes, for every token t and query head h,
// out[t][h] = Σ_j softmax_j(scale·q[t][h]·k[j][g]) v[j][g] over the keys j the
// mask allows, where g = h / (nHead/nKV) is the shared key/value head (GQA).
// q and out are nTok×(nHead·headDim); k and v are nTok×(nKV·headDim).
func Attention(out, q, k, v []float32, nTok, nHead, nKV, headDim int, scale float32, mask Mask) {
	active.Load().attention(out, q, k, v, nTok, nHead, nKV, headDim, scale, mask)
}

// KVSpan is one sequence of an AttentionKV call: query rows [Q0, Q1) of q
// and out are the sequence's tokens Pos, Pos+1, …, and attend causally to
// the sequence's keys and values K and V, rows of nKV·headDim values of
// which the first Pos+(Q1−Q0) are read: those of earlier chunks, then the
// chunk's own.
type KVSpan struct {
	Q0, Q1 int
	K, V   []float32
	Pos    int
}

// AttentionKV is causal Attention for chunked prefill: the queries of
// several sequences, packed in q, each against its own keys and values.
// A row's result is bit for bit what Attention gives that token in one
// causal pass over its whole sequence (Mask{Causal: true}), on every tier.
func AttentionKV(out, q []float32, nHead, nKV, headDim int, scale float32, spans []KVSpan) {
	active.Load().attentionKV(out, q, nHead, nKV, headDim, scale, spans)
}

// RMSNorm normalizes each row of dim values: dst = x/sqrt(mean(x²)+eps)·w.
// dst may alias x.
func RMSNorm(dst, x, w []float32, dim int, eps float32) { active.Load().rmsNorm(dst, x, w, dim, eps) }

// LayerNorm normalizes each row of dim values to zero mean and unit variance,
// then scales by w and adds b (b may be nil). dst may alias x.
func LayerNorm(dst, x, w, b []float32, dim int, eps float32) {
	active.Load().layerNorm(dst, x, w, b, dim, eps)
}

// RoPE rotates, in place, the pairs (d, d+headDim/2) of every head of every
// token (the NeoX / rotate-half convention) by the angles given per token:
// cos and sin are nTok×(headDim/2). x is nTok×(nHead·headDim).
func RoPE(x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	active.Load().rope(x, nTok, nHead, headDim, cos, sin)
}

// Add computes dst[i] = a[i] + b[i]. dst may alias a or b.
func Add(dst, a, b []float32) { active.Load().add(dst, a, b) }

// SwiGLU computes dst[i] = silu(gate[i])·up[i]. dst may alias gate or up.
func SwiGLU(dst, gate, up []float32) { active.Load().swiGLU(dst, gate, up) }

// GELU applies the exact (erf) GELU in place.
func GELU(x []float32) { active.Load().gelu(x) }

// QuickGELU applies x·σ(1.702x) in place.
func QuickGELU(x []float32) { active.Load().quickGELU(x) }

// GELUTanh applies the tanh approximation of GELU (PyTorch's
// gelu(approximate="tanh"), gelu_pytorch_tanh) in place:
// 0.5·x·(1+tanh(√(2/π)·(x+0.044715·x³))).
func GELUTanh(x []float32) { active.Load().geluTanh(x) }

// Prepare lets the active tier repack w for faster products. It is called
// once when a model is loaded, before w is shared; MatMul works without
// it. The VNNI tiers (avx512-vnni and avx-vnni, and the avx512-bf16 and
// amx-bf16 tiers built on the first) pack Q8_0 weights into the panels
// their products read (gemm_vnni_pack.go), and the amx tier every type it
// multiplies in integers into its tile records (gemm_amxi8.go), in
// parallel, unless SetPacking turned packing off; the products then give
// the same bits without decoding the weights on every pass. w.Packed tells whether it
// did: only the tiers on the GEMM that packed w read the copy, the others
// decode w.Data. Other tiers decode panels during the product and keep w
// as stored.
func Prepare(w *Matrix) { active.Load().prepare(w) }
