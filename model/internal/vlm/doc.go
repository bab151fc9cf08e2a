// Package vlm holds what the Qwen vision-language families share: binding
// GGUF weights (Binder), row-chunked matrix products and MLPs, and the
// decoder (Qwen2 and Qwen3 blocks) over packed chunks of many sequences
// with M-RoPE positions, image rows and DeepStack injection. The model
// packages (model/qwenvl, model/qwen3vl) add their vision towers and the
// engine-facing model.Model around it.
package vlm
