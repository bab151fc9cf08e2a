// Package qwenlayout is the GGUF layout of Qwen2-VL / Qwen2.5-VL and
// Qwen3-VL models as llama.cpp's convert_hf_to_gguf.py (and, for block
// types, llama-quantize) writes them: a Config of shapes and encodings,
// the plans of the language model, vision (mmproj) and multi-vector
// (mvproj) files built from it (metadata keys and value types in file
// order, tensor names, shapes, storage types and order, without values),
// the tokenizer metadata of a byte-level BPE vocabulary, the table of which
// Hugging Face checkpoint tensor fills each GGUF tensor (HFSourceOf,
// HFTensors) with the checkpoint layouts of the families vembed converts,
// and WriteFile, which streams a planned file with values from a Fill.
//
// Package convert fills the plans from a real checkpoint; package synth
// fills them with seeded random values, and writes synthetic checkpoints
// named through the same table. A converted file and a synthetic one of
// the same configuration therefore share every key, tensor name, shape,
// type and order.
//
// Files in F32, F16 and BF16 are laid out as the converter writes them;
// files in block types as llama-quantize writes them (its tensor order, and
// general.quantization_version and general.file_type last), with its choice
// of per-tensor types for the mixes (Q4_K_M: token_embd Q6_K when tied,
// attn_v and ffn_down Q6_K in the layers llama.cpp's use_more_bits picks)
// and its fallbacks when a row is not a whole number of blocks. 1-D tensors
// are always F32.
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
package qwenlayout
