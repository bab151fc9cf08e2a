package searchpage

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vembed/vembed/internal/browsertest"
)

// TestHandler: the page with its headers, a 304 for a known ETag, and a
// policy whose digests are those of the page's script and style, so that
// a browser runs them (the browser test in cmd/vembed runs the page).
func TestHandler(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), page) {
		t.Fatalf("GET /: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	policy := rec.Header().Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		body, err := inline(page, tag)
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(body)) == 0 || !strings.Contains(policy, tag+"-src "+digest(body)) {
			t.Fatalf("policy %q lacks the digest of the page's %s", policy, tag)
		}
	}
	for _, d := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(policy, d) {
			t.Fatalf("policy %q lacks %q", policy, d)
		}
	}
	etag := rec.Header().Get("ETag")
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Fatalf("If-None-Match %s: %d, %d bytes", etag, rec.Code, rec.Body.Len())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("HEAD", "/", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("HEAD /: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// TestInline: the policy builder refuses pages whose inline code its
// digests would not cover.
func TestInline(t *testing.T) {
	for _, bad := range []string{
		"<p>no script</p>",
		"<script>a</script><script>b</script>",
		`<script type="module">a</script>`,
		"<script>never closed",
	} {
		if _, err := inline([]byte(bad), "script"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if b, err := inline([]byte("x<script>let a = 1;</script>y"), "script"); err != nil || string(b) != "let a = 1;" {
		t.Fatalf("%q, %v", b, err)
	}
}

// TestPageSelfContained: the page loads nothing from elsewhere, has no
// inline handlers or style attributes (the policy would block them),
// never turns data into markup, and every element its script looks up by
// id exists.
func TestPageSelfContained(t *testing.T) {
	s := string(page)
	if m := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?(https?:)?//`).FindString(s); m != "" {
		t.Errorf("page refers outside: %q", m)
	}
	if m := regexp.MustCompile(`(?i)url\(\s*["']?(https?:)?//|@import`).FindString(s); m != "" {
		t.Errorf("style fetches from outside: %q", m)
	}
	if m := regexp.MustCompile(`(?i)<[a-z][^>]*\s(on[a-z]+|style)\s*=`).FindString(s); m != "" {
		t.Errorf("inline handler or style attribute: %q", m)
	}
	if m := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`).FindString(s); m != "" {
		t.Errorf("page parses strings as markup or code: %q", m)
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(s, -1) {
		if ids[m[1]] {
			t.Errorf("id %q twice", m[1])
		}
		ids[m[1]] = true
	}
	looked := regexp.MustCompile(`\$\("([^"]+)"\)`).FindAllStringSubmatch(s, -1)
	if len(looked) < 20 {
		t.Fatalf("found only %d element lookups; has the script changed how it finds elements?", len(looked))
	}
	for _, m := range looked {
		if !ids[m[1]] {
			t.Errorf("script looks up #%s, which the page lacks", m[1])
		}
	}
}

// TestPageRunsInBrowser loads the page alone in Chromium: its script runs
// under the page's own Content-Security-Policy with no error, and a server
// without the search routes gets a message, not a broken page. (The test
// of searches is cmd/vembed's, against vembed serve --index.)
func TestPageRunsInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	err := chromedp.Do(b.Ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.Poll[chromedp.Void](`document.getElementById("indexinfo").textContent !== ""`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatal(err)
	}
	info, err := chromedp.Run(b.Ctx, chromedp.TextContent(chromedp.CSS("#indexinfo")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "Index details unavailable") || !strings.Contains(info, "404") {
		t.Fatalf("index line %q", info)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Fatalf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}
