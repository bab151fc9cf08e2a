package imagefetch

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// serveOn starts an HTTP server on ip (any 127/8 address is local on
// Linux) and counts its requests.
func serveOn(t *testing.T, ip string, h http.HandlerFunc) (port string, hits *atomic.Int64) {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	hits = new(atomic.Int64)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, hits
}

// fakeResolver answers host names from a table, a different answer on each
// lookup when several are given (a rebinding DNS server).
type fakeResolver struct {
	answers map[string][]string
	calls   atomic.Int64
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	a, ok := r.answers[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	n := int(r.calls.Add(1)) - 1
	return []netip.Addr{netip.MustParseAddr(a[min(n, len(a)-1)])}, nil
}

func TestRefusedByDefault(t *testing.T) {
	img := pngBytes(t)
	port, hits := serveOn(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) { w.Write(img) })
	f := New(Policy{Resolver: &fakeResolver{answers: map[string][]string{
		"localtest.example": {"127.0.0.1"}, "private.example": {"10.1.2.3"}, "meta.example": {"169.254.169.254"},
		"mapped.example": {"::ffff:127.0.0.1"}, "nat64.example": {"64:ff9b::7f00:1"}, "sixtofour.example": {"2002:7f00:1::1"},
		"cgnat.example": {"100.64.0.1"}, "v6local.example": {"::1"}, "ula.example": {"fd00:ec2::254"},
	}}})
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/a.png",
		"http://localhost:" + port + "/a.png",
		"http://localtest.example:" + port + "/a.png",
		"http://2130706433:" + port + "/a.png",         // decimal
		"http://0177.0.0.1:" + port + "/a.png",         // octal
		"http://0x7f.1:" + port + "/a.png",             // hexadecimal, two parts
		"http://127.1:" + port + "/a.png",              // short form
		"http://[::1]:" + port + "/a.png",              // IPv6 loopback
		"http://[::ffff:127.0.0.1]:" + port + "/a.png", // IPv4-mapped
		"http://mapped.example:" + port + "/a.png",
		"http://nat64.example:" + port + "/a.png",
		"http://sixtofour.example:" + port + "/a.png",
		"http://private.example/a.png",
		"http://192.168.1.1/a.png",
		"http://169.254.169.254/latest/meta-data/",
		"http://meta.example/latest/meta-data/",
		"http://[fe80::1%25eth0]/a.png",
		"http://cgnat.example/a.png",
		"http://0.0.0.0:" + port + "/a.png",
		"http://v6local.example:" + port + "/a.png",
		"http://ula.example/a.png",
		"http://224.0.0.1/a.png",
		"ftp://example.com/a.png",
		"file:///etc/passwd",
	} {
		_, err := f.Fetch(context.Background(), u)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

// TestAllowedAndRebinding: an allowed address is fetched; a host whose DNS
// answer changes to loopback after the check still reaches only the
// checked address; a redirect to a refused address is refused.
func TestAllowedAndRebinding(t *testing.T) {
	img := pngBytes(t)
	secretPort, secretHits := serveOn(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) { w.Write(img) })
	goodPort, _ := serveOn(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://127.0.0.1:"+secretPort+"/secret.png", http.StatusFound)
		case "/redirect-name":
			http.Redirect(w, r, "http://localhost:"+secretPort+"/secret.png", http.StatusFound)
		case "/text":
			w.Write([]byte("hello, not an image"))
		case "/big":
			w.Write(append(img, make([]byte, 2000)...))
		default:
			w.Write(img)
		}
	})
	res := &fakeResolver{answers: map[string][]string{
		"images.example": {"127.0.0.2"},
		// A rebinding answer: the allowed address first, loopback after.
		"rebind.example": {"127.0.0.2", "127.0.0.1", "127.0.0.1"},
	}}
	f := New(Policy{Resolver: res, AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, MaxBytes: 1000})
	got, err := f.Fetch(context.Background(), "http://images.example:"+goodPort+"/a.png")
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("allowed fetch: %v", err)
	}
	for range 3 {
		if _, err := f.Fetch(context.Background(), "http://rebind.example:"+secretPort+"/secret.png"); err == nil {
			// Fine only if it reached 127.0.0.2 (where nothing listens on
			// that port); the secret server must never be hit.
			t.Log("rebind fetch succeeded")
		}
	}
	for _, p := range []string{"/redirect", "/redirect-name"} {
		if _, err := f.Fetch(context.Background(), "http://images.example:"+goodPort+p); !errors.Is(err, ErrRefused) {
			t.Errorf("redirect %s to loopback: %v, want refused", p, err)
		}
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the refused server was reached %d times", n)
	}
	if _, err := f.Fetch(context.Background(), "http://images.example:"+goodPort+"/text"); err == nil || !strings.Contains(err.Error(), "not an image") {
		t.Errorf("text content: %v", err)
	}
	if _, err := f.Fetch(context.Background(), "http://images.example:"+goodPort+"/big"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("over-size content: %v", err)
	}
	only := New(Policy{Resolver: res, AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, AllowDomains: []string{"example.org"}})
	if _, err := only.Fetch(context.Background(), "http://images.example:"+goodPort+"/a.png"); !errors.Is(err, ErrRefused) {
		t.Errorf("host outside the allowed domains: %v", err)
	}
}

