package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// newByteBar returns a progress bar of total bytes on w, drawn only when w
// is a terminal: redirected output gets no carriage-return lines.
func newByteBar(w io.Writer, total int64, desc string) *progressbar.ProgressBar {
	return newBar(w, total, desc, true)
}

// newBar is newByteBar for a count of bytes (bytes) or of other things.
func newBar(w io.Writer, total int64, desc string, bytes bool) *progressbar.ProgressBar {
	visible := false
	if f, ok := w.(*os.File); ok {
		visible = term.IsTerminal(int(f.Fd()))
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionOnCompletion(func() { io.WriteString(w, "\n") }),
	)
}
