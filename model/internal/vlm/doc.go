// Package vlm holds what the Qwen vision-language families share: opening
// an LM/mmproj GGUF pair and serving model.Model over it (Pair), binding
// GGUF weights (Binder), row-chunked matrix products and MLPs, and the
// decoder (Qwen2 and Qwen3 blocks) over packed chunks of many sequences
// with M-RoPE positions, image rows and DeepStack injection. The model
// packages (model/qwenvl, model/qwen3vl, model/qwen35) add their vision
// towers, their own decoder where it differs, and the rules that make two
// files a matching pair.
package vlm
