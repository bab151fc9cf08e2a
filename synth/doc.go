// Package synth writes synthetic Qwen2-VL / Qwen2.5-VL and Qwen3-VL models
// (embedders and, for Qwen3-VL, llama.cpp's reranker form): a language
// model GGUF and a vision (mmproj) GGUF in the layout package qwenlayout
// plans (llama.cpp's keys, tensor names, shapes, storage types and order),
// filled with seeded random weights, plus an optional multi-vector
// projector side-car; synthetic Hugging Face checkpoints in the layouts
// package convert reads; small retrieval datasets; and images with the
// traits of a photograph (Photo). Tests, benchmarks
// and the demo server use them where a real model is too large or absent.
//
// Files are written through qwenlayout.WriteFile, a chunk of rows at a
// time generated on a pool of workers, so even the jina-v4 shapes need well
// under 100 MB of memory.
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
// # Checkpoints
//
// WriteHF writes a synthetic checkpoint in one of qwenlayout's checkpoint
// layouts (jina-v4 with its three task adapters and multi_vector_projector,
// colqwen2.5, colqwen2, gme, qwen3-vl, qwen3-vl-reranker): config.json,
// tokenizer.json, tokenizer_config.json, preprocessor_config.json, sharded
// safetensors (BF16 by default) with their index, and LoRA adapters, each
// tensor named through qwenlayout.HFTensors, the table the converter reads
// them back by.
package synth
