package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/internal/redistest"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/visionsvc"
)

// replica is an engine served over HTTP on a loopback port.
type replica struct {
	url  string
	eng  *engine.Engine
	srv  *http.Server
	once sync.Once
}

func startReplica(t *testing.T, cfg engine.Config, encoderRole bool) *replica {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if encoderRole {
		opts.Vision = eng
	}
	r := &replica{url: "http://" + ln.Addr().String(), eng: eng, srv: &http.Server{Handler: New(eng, opts)}}
	go r.srv.Serve(ln)
	t.Cleanup(r.kill)
	return r
}

// kill stops the replica at once, cutting the connections of calls in
// flight, as a crashed pod does.
func (r *replica) kill() {
	r.once.Do(func() {
		r.srv.Close()
		r.eng.Close()
	})
}

func patternPNG(t *testing.T, w, h, seed int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*7 + seed*31), uint8(y*5 + seed*17), uint8((x + y + seed) * 3), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// embedImage posts one image input with text and returns its vector as
// base64 (the exact float32 bytes).
func embedImage(url string, img []byte, text, task string) (string, error) {
	content := []any{map[string]any{"image": base64.StdEncoding.EncodeToString(img)}}
	if text != "" {
		content = append(content, map[string]any{"text": text})
	}
	body, _ := json.Marshal(map[string]any{"input": []any{map[string]any{"content": content}}, "task": task, "encoding_format": "base64"})
	resp, err := http.Post(url+"/v1/embeddings", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	var out struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Data) != 1 {
		return "", fmt.Errorf("bad answer %.200s: %v", raw, err)
	}
	return out.Data[0].Embedding, nil
}

func cacheStats(e *engine.Engine, name string) engine.CacheStats {
	for _, c := range e.Stats().Caches {
		if c.Name == name {
			return c
		}
	}
	return engine.CacheStats{}
}

