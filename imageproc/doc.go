// Package imageproc turns encoded images into the patch matrix a Qwen2-VL /
// Qwen2.5-VL vision encoder consumes, reproducing the reference pipeline
// (Pillow decoding and BICUBIC resizing, transformers' Qwen2VLImageProcessor)
// bit for bit:
//
//   - Decode sniffs the format from the content, checks size limits from the
//     header before any pixel is decoded, and converts to 8-bit RGB exactly as
//     Pillow's Image.open(...).convert("RGB") does.
//   - SmartResize picks the target size (multiples of 28, pixel budget).
//   - ResizeBicubic is Pillow's fixed-point, antialiased, separable BICUBIC.
//   - FromImage rescales, normalizes and lays the pixels out as patches in the
//     reference's row order.
package imageproc
