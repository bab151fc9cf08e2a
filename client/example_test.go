package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/vembed/vembed/client"
	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/synth"
)

// demoServer serves the demo model (tiny, random weights) as
// `vembed serve` does without --model.
func demoServer() (url string, stop func()) {
	dir, _ := os.MkdirTemp("", "vembed-client-example-")
	m, err := synth.WriteDemo(dir)
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.Config{Model: m.LM, MMProj: m.MMProj, MVProj: m.MVProj})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(server.New(eng, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	return srv.URL, func() { srv.Close(); eng.Close(); os.RemoveAll(dir) }
}

func ExampleClient_Embed() {
	url, stop := demoServer()
	defer stop()
	c := client.New(url)
	res, err := c.Embed(context.Background(), client.EmbedRequest{
		Inputs:     []client.Input{client.Text("a cat on a mat"), client.Text("a dog")},
		Dimensions: 32,
	})
	if err != nil {
		panic(err)
	}
	for _, d := range res.Data {
		fmt.Println(d.Index, len(d.Vector))
	}
	// Output:
	// 0 32
	// 1 32
}

func ExampleClient_Rerank() {
	url, stop := demoServer()
	defer stop()
	c := client.New(url)
	docs := []client.Input{client.Text("first"), client.Text("second"), client.Text("third")}
	results, err := c.Rerank(context.Background(), client.RerankRequest{Query: client.Text("which?"), Documents: docs, TopN: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(results), results[0].RelevanceScore >= results[1].RelevanceScore)
	// Output: 2 true
}

func ExampleParts() {
	url, stop := demoServer()
	defer stop()
	c := client.New(url)
	png, _ := os.ReadFile(filepath.Join("testdata", "page.png"))
	res, err := c.Embed(context.Background(), client.EmbedRequest{
		Inputs:      []client.Input{client.Parts(client.Text("figure 3:"), client.ImageBytes(png))},
		Multivector: true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Data), len(res.Data[0].Multi) > 0, len(res.Data[0].Multi[0]))
	// Output: 1 true 128
}
