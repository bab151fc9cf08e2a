package main

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeImageURLs: an image URL is refused by default, and with
// --allow-image-urls plus the image store's network allowed, embeds
// exactly as the same image sent inline; a URL pointing at the server's
// loopback stays refused.
func TestServeImageURLs(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, dir)
	img := writePNG(t, filepath.Join(dir, "a.png"), 60, 40, 3)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	store := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(img) })}}
	store.Start()
	defer store.Close()
	imgURL := store.URL + "/a.png"

	off := startServer(t, serveOptions{models: m})
	if status, out := post(t, off, `{"input":[{"image":"`+imgURL+`"}]}`); status != 400 || !strings.Contains(fmt.Sprint(out), "allow-image-urls") {
		t.Errorf("URL with fetching off: %d %v", status, out)
	}

	on := startServer(t, serveOptions{models: m, allowURLs: true, nets: "127.0.0.2/32"})
	status, byURL := post(t, on, `{"input":[{"image":"`+imgURL+`"},{"content":[{"text":"see"},{"type":"image_url","image_url":{"url":"`+imgURL+`"}}]}]}`)
	if status != 200 {
		t.Fatalf("URL: %d %v", status, byURL)
	}
	b64 := base64.StdEncoding.EncodeToString(img)
	status, inline := post(t, on, `{"input":[{"image":"`+b64+`"},{"content":[{"text":"see"},{"image":"`+b64+`"}]}]}`)
	if status != 200 {
		t.Fatalf("inline: %d %v", status, inline)
	}
	if fmt.Sprint(byURL["data"]) != fmt.Sprint(inline["data"]) {
		t.Error("an image fetched by URL embeds differently from the same image inline")
	}
	loop := strings.Replace(imgURL, "127.0.0.2", "127.0.0.1", 1)
	if status, out := post(t, on, `{"input":[{"image":"`+loop+`"}]}`); status != 400 || !strings.Contains(fmt.Sprint(out), "refused") {
		t.Errorf("loopback URL: %d %v", status, out)
	}
}
