package server

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/imagefetch"
)

// slowSenders opens n connections that each declare a body of declared
// bytes and send only its first bytes, then stall.
func slowSenders(t *testing.T, addr string, n int, declared int64) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"input\": \"", declared)
	}
}

// TestDeclaredLengthCostsNothing: clients declaring 64 MiB bodies and
// sending a few bytes make the server hold what they sent, not what they
// declared. Before, each one's buffer of the declared length was allocated
// at once: 16 such clients took 1 GiB.
func TestDeclaredLengthCostsNothing(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the senders' connections are closed
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	slowSenders(t, strings.TrimPrefix(srv.URL, "http://"), 16, 64<<20)
	waitFor(t, "every sender's body is being read", func() bool { return h.held.used.Load() >= 16*firstChunk })
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("16 clients declaring 64 MiB: %d KiB held, heap +%d KiB", h.held.used.Load()>>10, grew>>10)
	if held := h.held.used.Load(); held != 16*firstChunk {
		t.Errorf("%d bytes held, want %d", held, 16*firstChunk)
	}
	if grew > 64<<20 {
		t.Errorf("the heap grew by %d MiB for 16 clients that sent a few bytes", grew>>20)
	}
}

// TestInflightBudget: past MaxInflightBytes of bodies held, a request gets
// 429 with Retry-After; what a request held is given back when it is
// answered.
func TestInflightBudget(t *testing.T) {
	h := newTestHandler(&fakeEmbedder{}, Options{MaxBodyBytes: 1 << 20, MaxInflightBytes: 1 << 20})
	srv := httptest.NewServer(h)
	defer srv.Close()
	// A client stalls after half a megabyte of a 1 MiB body.
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{\"input\": \"%s", 1<<20, strings.Repeat("a", 600<<10))
	waitFor(t, "the stalled body is held", func() bool { return h.held.used.Load() >= 600<<10 })
	body := `{"input": "` + strings.Repeat("b", 600<<10) + `"}`
	resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(msg), "request data") {
		t.Errorf("beside a held body: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	c.Close()
	waitFor(t, "the stalled body is given back", func() bool { return h.held.used.Load() == 0 })
	if status, out := do(t, h, "POST", "/v1/embeddings", body); status != 200 {
		t.Errorf("alone: %d %v", status, out)
	}
	if n := h.held.used.Load(); n != 0 {
		t.Errorf("%d bytes still held after the requests were answered", n)
	}
}

// TestReadBody: bodies with and without a length, over the limit, short.
func TestReadBody(t *testing.T) {
	const limit = 300 << 10
	h := newTestHandler(&fakeEmbedder{}, Options{MaxBodyBytes: limit})
	srv := httptest.NewServer(h)
	defer srv.Close()
	text := strings.Repeat("x", 250<<10)
	for _, c := range []struct {
		name   string
		body   string
		length int64 // -1: chunked
		want   int
	}{
		{"with length", `{"input": "` + text + `"}`, -2, 200},
		{"chunked", `{"input": "` + text + `"}`, -1, 200},
		{"empty", ``, 0, 400},
		{"over the limit, with length", `{"input": "` + text + text + `"}`, -2, 413},
		{"over the limit, chunked", `{"input": "` + text + text + `"}`, -1, 413},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/embeddings", io.MultiReader(strings.NewReader(c.body)))
		switch c.length {
		case -2:
			req.ContentLength = int64(len(c.body))
		case -1:
			req.ContentLength = -1
		default:
			req.ContentLength = c.length
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, msg, c.want)
		}
	}
	// A body shorter than its Content-Length.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"input\": \"a\"}")
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 400")) {
		t.Errorf("short body: %q", got)
	}
	if n := h.held.used.Load(); n != 0 {
		t.Errorf("%d bytes still held", n)
	}
}

// TestImageURLBounds: a request's image URLs are bounded in number, and
// the images fetched count against MaxInflightBytes.
func TestImageURLBounds(t *testing.T) {
	var b bytes.Buffer
	png.Encode(&b, noise(200, 200))
	img := b.Bytes()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	store := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(img) })}}
	store.Start()
	defer store.Close()
	fetch := imagefetch.New(imagefetch.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	urls := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"image": "%s/%d.png"}`, store.URL, i))
		}
		return `{"input": [` + strings.Join(parts, ",") + `]}`
	}
	h := newTestHandler(&fakeEmbedder{}, Options{ImageFetcher: fetch, MaxImageURLs: 3})
	if status, out := do(t, h, "POST", "/v1/embeddings", urls(3)); status != 200 {
		t.Errorf("3 URLs: %d %v", status, out)
	}
	status, out := do(t, h, "POST", "/v1/embeddings", urls(4))
	if status != 400 {
		t.Errorf("4 URLs, limit 3: %d %v", status, out)
	}
	checkError(t, out, "input", "over the limit of 3")

	small := newTestHandler(&fakeEmbedder{}, Options{ImageFetcher: fetch, MaxBodyBytes: int64(len(img)) * 5 / 2, MaxInflightBytes: int64(len(img)) * 5 / 2})
	rec := httptest.NewRecorder()
	small.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(urls(3))))
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("3 images of %d bytes under a budget of 2.5: %d %s", len(img), rec.Code, rec.Body.Bytes())
	}
	if n := small.held.used.Load(); n != 0 {
		t.Errorf("%d bytes still held", n)
	}
	b64 := base64.StdEncoding.EncodeToString(img)
	if status, out := do(t, small, "POST", "/v1/embeddings", `{"input": [{"image": "`+b64+`"}]}`); status != 200 {
		t.Errorf("inline image under the same budget: %d %v", status, out)
	}
}

// noise is an image that PNG cannot shrink much.
func noise(w, h int) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	x := uint32(1)
	for i := range g.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		g.Pix[i] = byte(x)
	}
	return g
}
