package pdf

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// TestInterruptMidCall stops renders at deadlines from well inside the
// first calls to past the end, so that interrupts land in every part of
// a render, memory growth included: each render ends or reports its
// deadline, an interrupted document refuses further work and closes, and
// the pool's next instance renders. Under the race detector it checks
// that no kill frees an instance's memory while its call runs (guard).
func TestInterruptMidCall(t *testing.T) {
	r := renderer(t)
	data := synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Image: testImage(600, 800), Text: []string{"interrupted"}}}, synth.PDFOptions{})
	interrupted := 0
	for wait := 250 * time.Microsecond; wait <= 2*time.Second; wait *= 2 {
		d, err := r.Open(context.Background(), data, "")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err = d.Render(ctx, 0, 200)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded):
			interrupted++
			if _, err := d.Render(context.Background(), 0, 72); err == nil {
				t.Errorf("after %v: an interrupted document still renders", wait)
			}
		default:
			t.Errorf("after %v: %v", wait, err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("after %v: closing: %v", wait, err)
		}
	}
	if interrupted == 0 {
		t.Error("no render was interrupted") // a 1700x2200 render takes far longer than 250 µs
	}
	d := open(t, data, "")
	defer d.Close()
	if p, err := d.Render(context.Background(), 0, 72); err != nil || p.Text == "" {
		t.Fatalf("a fresh instance after the interrupts: %v", err)
	}
}

// TestCloseDuringRender closes a renderer while renders run in its
// documents: the renders end with an error, Close returns, and nothing
// frees a memory under a running call.
func TestCloseDuringRender(t *testing.T) {
	renderer(t) // the compilation cache is filled
	opts := testOptions
	opts.CacheDir = sharedCacheDir
	r, err := NewRenderer(opts)
	if err != nil {
		t.Fatal(err)
	}
	data := synth.PDF([]synth.PDFPage{{WidthPt: 612, HeightPt: 792, Image: testImage(600, 800)}}, synth.PDFOptions{})
	var docs []*Document
	for range opts.Workers {
		d, err := r.Open(context.Background(), data, "")
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, len(docs))
	errs := make([]error, len(docs))
	for i, d := range docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for range 50 {
				if _, errs[i] = d.Render(context.Background(), 0, 300); errs[i] != nil {
					return
				}
			}
		}()
	}
	for range docs {
		<-started
	}
	time.Sleep(20 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Error(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("document %d rendered 50 pages through its renderer's Close", i)
		}
	}
	for _, d := range docs {
		d.Close()
	}
}