func TestLiteral(t *testing.T) {
	for host, want := range map[string]string{
		"2130706433": "127.0.0.1", "0177.0.0.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "127.1": "127.0.0.1",
		"10.0.258": "10.0.1.2", "0x0a000001": "10.0.0.1", "1.2.3.4": "1.2.3.4", "::1": "::1",
	} {
		got, ok := literal(host)
		if !ok || got.String() != want {
			t.Errorf("literal(%q) = %v %v, want %s", host, got, ok, want)
		}
	}
	for _, host := range []string{"example.com", "bad.cafe", "1.2.3.4.5", "256.1.1.1", "4294967296", "0x", "1..2", ""} {
		if got, ok := literal(host); ok {
			t.Errorf("literal(%q) = %v, want no address", host, got)
		}
	}
}

func FuzzLiteral(f *testing.F) {
	for _, s := range []string{"2130706433", "0177.0.0.1", "0x7f.1", "::ffff:127.0.0.1", "a.b", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if ip, ok := literal(host); ok && !ip.IsValid() {
			t.Fatalf("literal(%q) gave an invalid address", host)
		}
	})
}

// TestDialControl: the socket-level check refuses what the resolver-level
// one would, for any address reaching the dialer by another path.
func TestDialControl(t *testing.T) {
	f := New(Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}})
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": false, "[::1]:443": false, "169.254.169.254:80": false, "[::ffff:10.0.0.1]:80": false,
		"10.9.1.1:80": true, "93.184.216.34:80": true, "[2606:4700::1111]:443": true,
	} {
		if err := f.control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("control(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
}

// FuzzCheckURL: whatever the URL, checking it never panics, and a URL it
// lets through with an IP literal for a host names an address outside the
// refused ranges, however the literal is spelled.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/",
		"http://[::ffff:127.0.0.1]/", "https://[fe80::1%25eth0]:8/", "http://user:pw@example.com/a.png?x=1",
		"http://localhost./", "HTTP://EXAMPLE.COM/", "http://93.184.216.34/", "ftp://x/", "http://[64:ff9b::a00:1]/"} {
		f.Add(s)
	}
	fetch := New(Policy{})
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		host, err := fetch.checkURL(u)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("checkURL(%q): %v does not wrap ErrRefused", raw, err)
			}
			return
		}
		if ip, err := netip.ParseAddr(host); err == nil && refusedRange(ip) != "" {
			t.Fatalf("checkURL(%q) let %s through", raw, ip)
		}
		if ip, ok := literal(host); ok && refusedRange(ip) != "" {
			t.Fatalf("checkURL(%q) let %s (%s) through", raw, host, ip)
		}
	})
}
