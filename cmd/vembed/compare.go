package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/vembed/vembed/compare"
	"github.com/vembed/vembed/kernels"
)

func init() {
	register(&command{name: "compare", summary: "per-stage and per-patch divergence of two models or engines on images: heatmaps and an HTML report", run: runCompare})
}

const compareUsage = `--a SIDE --b SIDE [--out DIR] IMAGE...

A SIDE is LM.gguf,MMPROJ.gguf (optionally @TIER to force a kernel tier,
e.g. @reference or @avx2-int8) or a directory of tensors dumped by another
engine in the format of vembed embed --dump (package compare documents it).
For each image prints the cosine distance of every stage (patches, vision
output, merger, image hidden states, hidden states, embedding) and, with
--out, writes a heatmap per stage over the image (one colour scale per
stage across images), report.json and DIR/index.html.`

func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", compareUsage, stderr)
	aSpec := fs.String("a", "", "the reference `side`")
	bSpec := fs.String("b", "", "the `side` compared with it")
	out := fs.String("out", "", "write heatmaps and index.html into `DIR`")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *aSpec == "":
		return usageError(fs, stderr, "--a is required")
	case *bSpec == "":
		return usageError(fs, stderr, "--b is required")
	case len(pos) == 0:
		return usageError(fs, stderr, "give at least one IMAGE")
	}
	var images []compare.Input
	for _, p := range pos {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		images = append(images, compare.Input{Name: filepath.Base(p), Data: b})
	}
	// Two engines that each embed a few images once: packing weights at
	// load would cost more than it saves (see modelFlags.applyPacking).
	kernels.SetPacking(false)
	a, err := compare.Open(*aSpec)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := compare.Open(*bSpec)
	if err != nil {
		return err
	}
	defer b.Close()
	rep, err := compare.Run(context.Background(), a, b, images, *out)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "image\tgrid\tstage\trows\tmean 1-cos\tworst\tcosine")
	for _, im := range rep.Images {
		for _, s := range im.Stages {
			fmt.Fprintf(tw, "%s\t%dx%d\t%s\t%d\t%.4g\t%.4g\t%.8f\n", im.Name, im.Grid[1], im.Grid[2], s.Name, s.Rows, s.Mean, s.Worst, s.Cosine)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *out != "" {
		fmt.Fprintln(stderr, "vembed compare: report in", filepath.Join(*out, "index.html"))
	}
	return nil
}
