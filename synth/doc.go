// Package synth writes synthetic Qwen2-VL / Qwen2.5-VL and Qwen3-VL models
// (embedders and, for Qwen3-VL, llama.cpp's reranker form): a language
// model GGUF and a vision (mmproj) GGUF laid out exactly as llama.cpp's
// convert_hf_to_gguf.py lays out converted checkpoints (metadata keys and
// value types, tensor names, shapes and storage types), filled with seeded
// random weights, plus an optional multi-vector projector side-car. Tests,
// benchmarks and the demo server use them where a real model is too large or
// absent.
//
// Files in F32, F16 and BF16 are laid out as the converter writes them;
// files in block types as llama-quantize writes them (its tensor order, and
// general.quantization_version and general.file_type last), with its choice
// of per-tensor types for the mixes (Q4_K_M: token_embd Q6_K when tied,
// attn_v and ffn_down Q6_K in the layers llama.cpp's use_more_bits picks)
// and its fallbacks when a row is not a whole number of blocks. 1-D tensors
// are always F32. Files are written through a stream, a chunk of rows at a
// time, so even the jina-v4 shapes need well under 100 MB of memory.
//
// Weights are N(0, Std²); norm weights are 1 + Std·N(0,1). Every tensor chunk
// draws from its own PCG stream seeded by (file seed, tensor name, chunk
// number), so a configuration always produces identical bytes.
//
// The vocabulary written by default is a small byte-level BPE vocabulary in
// Qwen's layout: the 256 byte tokens in GPT-2 byte-to-unicode order, merges
// learned deterministically from a built-in multilingual sample, the 22 Qwen
// added tokens (CONTROL, with <tool_call> and </tool_call> USER_DEFINED), then
// "[PAD<id>]" fillers (UNUSED) up to the LM's vocabulary size. The tokenizer
// metadata of another GGUF can be copied instead (Config.VocabFrom).
//
// # Layouts and checkpoints
//
// The plans behind WriteLM, WriteMMProj and WriteMVProj are exported as
// Layouts (metadata, tensor names, shapes and types without values), and
// HFSourceOf says which Hugging Face checkpoint tensor fills each GGUF
// tensor, so that package convert writes converted checkpoints through the
// same code. WriteHF writes a synthetic checkpoint the other way round, in
// one of the layouts convert reads (jina-v4 with its three task adapters and
// multi_vector_projector, colqwen2.5, colqwen2, gme, qwen3-vl,
// qwen3-vl-reranker): config.json,
// tokenizer.json, tokenizer_config.json, preprocessor_config.json, sharded
// safetensors (BF16 by default) with their index, and LoRA adapters.
//
// # Multi-vector projector side-car (mvproj)
//
// jina-embeddings-v4's multi-vector output is a linear map of every final
// hidden state. Its weights travel in a small GGUF v3 file:
//
//	metadata
//	  general.architecture  STRING  "mvproj"
//	  general.type          STRING  "mvproj"
//	  general.name          STRING
//	  mvproj.input_dim      UINT32  LM hidden size (2048 for jina-v4)
//	  mvproj.output_dim     UINT32  vector size (128 for jina-v4)
//	  mvproj.normalize      BOOL    true: L2-normalize each output vector
//	  mvproj.task           STRING  task whose adapter the weights assume ("retrieval", ...)
//	  general.file_type     UINT32  llama_ftype of mvproj.weight (0 F32, 1 F16, 32 BF16)
//	tensors
//	  mvproj.weight  ne = [input_dim, output_dim], F32, F16 or BF16
//	                 (torch multi_vector_projector.weight [output_dim, input_dim];
//	                 y[o] = Σ_i W[o][i]·x[i] + b[o])
//	  mvproj.bias    ne = [output_dim], F32
//
// Loaders find the file beside the LM (mvproj-*.gguf) or take the same two
// tensors from the LM GGUF itself when present.
package synth
