package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fileMeta is what HEAD on a resolve URL tells about a file.
type fileMeta struct {
	commit   string
	etag     string // SHA-256 (LFS) or Git blob SHA-1, lower-case hex
	size     int64  // -1 when not given
	location string // where to GET the bytes
}

// Download returns the local path of file in repo at revision (default
// "main"), downloading it into the cache unless it is there already. The
// path is the snapshot's symlink, valid as long as the cache is kept.
func (c *Client) Download(ctx context.Context, repo, revision, file string) (string, error) {
	if revision == "" {
		revision = "main"
	}
	if err := checkRepo(repo); err != nil {
		return "", err
	}
	if err := checkRevision(revision); err != nil {
		return "", err
	}
	if err := checkFile(file); err != nil {
		return "", err
	}
	return c.download(ctx, repo, revision, file, "")
}

// download is Download with an expected hash from a listing ("" if none),
// which the hub's answer for the file must match.
func (c *Client) download(ctx context.Context, repo, revision, file, expect string) (string, error) {
	if commitRe.MatchString(revision) {
		// A commit never changes: a cached file is final.
		if p := c.snapshotPath(repo, revision, file); exists(p) {
			return p, nil
		}
	}
	if c.Offline {
		return c.cachedFile(repo, revision, file)
	}
	meta, err := c.head(ctx, repo, revision, file)
	if err != nil {
		// An unreachable or failing hub (not one that answers "no") leaves
		// a cached copy of the revision usable, as huggingface_hub does.
		var he *Error
		if (!errors.As(err, &he) || he.Status >= 500 || he.Status == http.StatusTooManyRequests) && ctx.Err() == nil {
			if p, cerr := c.cachedFile(repo, revision, file); cerr == nil {
				c.log().Warn("the hub cannot be reached: using the cached file", "repo", repo, "file", file, "revision", revision, "err", err)
				return p, nil
			}
		}
		return "", err
	}
	if expect != "" && meta.etag != expect {
		return "", fmt.Errorf("hub: %s/%s@%s: the listing gives hash %s, the file's answer %s", repo, file, revision, expect, meta.etag)
	}
	return c.fetch(ctx, repo, revision, file, meta)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// resolveURL is {endpoint}/{repo}/resolve/{revision}/{file}, the revision
// escaped whole (refs/pr/1 → refs%2Fpr%2F1) and the file path by element.
func (c *Client) resolveURL(repo, revision, file string) string {
	els := strings.Split(file, "/")
	for i, e := range els {
		els[i] = url.PathEscape(e)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(revision) + "/" + strings.Join(els, "/")
}

// head asks the hub for a file's commit, hash, size and storage URL,
// following redirects that stay on the hub (a relative Location) and
// stopping at one to another place, whose URL is where the bytes are.
func (c *Client) head(ctx context.Context, repo, revision, file string) (*fileMeta, error) {
	hc := *c.httpClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	what := repo + "/" + file + "@" + revision
	u := c.resolveURL(repo, revision, file)
	for hops := 0; ; hops++ {
		req, err := c.newRequest(ctx, http.MethodHead, u)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("hub: %s: %w", what, err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "":
			target, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return nil, fmt.Errorf("hub: %s: bad redirect %q: %w", what, loc, err)
			}
			if parsed, _ := url.Parse(loc); parsed != nil && parsed.Host == "" {
				if hops >= 10 {
					return nil, fmt.Errorf("hub: %s: too many redirects", what)
				}
				u = target.String() // on the hub itself: a renamed repository
				continue
			}
			return c.meta(resp, what, revision, target.String())
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return c.meta(resp, what, revision, u)
		default:
			return nil, hubError(resp, what, req.Header.Get("Authorization") != "")
		}
	}
}

func (c *Client) meta(resp *http.Response, what, revision, location string) (*fileMeta, error) {
	m := &fileMeta{commit: resp.Header.Get("X-Repo-Commit"), location: location, size: -1}
	if m.commit == "" && commitRe.MatchString(revision) {
		m.commit = revision
	}
	if !commitRe.MatchString(m.commit) {
		return nil, fmt.Errorf("hub: %s: the answer names no commit (X-Repo-Commit); is %s a Hugging Face Hub endpoint?", what, c.Endpoint)
	}
	etag := resp.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	m.etag = normalizeEtag(etag)
	if !commitRe.MatchString(m.etag) && !sha256Re.MatchString(m.etag) {
		return nil, fmt.Errorf("hub: %s: the answer gives no SHA-256 or Git hash of the file (ETag %q), so it cannot be verified", what, etag)
	}
	if s := resp.Header.Get("X-Linked-Size"); s != "" {
		m.size = parseSize(s)
	} else if s := resp.Header.Get("Content-Length"); s != "" {
		m.size = parseSize(s)
	}
	return m, nil
}

// normalizeEtag strips a weak marker and quotes, as huggingface_hub does.
func normalizeEtag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.ToLower(strings.Trim(s, `"`))
}

