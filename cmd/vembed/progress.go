package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vembed/vembed/engine"
)

// newByteBar returns a progress bar of total bytes on w, drawn only when w
// is a terminal: redirected output gets no carriage-return lines.
func newByteBar(w io.Writer, total int64, desc string) *progressbar.ProgressBar {
	return newBar(w, total, desc, true)
}

// newBar is newByteBar for a count of bytes (bytes) or of other things.
func newBar(w io.Writer, total int64, desc string, bytes bool) *progressbar.ProgressBar {
	return newBarOn(w, total, desc, bytes, isTerminal(w))
}

// barThrottle is the least time between two redraws of a bar (a
// variable: tests draw every position).
var barThrottle = 100 * time.Millisecond

// newBarOn is newBar drawn on w when visible.
func newBarOn(w io.Writer, total int64, desc string, bytes, visible bool) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(barThrottle),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionOnCompletion(func() { io.WriteString(w, "\n") }),
	)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// spin draws, while a step of unknown length runs, a spinner with its
// description and the elapsed time on w (when visible); the returned
// function stops it and clears its line.
func spin(w io.Writer, desc string, visible bool) (stop func()) {
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	if !visible {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			bar.Add(1) // each call draws the next spinner frame
			select {
			case <-done:
				bar.Finish()
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// loadEngine loads a model, showing a spinner on stderr when it is a
// terminal: a large model takes seconds to map and to hash (the caches'
// identity of its files).
func loadEngine(stderr io.Writer, cfg engine.Config) (*engine.Engine, error) {
	stop := spin(stderr, "loading the model", isTerminal(stderr))
	defer stop()
	return engine.New(cfg)
}