// TestReplicasSharedCacheAndEncoder is the distributed set-up on loopback
// with a real Valkey/Redis server: two language-model replicas and one
// encoder replica. Vectors through the encoder replica are bit-identical
// to a lone engine's; an image embedded through replica A is a hit on
// replica B; killing the encoder mid-run leaves the LM replicas encoding
// themselves with every request answered, and so does killing the cache
// server.
func TestReplicasSharedCacheAndEncoder(t *testing.T) {
	cacheURL, killCache := redistest.Start(t)
	dir := t.TempDir()
	sc, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	lm, mmproj, err := synth.WritePair(dir, sc)
	if err != nil {
		t.Fatal(err)
	}
	base := engine.Config{Model: lm, MMProj: mmproj}
	alone := startReplica(t, base, false)

	shared := base
	shared.CacheURL = cacheURL
	enc := startReplica(t, shared, true)
	lmCfg := shared
	lmCfg.EncoderURLs = []string{enc.url}
	lmCfg.EncoderTimeout = 10 * time.Second
	a := startReplica(t, lmCfg, false)
	b := startReplica(t, lmCfg, false)

	same := func(url string, img []byte, text, task, want string) {
		t.Helper()
		got, err := embedImage(url, img, text, task)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: vector differs from the lone engine's", url)
		}
	}
	img := patternPNG(t, 84, 56, 1)
	want, err := embedImage(alone.url, img, "", "retrieval.passage")
	if err != nil {
		t.Fatal(err)
	}
	// Through A: encoded by the encoder replica, bit-identical.
	same(a.url, img, "", "retrieval.passage", want)
	if n := a.eng.Stats().Images; n != 0 {
		t.Errorf("replica A encoded %d images itself", n)
	}
	if s := cacheStats(a.eng, "encoder-service"); s.Misses != 1 {
		t.Errorf("replica A's calls to the encoder: %+v, want one image sent", s)
	}
	if n := enc.eng.Stats().Images; n != 1 {
		t.Errorf("the encoder replica encoded %d images, want 1", n)
	}

	// The encoder output (written by the encoder replica) and A's result
	// reach the shared cache asynchronously.
	opt, _ := redis.ParseURL(cacheURL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if n, _ := rdb.DBSize(context.Background()).Result(); n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shared cache did not receive the encoder output and the result")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Through B: a hit in the shared cache, nothing encoded anywhere.
	same(b.url, img, "", "retrieval.passage", want)
	if s := cacheStats(b.eng, "shared"); s.Hits != 1 {
		t.Errorf("replica B's shared cache: %+v, want one hit", s)
	}
	// Another task on B: the result is new, the encoder output is shared.
	want2, err := embedImage(alone.url, img, "", "text-matching")
	if err != nil {
		t.Fatal(err)
	}
	same(b.url, img, "", "text-matching", want2)
	if b.eng.Stats().Images != 0 || enc.eng.Stats().Images != 1 {
		t.Errorf("an image known to the shared cache was encoded again (B %d, encoder %d)", b.eng.Stats().Images, enc.eng.Stats().Images)
	}
	if s := cacheStats(b.eng, "encoder-service"); s.Hits+s.Misses != 0 {
		t.Errorf("replica B called the encoder for a shared image: %+v", s)
	}

	// Mid-run, the encoder replica dies, then the cache server: every
	// request is still answered, with the lone engine's vectors.
	const n = 24
	wants := make([]string, n)
	imgs := make([][]byte, n)
	for i := range n {
		imgs[i] = patternPNG(t, 56+14*(i%3), 56, 100+i)
		if wants[i], err = embedImage(alone.url, imgs[i], fmt.Sprint("page ", i), "retrieval.passage"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for c, r := range []*replica{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += 2 {
				got, err := embedImage(r.url, imgs[i], fmt.Sprint("page ", i), "retrieval.passage")
				switch {
				case err != nil:
					errs[i] = err
				case got != wants[i]:
					errs[i] = fmt.Errorf("request %d on %s: vector differs from the lone engine's", i, r.url)
				}
				switch i {
				case 6:
					enc.kill()
				case 16:
					killCache()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	local := a.eng.Stats().Images + b.eng.Stats().Images
	fell := cacheStats(a.eng, "encoder-service").Errors + cacheStats(b.eng, "encoder-service").Errors
	if local == 0 || fell == 0 {
		t.Errorf("after the encoder died the LM replicas encoded %d images themselves (%d counted as fallbacks)", local, fell)
	}
	if s := cacheStats(a.eng, "shared"); s.Errors == 0 {
		t.Errorf("no shared cache errors counted on A after the server died: %+v", s)
	}
	t.Logf("A: %+v; B: %+v", cacheStats(a.eng, "encoder-service"), cacheStats(b.eng, "encoder-service"))
}

// TestVisionRoute: the encoder route refuses malformed frames (400),
// another vision tower (409) and patches that do not match their key
// (400), and answers keys it does not hold as not found.
func TestVisionRoute(t *testing.T) {
	dir := t.TempDir()
	sc, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	lm, mmproj, err := synth.WritePair(dir, sc)
	if err != nil {
		t.Fatal(err)
	}
	enc := startReplica(t, engine.Config{Model: lm, MMProj: mmproj}, true)
	post := func(frame []byte) (int, []byte) {
		resp, err := http.Post(enc.url+visionsvc.Path, visionsvc.MediaType, bytes.NewReader(frame))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	vision := enc.eng.VisionID()
	if code, _ := post([]byte{1, 'K'}); code != 400 {
		t.Errorf("truncated frame: %d", code)
	}
	keys := visionsvc.Request{Kind: visionsvc.KindKeys, Vision: vision, Items: []visionsvc.Item{{Key: visionsvc.Key{5}, GridT: 1, GridH: 2, GridW: 2}}}
	code, raw := post(visionsvc.AppendRequest(nil, keys))
	if code != 200 {
		t.Fatalf("keys frame: %d %s", code, raw)
	}
	if res, err := visionsvc.DecodeResponse(raw, 1); err != nil || res[0].Found {
		t.Errorf("an unknown key: %+v %v", res, err)
	}
	other := keys
	other.Vision = visionsvc.Key{1}
	if code, _ := post(visionsvc.AppendRequest(nil, other)); code != 409 {
		t.Errorf("another vision tower: %d", code)
	}
	// Qwen2.5-VL patches: 3 channels, 2 frames, PatchSize² pixels.
	vals := make([]float32, 4*3*2*sc.Vision.PatchSize*sc.Vision.PatchSize)
	forged := visionsvc.Request{Kind: visionsvc.KindPatches, Vision: vision, Items: []visionsvc.Item{{Key: visionsvc.Key{5}, GridT: 1, GridH: 2, GridW: 2, Patches: vals}}}
	if code, raw := post(visionsvc.AppendRequest(nil, forged)); code != 400 || !bytes.Contains(raw, []byte("content key")) {
		t.Errorf("patches under a forged key: %d %s", code, raw)
	}
}
