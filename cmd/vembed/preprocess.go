package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/internal/atomicfile"
)

func init() {
	register(&command{
		name:    "preprocess",
		summary: "an image to the model's patch matrix",
		run:     runPreprocess,
	})
}

func runPreprocess(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("preprocess", "--mmproj MMPROJ.gguf [--min-pixels N] [--max-pixels N] IMAGE --out FILE [--resized FILE]", stderr)
	mmproj := fs.String("mmproj", "", "vision GGUF (mmproj) giving patch size, merge size, mean/std and pixel limits")
	minPixels := fs.Int("min-pixels", 0, "smallest resized area in pixels (default: the mmproj's, else jina-v4's 3136)")
	maxPixels := fs.Int("max-pixels", 0, "largest resized area in pixels (default: the mmproj's, else jina-v4's 602112)")
	out := fs.String("out", "", "write the patch matrix here as little-endian float32, rows of 3*2*P*P values")
	resized := fs.String("resized", "", "also write the resized image here as raw RGB bytes")
	exif := fs.Bool("exif-orientation", false, "apply the EXIF orientation (the reference does not)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *mmproj == "":
		return usageError(fs, stderr, "--mmproj is required")
	case *out == "":
		return usageError(fs, stderr, "--out is required")
	case len(pos) != 1:
		return usageError(fs, stderr, "give one IMAGE (got %d arguments)", len(pos))
	}
	cfg, err := preprocessConfig(*mmproj)
	if err != nil {
		return err
	}
	if *minPixels > 0 {
		cfg.MinPixels = *minPixels
	}
	if *maxPixels > 0 {
		cfg.MaxPixels = *maxPixels
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	img, err := imageproc.Decode(data, imageproc.DecodeOptions{ApplyEXIFOrientation: *exif})
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	w, h, err := cfg.TargetSize(img.Width, img.Height)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	img = imageproc.ResizeBicubic(img, w, h)
	p, err := imageproc.Patchify(img, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	if err := writeFloat32s(*out, p.Data); err != nil {
		return err
	}
	if *resized != "" {
		if err := atomicfile.WriteFile(*resized, img.Pix); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stdout, "%d %d %d\n", p.GridT, p.GridH, p.GridW)
	return err
}

// preprocessConfig reads the image preprocessing parameters from an
// mmproj's metadata; pixel limits it does not record fall back to
// jina-embeddings-v4's.
func preprocessConfig(path string) (imageproc.Config, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return imageproc.Config{}, err
	}
	defer f.Close()
	vc, err := f.VisionConfig()
	if err != nil {
		return imageproc.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg := imageproc.JinaV4Config()
	cfg.PatchSize = vc.PatchSize
	cfg.MergeSize = vc.SpatialMergeSize
	cfg.Mean, cfg.Std = vc.ImageMean, vc.ImageStd
	if vc.MinPixels > 0 {
		cfg.MinPixels = vc.MinPixels
	}
	if vc.MaxPixels > 0 {
		cfg.MaxPixels = vc.MaxPixels
	}
	return cfg, nil
}

// writeFloat32s writes v as little-endian float32 values.
func writeFloat32s(path string, v []float32) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		var b [4]byte
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			if _, err := w.Write(b[:]); err != nil {
				return err
			}
		}
		return nil
	})
}
