package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/visionsvc"
)

type helpEmbedder struct{}

func (helpEmbedder) Embed(context.Context, engine.Request) (*engine.Response, error) {
	return nil, nil
}
func (helpEmbedder) Info() engine.Info { return engine.Info{Name: "help"} }

type helpVision struct{}

func (helpVision) EncodeImages(context.Context, visionsvc.Key, []visionsvc.Item) ([]visionsvc.Result, error) {
	return nil, nil
}

// TestHelpLines: the one-line descriptions vembed -h prints follow what
// the commands do: serve's names every route the server registers (an
// alias by its target), convert's and synth's every checkpoint layout
// and synth's every preset, and vembed -h lists every command.
func TestHelpLines(t *testing.T) {
	words := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" ,;()", r) }) {
			m[w] = true
		}
		return m
	}
	serve := words(commands["serve"].summary)
	h := server.New(helpEmbedder{}, server.Options{Vision: helpVision{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	routes := h.Routes()
	if len(routes) < 15 {
		t.Fatalf("the server lists %d routes", len(routes))
	}
	for _, r := range routes {
		_, path, _ := strings.Cut(r.Pattern, " ")
		if r.AliasOf != "" {
			path = r.AliasOf
		}
		if !serve[path] {
			t.Errorf("vembed serve's help line does not name %s (%s)", path, r.Pattern)
		}
	}
	for _, name := range []string{"convert", "synth"} {
		w := words(commands[name].summary)
		for _, l := range qwenlayout.Layouts() {
			if !w[l] {
				t.Errorf("vembed %s's help line does not name the layout %s", name, l)
			}
		}
	}
	synthWords := words(commands["synth"].summary)
	for _, p := range synth.Presets() {
		if !synthWords[p] {
			t.Errorf("vembed synth's help line does not name the preset %s", p)
		}
	}
	var out bytes.Buffer
	usage(&out)
	for name, c := range commands {
		if c.summary == "" || !strings.Contains(out.String(), "  "+name+" ") || !strings.Contains(out.String(), c.summary) {
			t.Errorf("vembed -h does not list %s with its summary", name)
		}
	}
}
