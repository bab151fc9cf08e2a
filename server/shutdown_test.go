package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownWithSpareConnection: a client's connection that never sent
// a request (HTTP clients open spare ones) does not turn a clean shutdown
// into an error. net/http's Shutdown counts such a connection as busy for
// its first five seconds, so Run used to report a failed shutdown, and
// vembed serve exit 1, although every request had its answer.
func TestShutdownWithSpareConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := newTestHandler(&fakeEmbedder{}, Options{})
	go func() { done <- Run(ctx, ln, h, slog.New(slog.NewTextHandler(io.Discard, nil)), 300*time.Millisecond) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/embeddings", "application/json", strings.NewReader(`{"input":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spare, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	time.Sleep(50 * time.Millisecond) // the server has accepted it
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v, want nil: no request was running", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	spare.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := spare.Read(make([]byte, 1)); err == nil {
		t.Error("the spare connection is still open")
	}
}
