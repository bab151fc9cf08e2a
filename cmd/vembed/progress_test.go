package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/engine"
)

// TestProgressOnlyOnTerminals: a spinner draws its description and the
// elapsed time when visible and clears its line when done; on output that
// is not a terminal (files, pipes, tests) loading a model writes nothing.
func TestProgressOnlyOnTerminals(t *testing.T) {
	var drawn bytes.Buffer
	stop := spin(&drawn, "loading the model", true)
	time.Sleep(250 * time.Millisecond)
	stop()
	if !strings.Contains(drawn.String(), "loading the model") || !strings.Contains(drawn.String(), "[0s]") {
		t.Errorf("visible spinner drew %q", drawn.String())
	}

	var stderr bytes.Buffer
	var cfg engine.Config
	if err := writeDemoModel(t.TempDir(), &cfg); err != nil {
		t.Fatal(err)
	}
	eng, err := loadEngine(&stderr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Embed(context.Background(), engine.Request{Inputs: []engine.Input{engine.TextInput("a")}}); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("loading wrote %q to a non-terminal", stderr.String())
	}
}
