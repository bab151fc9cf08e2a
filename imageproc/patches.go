package imageproc

import (
	"fmt"

	"github.com/vembed/vembed/imageproc/jpeg"
)

// Config describes a model's image preprocessing: patch geometry, the
// normalization constants and the pixel budget of smart resize.
type Config struct {
	PatchSize         int // side of a ViT patch in pixels (14)
	MergeSize         int // side of the merger's group of patches (2)
	TemporalPatchSize int // frames per patch; a still image is repeated (2)
	Mean, Std         [3]float32
	MinPixels         int
	MaxPixels         int
	// QwenVLUtils follows qwen-vl-utils' fetch_image (Qwen3-VL-Embedding's
	// official pipeline) instead of transformers' image processor: an RGBA
	// image is composited on white rather than losing its alpha, and smart
	// resize rounds a side shorter than Factor up to Factor instead of
	// refusing the image.
	QwenVLUtils bool
	// Fetch, when its MaxPixels is set, is a first resize before the one
	// above: GME's fetch_image (see Fetch).
	Fetch Fetch
}

// Fetch is the first of GME's two resizes (its copy of qwen-vl-utils'
// fetch_image): the image is resized with Pillow's BICUBIC to the size
// FetchResize picks (sides multiples of Factor, at least Factor, pixels
// within [MinPixels, MaxPixels], an aspect ratio above 200 clamped rather
// than refused), and the result goes through the processor's own smart
// resize. A zero MaxPixels means no such stage.
type Fetch struct {
	Factor               int
	MinPixels, MaxPixels int
}

// GMEFetch is GME's fetch_image stage: factor 28, 4·28² to 16384·28²
// pixels.
func GMEFetch() Fetch { return Fetch{Factor: 28, MinPixels: 4 * 28 * 28, MaxPixels: 16384 * 28 * 28} }

// CLIP's normalization constants, as float32 (what the mmproj stores).
var (
	clipMean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	clipStd  = [3]float32{0.26862954, 0.26130258, 0.27577711}
)

// MaxPixelsLimit is the largest pixel budget a Config may ask for: Qwen2-VL's
// own largest max_pixels (3584^2, about 12.8 MP), which already means 77
// million float32 values of patches. It keeps a request-supplied budget from
// sizing an allocation.
const MaxPixelsLimit = 3584 * 3584

// JinaV4Config is jina-embeddings-v4's preprocessing: 14-pixel patches,
// 2x2 merge, 2 frames per patch, CLIP mean/std, 3136..602112 pixels.
func JinaV4Config() Config {
	return Config{PatchSize: 14, MergeSize: 2, TemporalPatchSize: 2, Mean: clipMean, Std: clipStd,
		MinPixels: 56 * 56, MaxPixels: 768 * 28 * 28}
}

// Factor is the granularity of resized sides: PatchSize * MergeSize.
func (c Config) Factor() int { return c.PatchSize * c.MergeSize }

// RowLen is the number of values in one patch row: 3 * T * P * P.
func (c Config) RowLen() int { return 3 * c.TemporalPatchSize * c.PatchSize * c.PatchSize }

func (c Config) validate() error {
	switch {
	case c.PatchSize <= 0 || c.MergeSize <= 0 || c.TemporalPatchSize <= 0:
		return fmt.Errorf("imageproc: config: patch %d, merge %d, temporal %d must be positive", c.PatchSize, c.MergeSize, c.TemporalPatchSize)
	case c.PatchSize > 1024 || c.MergeSize > 64 || c.TemporalPatchSize > 64:
		return fmt.Errorf("imageproc: config: patch %d, merge %d, temporal %d out of range", c.PatchSize, c.MergeSize, c.TemporalPatchSize)
	case c.MaxPixels <= 0 || c.MinPixels < 0 || c.MinPixels > c.MaxPixels:
		return fmt.Errorf("imageproc: config: pixel range [%d, %d] invalid", c.MinPixels, c.MaxPixels)
	case c.MaxPixels > MaxPixelsLimit:
		return fmt.Errorf("imageproc: config: max pixels %d exceeds %d", c.MaxPixels, MaxPixelsLimit)
	case c.Fetch.MaxPixels != 0 && (c.Fetch.Factor <= 0 || c.Fetch.Factor > 1024 || c.Fetch.MinPixels < 0 ||
		c.Fetch.MinPixels > c.Fetch.MaxPixels || c.Fetch.MaxPixels > MaxPixelsLimit):
		return fmt.Errorf("imageproc: config: fetch stage factor %d, pixel range [%d, %d] invalid", c.Fetch.Factor, c.Fetch.MinPixels, c.Fetch.MaxPixels)
	}
	for i, s := range c.Std {
		if s == 0 {
			return fmt.Errorf("imageproc: config: std[%d] is zero", i)
		}
	}
	return nil
}

// Patches is an image cut into ViT patches in the reference order
// (transformers' pixel_values).
type Patches struct {
	// Data holds GridT*GridH*GridW rows of RowLen values. Rows are ordered
	// (t, block row, block col, row in block, col in block), so the
	// MergeSize^2 patches of one merge group are consecutive and groups
	// follow in raster order; a row's values are ordered (channel, frame,
	// y, x).
	Data                []float32
	GridT, GridH, GridW int // grid in patches
	ResizedW, ResizedH  int // size of the resized image in pixels
	mergeSize           int
}

// MergedTokens is the number of LM placeholder tokens the image becomes:
// GridT*GridH*GridW / MergeSize^2.
func (p *Patches) MergedTokens() int {
	m := p.mergeSize
	if m == 0 {
		m = 2
	}
	return p.GridT * p.GridH * p.GridW / (m * m)
}

