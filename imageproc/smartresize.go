package imageproc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxAspectRatio is the reference's limit on max(h,w)/min(h,w).
const maxAspectRatio = 200

// SmartResize returns the size the reference resizes an image of
// height x width to: both sides multiples of factor (patch size x merge size,
// 28 for Qwen2-VL), the aspect ratio kept as well as possible, and the pixel
// count within [minPixels, maxPixels]. It follows transformers'
// smart_resize operation for operation in float64 (Python's round is
// round-half-to-even; h*beta/factor is evaluated left to right), because a
// different order changes the result at edges such as 38x38 -> 84x84.
// Images with a side shorter than factor or an aspect ratio above 200 are
// refused with ErrSize, as the reference raises ValueError.
func SmartResize(height, width, factor, minPixels, maxPixels int) (h, w int, err error) {
	if factor <= 0 {
		return 0, 0, fmt.Errorf("imageproc: smart resize: factor %d must be positive", factor)
	}
	if height < factor || width < factor {
		return 0, 0, fmt.Errorf("imageproc: %w: height:%d or width:%d must be larger than factor:%d", ErrSize, height, width, factor)
	}
	hf, wf, ff := float64(height), float64(width), float64(factor)
	if ratio := math.Max(hf, wf) / math.Min(hf, wf); ratio > maxAspectRatio {
		return 0, 0, fmt.Errorf("imageproc: %w: absolute aspect ratio must be smaller than %d, got %s", ErrSize, maxAspectRatio, pyFloat(ratio))
	}
	hBar := int(math.RoundToEven(hf/ff)) * factor
	wBar := int(math.RoundToEven(wf/ff)) * factor
	switch {
	case int64(hBar)*int64(wBar) > int64(maxPixels):
		beta := math.Sqrt(hf * wf / float64(maxPixels))
		hBar = int(math.Floor(hf/beta/ff)) * factor
		wBar = int(math.Floor(wf/beta/ff)) * factor
	case int64(hBar)*int64(wBar) < int64(minPixels):
		beta := math.Sqrt(float64(minPixels) / (hf * wf))
		hBar = int(math.Ceil(hf*beta/ff)) * factor
		wBar = int(math.Ceil(wf*beta/ff)) * factor
	}
	if hBar <= 0 || wBar <= 0 {
		// The reference would go on to fail inside the resize; say why here.
		return 0, 0, fmt.Errorf("imageproc: %w: %dx%d (HxW) cannot fit in max_pixels=%d with sides that are multiples of %d", ErrSize, height, width, maxPixels, factor)
	}
	return hBar, wBar, nil
}

// pyFloat formats like Python's repr of a float, so the error text matches
// the reference's ("got 201.0").
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// SmartResizeVLUtils is qwen-vl-utils' smart_resize, which Qwen3-VL's
// official embedding and reranking code uses: like SmartResize, except
// that no side is refused for being short: each rounded side is at least
// factor, also after scaling down to maxPixels.
func SmartResizeVLUtils(height, width, factor, minPixels, maxPixels int) (h, w int, err error) {
	if factor <= 0 || height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("imageproc: %w: %dx%d (HxW) with factor %d", ErrSize, height, width, factor)
	}
	hf, wf, ff := float64(height), float64(width), float64(factor)
	if ratio := math.Max(hf, wf) / math.Min(hf, wf); ratio > maxAspectRatio {
		return 0, 0, fmt.Errorf("imageproc: %w: absolute aspect ratio must be smaller than %d, got %s", ErrSize, maxAspectRatio, pyFloat(ratio))
	}
	hBar := max(factor, int(math.RoundToEven(hf/ff))*factor)
	wBar := max(factor, int(math.RoundToEven(wf/ff))*factor)
	switch {
	case int64(hBar)*int64(wBar) > int64(maxPixels):
		beta := math.Sqrt(hf * wf / float64(maxPixels))
		hBar = max(factor, int(math.Floor(hf/beta/ff))*factor)
		wBar = max(factor, int(math.Floor(wf/beta/ff))*factor)
	case int64(hBar)*int64(wBar) < int64(minPixels):
		beta := math.Sqrt(float64(minPixels) / (hf * wf))
		hBar = int(math.Ceil(hf*beta/ff)) * factor
		wBar = int(math.Ceil(wf*beta/ff)) * factor
	}
	if int64(hBar)*int64(wBar) > MaxPixelsLimit {
		return 0, 0, fmt.Errorf("imageproc: %w: %dx%d (HxW) resizes to %dx%d, over %d pixels", ErrSize, height, width, hBar, wBar, MaxPixelsLimit)
	}
	return hBar, wBar, nil
}

// FetchResize is the smart resize of GME's fetch_image (qwen-vl-utils'
// rules as GME copied them): each side rounded half to even to a multiple
// of the factor and at least the factor, scaled down (floor) into
// MaxPixels or up (ceil) into MinPixels, and an aspect ratio above 200
// clamped (the longer side set to 200 times the shorter) instead of
// refused. It returns the height and width.
func FetchResize(height, width int, f Fetch) (h, w int, err error) {
	factor := f.Factor
	if factor <= 0 || height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("imageproc: %w: %dx%d (HxW) with factor %d", ErrSize, height, width, factor)
	}
	hf, wf, ff := float64(height), float64(width), float64(factor)
	hBar := max(factor, int(math.RoundToEven(hf/ff))*factor)
	wBar := max(factor, int(math.RoundToEven(wf/ff))*factor)
	switch {
	case int64(hBar)*int64(wBar) > int64(f.MaxPixels):
		beta := math.Sqrt(hf * wf / float64(f.MaxPixels))
		hBar = int(math.Floor(hf/beta/ff)) * factor
		wBar = int(math.Floor(wf/beta/ff)) * factor
	case int64(hBar)*int64(wBar) < int64(f.MinPixels):
		beta := math.Sqrt(float64(f.MinPixels) / (hf * wf))
		hBar = int(math.Ceil(hf*beta/ff)) * factor
		wBar = int(math.Ceil(wf*beta/ff)) * factor
	}
	if hBar <= 0 || wBar <= 0 {
		// The reference divides by zero here.
		return 0, 0, fmt.Errorf("imageproc: %w: %dx%d (HxW) cannot fit in %d pixels with sides that are multiples of %d", ErrSize, height, width, f.MaxPixels, factor)
	}
	if max(hBar, wBar) > maxAspectRatio*min(hBar, wBar) {
		if hBar > wBar {
			hBar = wBar * maxAspectRatio
		} else {
			wBar = hBar * maxAspectRatio
		}
	}
	if int64(hBar)*int64(wBar) > MaxPixelsLimit {
		return 0, 0, fmt.Errorf("imageproc: %w: %dx%d (HxW) resizes to %dx%d, over %d pixels", ErrSize, height, width, hBar, wBar, MaxPixelsLimit)
	}
	return hBar, wBar, nil
}