// fetch puts the file described by m into the cache and returns its
// snapshot path.
func (c *Client) fetch(ctx context.Context, repo, revision, file string, m *fileMeta) (string, error) {
	pointer := c.snapshotPath(repo, m.commit, file)
	blob := filepath.Join(c.RepoDir(repo), "blobs", m.etag)
	unlock, err := lockFile(ctx, c.lockPath(repo, m.etag), func() {
		c.log().Info("waiting for another download of the same file", "file", file)
	})
	if err != nil {
		return "", err
	}
	defer unlock()
	if !exists(pointer) || !exists(blob) {
		if !exists(blob) {
			c.log().Info("downloading", "file", repo+"/"+file, "commit", m.commit, "bytes", m.size)
			if err := c.downloadBlob(ctx, repo+"/"+file, blob, m); err != nil {
				return "", err
			}
		}
		if err := link(blob, pointer); err != nil {
			return "", err
		}
	}
	if err := c.writeRef(repo, revision, m.commit); err != nil {
		return "", err
	}
	return pointer, nil
}

// downloadBlob fetches m.location into blob+".incomplete", resuming what a
// previous run left there, retries a transfer cut short, and renames the
// file to blob once its hash matches.
func (c *Client) downloadBlob(ctx context.Context, what, blob string, m *fileMeta) error {
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	part := blob + ".incomplete"
	for attempt := 0; ; attempt++ {
		err := c.transfer(ctx, what, part, m)
		if err == nil {
			break
		}
		var he *Error
		if errors.As(err, &he) && he.Status < 500 || ctx.Err() != nil || attempt >= c.Retries {
			return err
		}
		c.log().Warn("download interrupted: resuming", "file", what, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryDelay(attempt + 1)):
		}
	}
	if err := verify(part, m.etag); err != nil {
		os.Remove(part)
		return fmt.Errorf("hub: %s: %w; the download was deleted", what, err)
	}
	if err := os.Rename(part, blob); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	return nil
}

// transfer appends the missing bytes of the file to part.
func (c *Client) transfer(ctx context.Context, what, part string, m *fileMeta) error {
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	have := st.Size()
	if m.size >= 0 && have > m.size {
		have = 0 // not a prefix of this file
	}
	if m.size >= 0 && have == m.size {
		return nil
	}
	req, err := c.newRequest(ctx, http.MethodGet, m.location)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("hub: %s: %w", what, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		have = 0 // the server sent the whole file
	case http.StatusPartialContent:
		if start := rangeStart(resp.Header.Get("Content-Range")); start != have {
			return fmt.Errorf("hub: %s: asked for bytes from %d, the server sent from %d", what, have, start)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// The partial file is not a prefix of this one: start over.
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("hub: cache: %w", err)
		}
		return fmt.Errorf("hub: %s: resume refused (HTTP 416): restarting", what)
	default:
		return hubError(resp, what, req.Header.Get("Authorization") != "")
	}
	if err := f.Truncate(have); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	var w io.Writer = f
	if c.Progress != nil {
		p := c.Progress(what, m.size, have)
		defer p.Close()
		w = io.MultiWriter(f, p)
	}
	body := io.Reader(resp.Body)
	if m.size >= 0 {
		body = io.LimitReader(resp.Body, m.size-have+1) // one byte more reveals an overlong body
	}
	n, err := io.Copy(w, body)
	if err != nil {
		return fmt.Errorf("hub: %s: download cut after %d bytes (kept for resuming): %w", what, have+n, err)
	}
	if m.size >= 0 && have+n != m.size {
		if have+n < m.size {
			return fmt.Errorf("hub: %s: download cut after %d of %d bytes (kept for resuming)", what, have+n, m.size)
		}
		f.Truncate(0)
		return &Error{Status: http.StatusOK, What: what, Message: fmt.Sprintf("the server sent more than the announced %d bytes", m.size)}
	}
	return nil
}

// rangeStart parses the first byte of "bytes a-b/n"; -1 if malformed.
func rangeStart(s string) int64 {
	s, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return -1
	}
	a, _, ok := strings.Cut(s, "-")
	if !ok {
		return -1
	}
	return parseSize(a)
}

// verify checks a file against a hub hash: a SHA-256 of the content (64
// hex digits) or a Git blob SHA-1 (40).
func verify(path, etag string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var h hash.Hash
	if len(etag) == 64 {
		h = sha256.New()
	} else {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		h = sha1.New()
		fmt.Fprintf(h, "blob %d\x00", st.Size())
	}
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != etag {
		kind := "SHA-256"
		if len(etag) == 40 {
			kind = "Git SHA-1"
		}
		return fmt.Errorf("the file's %s is %s, the hub announced %s (corrupted in transfer or storage)", kind, got, etag)
	}
	return nil
}
