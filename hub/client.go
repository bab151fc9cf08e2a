package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the Hugging Face Hub.
const DefaultEndpoint = "https://huggingface.co"

// Client downloads from one hub endpoint into one cache directory.
type Client struct {
	Endpoint string // e.g. https://huggingface.co, without a trailing slash
	Token    string // bearer token; empty for public repositories
	CacheDir string // the hub cache ($HF_HUB_CACHE)
	Offline  bool   // answer from the cache only
	HTTP     *http.Client
	// Retries is how many times a download cut short is resumed before
	// the error is returned.
	Retries int
	// Progress, when set, is called as a file's download starts with its
	// name, size and the bytes already present; the returned writer gets
	// every byte received and is closed at the end.
	Progress func(file string, size, have int64) io.WriteCloser
	// Log receives warnings (a cached revision used offline); nil discards.
	Log *slog.Logger
}

// NewClient returns a client configured from the environment: HF_ENDPOINT,
// HF_TOKEN (else $HF_HOME/token), HF_HUB_CACHE (else $HF_HOME/hub),
// HF_HUB_OFFLINE.
func NewClient() (*Client, error) {
	home := os.Getenv("HF_HOME")
	if home == "" {
		dir, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("hub: no HF_HOME and no home directory: %w", err)
		}
		if xdg := os.Getenv("XDG_CACHE_HOME"); xdg != "" {
			home = filepath.Join(xdg, "huggingface")
		} else {
			home = filepath.Join(dir, ".cache", "huggingface")
		}
	}
	c := &Client{
		Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"),
		Token:    os.Getenv("HF_TOKEN"),
		CacheDir: os.Getenv("HF_HUB_CACHE"),
		Retries:  5,
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(home, "hub")
	}
	if c.Token == "" {
		if b, err := os.ReadFile(filepath.Join(home, "token")); err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	switch strings.ToLower(os.Getenv("HF_HUB_OFFLINE")) {
	case "1", "true", "yes", "on":
		c.Offline = true
	}
	return c, nil
}

func (c *Client) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

var (
	repoRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// checkRepo validates an "org/name" repository id.
func checkRepo(repo string) error {
	if !repoRe.MatchString(repo) || strings.Contains(repo, "..") || len(repo) > 96 {
		return fmt.Errorf("hub: %q is not a repository id of the form org/name", repo)
	}
	return nil
}

// checkFile validates a file path inside a repository: relative, with no
// empty, "." or ".." element, so it can never leave the snapshot.
func checkFile(name string) error {
	if !safeRelPath(name) {
		return fmt.Errorf("hub: %q is not a file path inside a repository", name)
	}
	return nil
}

// checkRevision refuses revisions that could leave refs/ when written there.
func checkRevision(rev string) error {
	if !safeRelPath(rev) {
		return fmt.Errorf("hub: invalid revision %q", rev)
	}
	return nil
}

// safeRelPath reports whether s is a relative slash-separated path whose
// elements are all proper names.
func safeRelPath(s string) bool {
	if s == "" || strings.ContainsAny(s, "\\\x00") {
		return false
	}
	for _, el := range strings.Split(s, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// Error is an error answer of the hub.
type Error struct {
	Status  int
	Code    string // X-Error-Code, e.g. "RepoNotFound"
	Message string // X-Error-Message or the body's "error"
	What    string // what was asked, for the message
	Authed  bool   // a token was sent
}

func (e *Error) Error() string {
	var why string
	switch {
	case e.Code == "GatedRepo":
		why = "the repository is gated: accept its conditions on the hub, then set HF_TOKEN to a token of that account"
	case e.Code == "RepoNotFound" || (e.Code == "" && e.Status == http.StatusUnauthorized):
		if e.Authed {
			why = "repository not found, or the token (HF_TOKEN) has no access to it"
		} else {
			why = "repository not found, or it is private or gated: set HF_TOKEN to a token with access"
		}
	case e.Code == "RevisionNotFound":
		why = "revision not found"
	case e.Code == "EntryNotFound" || e.Status == http.StatusNotFound:
		why = "file not found"
	case e.Status == http.StatusForbidden:
		why = "access refused"
	case e.Status == http.StatusTooManyRequests:
		why = "rate limited by the hub; retry later"
	default:
		why = "unexpected answer"
	}
	msg := fmt.Sprintf("hub: %s: %s (HTTP %d", e.What, why, e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg + ")"
}

// NotFound reports whether the hub said the repository, revision or file
// does not exist (or is not visible with the credentials sent).
func (e *Error) NotFound() bool {
	return e.Status == http.StatusNotFound || e.Status == http.StatusUnauthorized
}

func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	req.Header.Set("User-Agent", "vembed")
	if c.Token != "" && sameHost(u, c.Endpoint) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// hubError turns a non-success answer into an *Error.
func hubError(resp *http.Response, what string, authed bool) error {
	e := &Error{Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message"), What: what, Authed: authed}
	if e.Message == "" && resp.Body != nil {
		var body struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &body) == nil {
			e.Message = body.Error
		}
	}
	return e
}

// RepoFile is one file of a repository listing.
type RepoFile struct {
	Name   string // path inside the repository
	Size   int64
	SHA256 string // LFS files: the content's SHA-256
	BlobID string // the Git blob SHA-1
}

// RepoInfo is a repository at one commit.
type RepoInfo struct {
	Repo   string
	Commit string
	Files  []RepoFile
}

// maxInfoBytes bounds the repository listing read into memory.
const maxInfoBytes = 64 << 20

// Info lists a repository at a revision (branch, tag or commit).
func (c *Client) Info(ctx context.Context, repo, revision string) (*RepoInfo, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	if err := checkRevision(revision); err != nil {
		return nil, err
	}
	if c.Offline {
		return c.cachedInfo(repo, revision)
	}
	u := c.Endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(revision) + "?blobs=true"
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if info, cerr := c.cachedInfo(repo, revision); cerr == nil {
			c.log().Warn("the hub cannot be reached: using the cached snapshot", "repo", repo, "revision", revision, "err", err)
			return info, nil
		}
		return nil, fmt.Errorf("hub: listing %s@%s: %w", repo, revision, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, hubError(resp, repo+"@"+revision, req.Header.Get("Authorization") != "")
	}
	var body struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      int64  `json:"size"`
			BlobID    string `json:"blobId"`
			LFS       *struct {
				SHA256 string `json:"sha256"`
				Size   int64  `json:"size"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxInfoBytes))
	if err := dec.Decode(&body); err != nil {
		return nil, fmt.Errorf("hub: listing %s@%s: bad answer: %w", repo, revision, err)
	}
	if !commitRe.MatchString(body.SHA) {
		return nil, fmt.Errorf("hub: listing %s@%s: the answer has no commit hash", repo, revision)
	}
	info := &RepoInfo{Repo: repo, Commit: body.SHA}
	for _, s := range body.Siblings {
		if checkFile(s.RFilename) != nil {
			return nil, fmt.Errorf("hub: listing %s@%s: invalid file name %q", repo, revision, s.RFilename)
		}
		f := RepoFile{Name: s.RFilename, Size: s.Size, BlobID: s.BlobID}
		if s.LFS != nil {
			f.SHA256, f.Size = s.LFS.SHA256, s.LFS.Size
		}
		info.Files = append(info.Files, f)
	}
	return info, nil
}

// retryDelay is the pause before resuming a download cut short.
var retryDelay = func(attempt int) time.Duration { return time.Duration(attempt) * time.Second }

func parseSize(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

var errNoCache = errors.New("not in the cache")
