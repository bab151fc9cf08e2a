// Package quantize holds llama-quantize's choice of a stored type per
// tensor (the "mostly" mixes such as Q4_K_M and the fallbacks for rows a
// type cannot hold), shared by the synthetic model writer, the checkpoint
// converter and the GGUF re-quantizer.
package quantize