// TargetSize is the size FromImage resizes an image of width x height to
// (after the Fetch stage, when there is one).
func (c Config) TargetSize(width, height int) (w, h int, err error) {
	if err := c.validate(); err != nil {
		return 0, 0, err
	}
	if c.Fetch.MaxPixels > 0 {
		if height, width, err = FetchResize(height, width, c.Fetch); err != nil {
			return 0, 0, err
		}
	}
	if c.QwenVLUtils {
		h, w, err = SmartResizeVLUtils(height, width, c.Factor(), c.MinPixels, c.MaxPixels)
	} else {
		h, w, err = SmartResize(height, width, c.Factor(), c.MinPixels, c.MaxPixels)
	}
	return w, h, err
}

// FromImage smart-resizes img with Pillow's BICUBIC (twice with a Fetch
// stage) and cuts it into normalized patches.
func FromImage(img *Image, cfg Config) (*Patches, error) {
	img, err := cfg.FetchImage(img)
	if err != nil {
		return nil, err
	}
	c := cfg
	c.Fetch = Fetch{}
	w, h, err := c.TargetSize(img.Width, img.Height)
	if err != nil {
		return nil, err
	}
	return Patchify(ResizeBicubic(img, w, h), cfg)
}

// FetchImage applies the Fetch stage of cfg to img (img itself without
// one).
func (c Config) FetchImage(img *Image) (*Image, error) {
	if c.Fetch.MaxPixels == 0 {
		return img, nil
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	h, w, err := FetchResize(img.Height, img.Width, c.Fetch)
	if err != nil {
		return nil, err
	}
	return ResizeBicubic(img, w, h), nil
}

// Preprocess decodes an encoded image and turns it into patches. For a
// JPEG whose width changes, the horizontal resampling pass runs on rows as
// soon as they are decoded, overlapping the decoding of the rest; the
// result is the same as FromImage on the decoded image.
func Preprocess(data []byte, cfg Config, opts DecodeOptions) (*Patches, error) {
	opts.alphaOnWhite = cfg.QwenVLUtils
	if opts.ApplyEXIFOrientation || cfg.Fetch.MaxPixels > 0 {
		img, err := Decode(data, opts)
		if err != nil {
			return nil, err
		}
		return FromImage(img, cfg)
	}
	var r *rowResizer
	var sizeErr error
	img, err := decode(data, opts, func(w, h int) jpeg.RowsFunc {
		tw, th, err := cfg.TargetSize(w, h)
		if err != nil || tw == w {
			sizeErr = err
			return nil
		}
		r = newRowResizer(w, h, tw, th)
		return r.rows
	})
	if err != nil {
		if r != nil {
			r.wait()
		}
		return nil, err
	}
	if sizeErr != nil {
		return nil, sizeErr
	}
	if r == nil {
		return FromImage(img, cfg)
	}
	return Patchify(r.finish(), cfg)
}

// normTable maps each 8-bit level to its normalized value per channel:
// float32(v * (1/255 in float64)), then (x - mean) / std in float32, the
// reference's exact order.
func normTable(cfg Config) *[3][256]float32 {
	var t [3][256]float32
	for c := 0; c < 3; c++ {
		for v := 0; v < 256; v++ {
			x := float32(float64(v) * (1.0 / 255))
			t[c][v] = (x - cfg.Mean[c]) / cfg.Std[c]
		}
	}
	return &t
}

// Patchify normalizes an image whose sides are multiples of
// cfg.Factor() (already resized) and lays it out as patches.
func Patchify(img *Image, cfg Config) (*Patches, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := cfg.Factor()
	if img.Width <= 0 || img.Height <= 0 || img.Width%f != 0 || img.Height%f != 0 {
		return nil, fmt.Errorf("imageproc: patchify: %dx%d is not a multiple of %d", img.Width, img.Height, f)
	}
	P, M, T := cfg.PatchSize, cfg.MergeSize, cfg.TemporalPatchSize
	gh, gw := img.Height/P, img.Width/P
	rowLen := cfg.RowLen()
	frame := P * P     // values of one channel of one frame
	chLen := T * frame // values of one channel
	p := &Patches{Data: make([]float32, gh*gw*rowLen), GridT: 1, GridH: gh, GridW: gw,
		ResizedW: img.Width, ResizedH: img.Height, mergeSize: M}
	lut := normTable(cfg)
	W := img.Width
	// One unit of work is a row of merge groups (M patch rows).
	parallelRows(gh/M, M*gw*rowLen, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			for bw := 0; bw < gw/M; bw++ {
				for mh := 0; mh < M; mh++ {
					for mw := 0; mw < M; mw++ {
						r := ((bh*(gw/M)+bw)*M+mh)*M + mw
						out := p.Data[r*rowLen : (r+1)*rowLen]
						y0, x0 := (bh*M+mh)*P, (bw*M+mw)*P
						for py := 0; py < P; py++ {
							src := img.Pix[((y0+py)*W+x0)*3 : ((y0+py)*W+x0+P)*3]
							for px := 0; px < P; px++ {
								for c := 0; c < 3; c++ {
									out[c*chLen+py*P+px] = lut[c][src[3*px+c]]
								}
							}
						}
						// Every frame of a still image is the same picture.
						for c := 0; c < 3; c++ {
							ch := out[c*chLen : (c+1)*chLen]
							for t := 1; t < T; t++ {
								copy(ch[t*frame:(t+1)*frame], ch[:frame])
							}
						}
					}
				}
			}
		}
	})
	return p, nil
}
