package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeShutdownAnswersEveryClient: a signal while requests are running
// and queued ends serve with no error (exit code 0) after every client got
// an answer: its embedding, or a 503 "shutting down" for work not started.
func TestServeShutdownAnswersEveryClient(t *testing.T) {
	var o serveOptions
	o.addr = "127.0.0.1:0"
	o.grace = 20 * time.Second
	// Small steps, so that sixteen long texts are still running and queued
	// when the signal comes.
	o.eng.MaxBatchTokens = 64
	o.eng.EmbeddingCacheBytes = -1
	addrc := make(chan string, 1)
	o.ready = func(a string) { addrc <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	var url string
	select {
	case a := <-addrc:
		url = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	const clients = 16
	var wg sync.WaitGroup
	codes := make([]int, clients)
	errs := make([]error, clients)
	started := make(chan struct{}, clients)
	for i := range clients {
		wg.Go(func() {
			body := fmt.Sprintf(`{"input": %q}`, strings.Repeat(fmt.Sprintf("word%d ", i), 400))
			req, _ := http.NewRequest("POST", url+"/v1/embeddings", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			started <- struct{}{}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var out map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				errs[i] = fmt.Errorf("status %d: body is not JSON: %w", resp.StatusCode, err)
			}
			codes[i] = resp.StatusCode
		})
	}
	for range clients {
		<-started
	}
	time.Sleep(300 * time.Millisecond) // the requests are in the engine
	cancel()
	wg.Wait()
	if err := <-done; err != nil {
		t.Errorf("serve returned %v after a signal with work queued, want nil (exit code 0)", err)
	}
	var ok, refused int
	for i := range clients {
		switch {
		case errs[i] != nil:
			t.Errorf("client %d got no answer: %v", i, errs[i])
		case codes[i] == 200:
			ok++
		case codes[i] == 503:
			refused++
		default:
			t.Errorf("client %d: status %d", i, codes[i])
		}
	}
	t.Logf("%d answered, %d refused as shutting down", ok, refused)
}
