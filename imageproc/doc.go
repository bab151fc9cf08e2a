// Package imageproc turns encoded images into the patch matrix a Qwen2-VL /
// Qwen2.5-VL vision encoder consumes, reproducing the reference pipeline
// (Pillow 9.4 decoding and BICUBIC resizing, transformers'
// Qwen2VLImageProcessor) bit for bit:
//
//   - Decode sniffs the format from the content, checks size limits from the
//     header before any pixel is decoded, and converts to 8-bit RGB exactly as
//     Pillow's Image.open(...).convert("RGB") does.
//   - SmartResize picks the target size (multiples of 28, pixel budget).
//   - ResizeBicubic is Pillow's fixed-point, antialiased, separable BICUBIC.
//   - FromImage rescales, normalizes and lays the pixels out as patches in the
//     reference's row order.
//
// Decoding follows Pillow where Go's image packages differ:
//
//	JPEG           package jpeg (libjpeg-turbo's islow IDCT, fancy upsampling,
//	               colour tables, CMYK/YCCK); image/jpeg is off by up to ~110
//	PNG RGBA       alpha dropped from the straight colour, never composited
//	PNG/TIFF gray16  clipped to 255 (Pillow's mode I), not the high byte
//	PNG RGB48      high byte of each sample
//	palettes       transparency ignored; indices past a short palette read
//	               Pillow's gray ramp
//	GIF            first frame on the logical screen (grown to fit the frame),
//	               filled with the transparent index, or 0; the transparent
//	               entry keeps its colour
//	WebP lossy     libwebp's fancy chroma upsampling and fixed-point YUV->RGB
//	WebP animated  first frame on a black canvas at its offset
//	TIFF CCITT     BlackIsZero honoured (x/image/tiff ignores it)
//
// Speed: large baseline JPEGs are decoded with the IDCT and colour
// conversion on all cores while the (serial) entropy decoding goes on, and
// Preprocess resamples rows horizontally as soon as they are decoded.
// BenchmarkPreprocess/all and BenchmarkPillowPreprocess (Pillow's decode
// plus BICUBIC resize of the same 2000x3000 photo, with VEMBED_JPEG_PYTHON
// set) give the side-by-side figures; interleaved on a shared two-core
// machine, vembed took about 0.6-0.75 of Pillow's wall time and 0.6-0.7 of
// its CPU time.
//
// EXIF orientation is not applied unless asked for, as the reference does
// not apply it. Not supported (ErrUnsupported): TIFF with extra samples
// (gray+alpha) or CMYK, RLE BMP, 12-bit or arithmetic-coded JPEG.
package imageproc
