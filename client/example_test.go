package client_test

import (
	"context"
	"errors"
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
	eng, err := engine.New(engine.Config{Model: m.LM, MMProj: m.MMProj, MVProj: m.MVProj, RandomWeights: true})
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

func ExampleClient_Score() {
	url, stop := demoServer()
	defer stop()
	c := client.New(url)
	scores, err := c.Score(context.Background(), client.Text("which?"), []client.Input{client.Text("first"), client.Text("second")}, false)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(scores), scores[0] >= -1 && scores[0] <= 1)
	// Output: 2 true
}

func ExampleClient_Models() {
	url, stop := demoServer()
	defer stop()
	c := client.New(url)
	if err := c.Health(context.Background()); err != nil {
		panic(err)
	}
	models, err := c.Models(context.Background())
	if err != nil {
		panic(err)
	}
	m := models[0]
	fmt.Println(m.Modalities, m.MultivectorDimension, m.RandomWeights)
	// Output: [text image] 128 true
}

func ExampleWithAPIKey() {
	dir, _ := os.MkdirTemp("", "vembed-client-example-")
	defer os.RemoveAll(dir)
	m, err := synth.WriteDemo(dir)
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.Config{Model: m.LM, MMProj: m.MMProj})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(server.New(eng, server.Options{APIKeys: []string{"sesame"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()

	_, err = client.New(srv.URL).Models(context.Background())
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println("without the key:", apiErr.Status, apiErr.Code)
	}
	models, err := client.New(srv.URL, client.WithAPIKey("sesame")).Models(context.Background())
	fmt.Println("with it:", len(models), err)
	// Output:
	// without the key: 401 invalid_api_key
	// with it: 1 <nil>
}
