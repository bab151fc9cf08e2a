// Package convert turns Hugging Face checkpoints of Qwen2-VL / Qwen2.5-VL /
// Qwen3-VL embedders and rerankers into the GGUF files vembed (and llama.cpp) load, without
// Python: the language model, the vision encoder (mmproj) and the
// multi-vector head (mvproj side-car).
//
// Every key, tensor name, shape, storage type and order comes from the
// qwenlayout package's plans, which reproduce what llama.cpp's
// convert_hf_to_gguf.py writes (and, for block types, what llama-quantize
// writes); its naming table says which checkpoint tensor fills each
// GGUF tensor (fused vision qkv split in thirds, the Conv3D patch
// embedding split along time into v.patch_embd.weight and .weight.1). The
// mmproj also gets v.patch_embd.weight_flat, proj.weight viewed as
// [W, 3·2·p·p], which the engine uses for its patch GEMM and llama.cpp
// ignores. The tokenizer comes from tokenizer.json (BPE vocabulary padded
// to vocab_size with [PAD<id>] tokens, added tokens CONTROL when special,
// merges, pre-tokenizer qwen2) and tokenizer_config.json (end, padding and
// start tokens, chat template).
//
// Tensors are converted one at a time, a block of about a million values
// (whole rows) at a time: read from the safetensors shards, widened to
// float64, the LoRA update s·B·A of those rows added (s = lora_alpha / r,
// or / sqrt(r) with rsLoRA), and rounded once to the output type (F32,
// F16, BF16, or a block type through gguf.Quantize with llama-quantize's
// per-tensor choices from package quantize). Memory stays near one block
// plus one module's LoRA factors, whatever the model's size.
//
// # Layouts
//
// Tensor names are accepted with the prefixes of every transformers
// release: model.layers / model.language_model.layers / language_model.layers
// for the decoder, visual / model.visual for the tower. The layout is told
// from the checkpoint, or forced with Options.Layout:
//
//   - jina-v4 (jina-embeddings-v4; config.json architectures
//     JinaEmbeddingsV4Model or task_names, or an adapters/ directory): a
//     Qwen2.5-VL checkpoint with multi_vector_projector.{weight,bias}
//     ([128, hidden], [128]) and, in adapters/, one PEFT LoRA adapter
//     (adapter_config.json: r, lora_alpha, target_modules;
//     adapter_model.safetensors) holding one A/B pair per task and module:
//     base_model.model.<module>.lora_A.<task>.weight [r, in] and
//     lora_B.<task>.weight [out, r], over the decoder's q/k/v/o and MLP
//     projections and the projector; module names as transformers 4.52+
//     has them (model.language_model.*, model.visual.*) or older. One LM
//     per task (Options.Task, or "all": <name>-<task>-<TYPE>.gguf) with
//     its pairs merged, an mvproj per task with the projector's pair
//     merged, and one mmproj of the base tower. Under the new names jina's
//     target_modules pattern also reaches the tower's MLPs, so adapters
//     saved so hold pairs on the tower: a task that has them gets its own
//     mmproj (mmproj-<name>-<task>-<TYPE>.gguf) with them merged (a fused
//     qkv by thirds), and its LM and mmproj carry vembed.vision_adapter =
//     <task>, which the engine checks when it loads the pair.
//     vembed.recipe jina-embeddings-v4, qwen2vl.pooling_type 1 (mean).
//   - colqwen2 / colqwen2.5 (colpali-engine's ColQwen2 / ColQwen2.5: a
//     custom_text_proj.{weight,bias} tensor, [128, hidden]): the base
//     checkpoint and, when adapter_config.json and adapter_model.safetensors
//     lie beside it, its single LoRA adapter merged (pairs
//     base_model.model.<module>.lora_A.weight, custom_text_proj included);
//     custom_text_proj becomes the mvproj. vembed.recipe colqwen2,
//     qwen2vl.pooling_type 0 (none: one vector per token).
//   - gme (GME-Qwen2-VL; told by "gme" in the model's name): a plain
//     Qwen2-VL checkpoint; vembed.recipe gme, qwen2vl.pooling_type 3
//     (last token).
//   - qwen3-vl (Qwen3VLForConditionalGeneration: Qwen3-VL-Embedding, or any
//     Qwen3-VL checkpoint): a qwen3vl LM (q_norm/k_norm, head_dim) and a
//     qwen3vl_merger mmproj (patch bias, pos_embed, fused qkv, linear_fc1/2,
//     merger.norm, deepstack_merger_list.K named v.deepstack.<block>), no
//     pooling key, as llama.cpp writes them; vembed reads it as last-token
//     pooling.
//   - qwen3-vl-reranker (Qwen3-VL-Reranker; told as llama.cpp tells it: a
//     name or README title with "reranker", or a sequence-classification
//     architecture): the same files, with qwen3vl.pooling_type 4 (rank),
//     classifier.output_labels [yes, no] and cls.output.weight, the LM
//     head's rows (the embeddings' when tied) of the tokens "yes" and "no".
//   - colqwen3, ops-colqwen3, nemotron-colembed-vl (TomoroAI's ColQwen3,
//     OpenSearch-AI's Ops-ColQwen3, NVIDIA's nemotron-colembed-vl-v2; told
//     by model_type / architectures, else by the head's name, and never
//     converted as a plain Qwen3-VL): the qwen3-vl files without the LM
//     head, the head as the mvproj (embedding_proj_layer; custom_text_proj
//     cut to config.json's dims rows), nemotron's decoder mode as
//     vembed.attention.causal / vembed.output_norm false and
//     vembed.multivector.source "hidden", and nemotron's prompt bounds
//     from processor_config.json (q_max_length, p_max_length,
//     reserve_tokens_for_images) as vembed.truncation.*; see retriever.go.
//   - any other Qwen2-VL / Qwen2.5-VL checkpoint converts as llama.cpp
//     converts it, with neither key.
//
// An adapter (every task's) is checked against the checkpoint before
// anything is written: its rank, every pair's shapes against its weight,
// a pair for a module the checkpoint lacks, and a matrix that
// target_modules names (by the adapter's own module names) but the
// adapter holds no pair for are errors; the tower's matrices are held to
// target_modules only when the adapter has pairs on the tower. Pairs on
// the tower are merged into the mmproj. target_modules patterns are
// Python regular expressions; colpali-engine's "(?!.*visual)" lookahead,
// which Go's RE2 lacks, is dropped (the pattern then says nothing of the
// tower), and a pattern that still does not compile leaves that last
// check out.
package convert
