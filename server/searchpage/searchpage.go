// Package searchpage is the search page that vembed serve --index shows
// at /: one self-contained HTML file (its script and style inline, nothing
// fetched from elsewhere) that calls POST /v1/search, GET /v1/index and
// GET /v1/pages/{id} of the server that served it.
//
// The page is public: it holds no data, and it asks for the API key when
// the API answers 401, keeping it in the tab's sessionStorage and sending
// it as "Authorization: Bearer". Page images are fetched with that header
// and shown from blob URLs, since an <img src> could not carry it.
//
// The response's Content-Security-Policy allows only the page's own
// inline script and style (by their SHA-256 digests), images from the
// server, blob: and data: URLs, and requests to the server itself, so
// text from the index that reached the DOM as markup still could not run.
// The page itself never parses data as markup (textContent only).
package searchpage

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

//go:embed page.html
var page []byte

var (
	csp  = mustPolicy(page)
	etag = fmt.Sprintf(`"%x"`, sha256.Sum256(page))
)

// Handler serves the page. Mount it on "GET /{$}" so that only / is the
// page and other paths keep the API's 404.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// A new binary may serve a new page: the browser asks each
		// time and gets 304 while it is the same.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", etag)
		h.Set("Content-Type", "text/html; charset=utf-8")
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		w.Write(page)
	})
}

// mustPolicy builds the Content-Security-Policy of the page from the
// digests of its one inline script and one inline style.
func mustPolicy(html []byte) string {
	script, err := inline(html, "script")
	if err != nil {
		panic(err)
	}
	style, err := inline(html, "style")
	if err != nil {
		panic(err)
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src " + digest(script),
		"style-src " + digest(style),
		"img-src 'self' blob: data:",
		"connect-src 'self'",
		"form-action 'self'",
		"base-uri 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

// inline returns the text of the document's only <tag> element.
func inline(html []byte, tag string) ([]byte, error) {
	open, end := []byte("<"+tag+">"), []byte("</"+tag+">")
	if n := bytes.Count(html, []byte("<"+tag)); n != 1 {
		return nil, fmt.Errorf("searchpage: page has %d <%s> elements, want one", n, tag)
	}
	_, rest, ok := bytes.Cut(html, open)
	if !ok {
		return nil, fmt.Errorf("searchpage: <%s> has attributes; its digest would not cover them", tag)
	}
	body, _, ok := bytes.Cut(rest, end)
	if !ok {
		return nil, fmt.Errorf("searchpage: <%s> is not closed", tag)
	}
	return body, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
