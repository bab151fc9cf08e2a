// Package quantize re-encodes GGUF files in another weight type, and holds
// llama-quantize's choice of a stored type per tensor, which the synthetic
// model writer and the checkpoint converter share.
//
// # Type rules
//
// A Spec is either one ggml type for every weight matrix (with
// llama-quantize's fallbacks for rows that are not a whole number of the
// type's blocks: Q2_K, Q3_K and IQ4_XS to IQ4_NL, Q4_K to Q5_0, Q5_K to
// Q5_1, Q6_K to Q8_0, then F16) or one of llama-quantize's "mostly" mixes
// (Q3_K_S/M/L, Q4_K_S/M, Q5_K_S/M), which give the output matrix (or the
// tied token embedding) Q6_K and, by layer, attn_v, ffn_down and
// attn_output a larger type, as llama_tensor_get_type does for a model
// without experts. For Q8_0 and Q6_K the plain type is exactly
// llama-quantize's choice for the same name; for other plain types it is
// what llama-quantize --pure writes.
//
// Tensors that are not weight matrices keep their type: vectors (norms,
// biases), *_norm.weight, position embeddings, integer tensors.
//
// # Vision encoders
//
// An mmproj file (general.architecture "clip") takes the spec's base type
// for its matrices, except the groups of Options.Keep (default
// DefaultKeep), which stay in their input precision. The groups and the
// default were chosen from the embedding cosine of each group quantized
// alone (docs/model-files.md). The patch embedding follows float targets (F32, F16,
// BF16) like every matrix.
//
// # Streaming
//
// File reads the input memory-mapped and converts one tensor at a time in
// chunks of whole rows (about a million values per worker), writing
// through gguf.Writer's streaming tensors into a temporary file renamed
// when complete. An already quantized input is decoded to float32 and
// encoded again, with a warning; a tensor already in its target type is
// copied byte for byte.
package quantize
