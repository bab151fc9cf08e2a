// Package imagefetch downloads images named by http and https URLs in
// requests without letting a client reach what the server can reach and
// the client should not: the server's own loopback, the private network
// behind it, link-local cloud metadata endpoints.
//
// Every address a host name resolves to is checked against the policy, the
// connection is made to the checked address itself (so a DNS answer that
// changes between check and connect cannot redirect it: no rebinding), the
// dialer checks the address once more as it connects, and every redirect
// goes through the same checks. IP literals in the numeric forms URL
// parsers disagree on (2130706433, 0177.0.0.1, 0x7f.1) are read as
// inet_aton reads them and checked like any address. Downloads are bounded
// in size and time, run a bounded number at a time, and must sniff as an
// image.
//
// Refused by default: loopback, private (RFC 1918, fc00::/7), link-local
// (169.254.0.0/16 with the metadata address 169.254.169.254, fe80::/10),
// shared CGNAT space (100.64.0.0/10), multicast, unspecified, broadcast,
// reserved (240.0.0.0/4), benchmarking (198.18.0.0/15), and the IPv6 forms
// that embed an IPv4 address (mapped ::ffff:0:0/96, NAT64 64:ff9b::/96,
// 6to4 2002::/16: refused when the embedded address is) and Teredo
// (2001::/32).
package imagefetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Policy says which image URLs may be fetched and how.
type Policy struct {
	// AllowDomains, when set, limits fetching to these hosts and their
	// subdomains ("example.com" allows img.example.com).
	AllowDomains []string
	// AllowNets lets addresses in these prefixes through although they
	// are in a refused range (an internal image store, say).
	AllowNets []netip.Prefix
	// MaxBytes bounds a download (default 32 MiB).
	MaxBytes int64
	// Timeout bounds one download, redirects included (default 15 s).
	Timeout time.Duration
	// Concurrency bounds the downloads in flight across all requests
	// (default 8).
	Concurrency int
	// MaxRedirects bounds the redirects followed (default 3).
	MaxRedirects int
	// Resolver looks host names up (default net.DefaultResolver).
	Resolver Resolver
}

// Resolver resolves host names; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrRefused marks a URL the policy does not allow.
var ErrRefused = errors.New("image URL refused")

// Fetcher downloads images under a Policy. It is safe for concurrent use.
type Fetcher struct {
	p      Policy
	client *http.Client
	slots  chan struct{}
}

// New returns a Fetcher for the policy.
func New(p Policy) *Fetcher {
	if p.MaxBytes <= 0 {
		p.MaxBytes = 32 << 20
	}
	if p.Timeout <= 0 {
		p.Timeout = 15 * time.Second
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 8
	}
	if p.MaxRedirects <= 0 {
		p.MaxRedirects = 3
	}
	if p.Resolver == nil {
		p.Resolver = net.DefaultResolver
	}
	for i, d := range p.AllowDomains {
		p.AllowDomains[i] = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(d, "."), "."))
	}
	f := &Fetcher{p: p, slots: make(chan struct{}, p.Concurrency)}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: f.control}
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would connect to addresses we never checked
			DialContext:           f.dialer(dialer),
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: p.Timeout,
			MaxIdleConns:          16,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > p.MaxRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrRefused, p.MaxRedirects)
			}
			_, err := f.checkURL(req.URL)
			return err
		},
	}
	return f
}

// Fetch downloads the image at rawURL.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if _, err := f.checkURL(u); err != nil {
		return nil, err
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, f.p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	req.Header.Set("Accept", "image/*")
	req.Header.Set("User-Agent", "vembed-imagefetch")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redact(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: status %s", redact(u), resp.Status)
	}
	if resp.ContentLength > f.p.MaxBytes {
		return nil, fmt.Errorf("fetching %s: %d bytes, over the limit of %d", redact(u), resp.ContentLength, f.p.MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, f.p.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redact(u), err)
	}
	if int64(len(data)) > f.p.MaxBytes {
		return nil, fmt.Errorf("fetching %s: over the limit of %d bytes", redact(u), f.p.MaxBytes)
	}
	if ct := http.DetectContentType(data); !strings.HasPrefix(ct, "image/") {
		return nil, fmt.Errorf("fetching %s: the content is %s, not an image", redact(u), ct)
	}
	return data, nil
}

// redact drops credentials and the query from a URL shown in errors.
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// checkURL checks a URL's scheme, host and, for IP literals, address.
func (f *Fetcher) checkURL(u *url.URL) (host string, err error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%w: scheme %q (want http or https)", ErrRefused, u.Scheme)
	}
	host = strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return "", fmt.Errorf("%w: no host", ErrRefused)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// RFC 6761: always the loopback, whatever a resolver says.
		return "", fmt.Errorf("%w: %s is a loopback name", ErrRefused, host)
	}
	if len(f.p.AllowDomains) > 0 && !f.domainAllowed(host) {
		return "", fmt.Errorf("%w: host %s is not in the allowed domains", ErrRefused, host)
	}
	if ip, ok := literal(host); ok {
		if err := f.checkAddr(ip); err != nil {
			return "", err
		}
	}
	return host, nil
}

func (f *Fetcher) domainAllowed(host string) bool {
	for _, d := range f.p.AllowDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// dialer resolves the host once, checks every address, and connects to a
// checked one, so the address that was checked is the one connected to.
func (f *Fetcher) dialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, ok := literal(host); ok {
			ips = []netip.Addr{ip}
		} else if ips, err = f.p.Resolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		var refused error
		for _, ip := range ips {
			if err := f.checkAddr(ip); err != nil {
				refused = err
				continue
			}
			return d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		}
		if refused == nil {
			refused = fmt.Errorf("%w: %s has no address", ErrRefused, host)
		}
		return nil, refused
	}
}

// control checks the address a socket is about to connect to: the last
// line of defence, whatever resolved it.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrRefused, address)
	}
	return f.checkAddr(ap.Addr())
}

// checkAddr refuses an address in a refused range unless AllowNets holds it.
func (f *Fetcher) checkAddr(ip netip.Addr) error {
	ip = ip.WithZone("")
	for _, p := range f.p.AllowNets {
		if p.Contains(ip) || p.Contains(ip.Unmap()) {
			return nil
		}
	}
	if why := refusedRange(ip); why != "" {
		return fmt.Errorf("%w: %s is a %s address", ErrRefused, ip, why)
	}
	return nil
}

var refusedPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("100::/64"), "discard"},
}

// refusedRange names the refused range holding ip, or returns "".
func refusedRange(ip netip.Addr) string {
	if ip.Is4In6() {
		return refusedRange(ip.Unmap())
	}
	if ip.Is6() {
		b := ip.As16()
		// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4
		// address that a gateway would connect to.
		if netip.MustParsePrefix("64:ff9b::/96").Contains(ip) {
			if why := refusedRange(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
				return "NAT64 " + why
			}
		}
		if netip.MustParsePrefix("2002::/16").Contains(ip) {
			if why := refusedRange(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
				return "6to4 " + why
			}
		}
	}
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, r := range refusedPrefixes {
		if r.p.Contains(ip) {
			return r.why
		}
	}
	return ""
}

// literal reads host as an IP address: IPv6 and dotted-decimal IPv4, and
// the forms inet_aton accepts (one to four parts, each decimal, octal with
// a leading 0 or hexadecimal with 0x), which some resolvers and HTTP
// clients turn into addresses too.
func literal(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil || p == "" && base != 8 {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// The last part fills the remaining bytes: a, a.b (b: 24 bits),
	// a.b.c (c: 16 bits), a.b.c.d.
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*uint(i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*uint(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
