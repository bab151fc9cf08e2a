// Package hubtest runs a local stand-in for the Hugging Face Hub, for
// tests of code that downloads from it: the revision listing, HEAD and GET
// on resolve URLs (small files answered inline, LFS files redirected to a
// separate storage server, as the Hub does), Range requests, the error
// headers, a private mode that wants a token, and knobs that cut or
// corrupt the next transfer.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Server is one repository, Repo, at one commit, served on loopback.
type Server struct {
	URL    string // the hub endpoint (HF_ENDPOINT)
	Repo   string // org/name
	Commit string
	// Token, when set, makes the repository private: requests to the hub
	// without "Authorization: Bearer <Token>" get 401 RepoNotFound.
	Token string

	hub, storage *httptest.Server

	mu        sync.Mutex
	failAll   int // status every hub request answers (0: off)
	files     map[string][]byte
	cutAfter  int
	corrupt   bool
	gets      int
	ranges    []string
	storeAuth []string
}

// New serves files (path -> content) as repository repo. Files ending in
// .gguf, .safetensors or .bin are LFS files. Close it when done.
func New(repo string, files map[string][]byte) *Server {
	s := &Server{Repo: repo, Commit: strings.Repeat("ab12", 10), files: files}
	s.storage = httptest.NewServer(http.HandlerFunc(s.serveStorage))
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.URL = s.hub.URL
	return s
}

// Close stops both servers.
func (s *Server) Close() { s.hub.Close(); s.storage.Close() }

// CloseHub stops the hub but keeps storage, as an unreachable hub.
func (s *Server) CloseHub() { s.hub.Close() }

// SetFile adds, replaces or (nil content) removes a file.
func (s *Server) SetFile(name string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if content == nil {
		delete(s.files, name)
	} else {
		s.files[name] = content
	}
}

// FailHub makes every hub request answer status (0 restores service),
// as a hub in trouble does; storage keeps serving.
func (s *Server) FailHub(status int) { s.mu.Lock(); s.failAll = status; s.mu.Unlock() }

// CutNext makes the next storage transfer stop after n body bytes.
func (s *Server) CutNext(n int) { s.mu.Lock(); s.cutAfter = n; s.mu.Unlock() }

// CorruptNext makes the next storage transfer flip one byte.
func (s *Server) CorruptNext() { s.mu.Lock(); s.corrupt = true; s.mu.Unlock() }

// Stats returns the file GETs served (inline and storage), the Range
// headers and the Authorization headers the storage server saw.
func (s *Server) Stats() (gets int, ranges, storageAuth []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets, append([]string(nil), s.ranges...), append([]string(nil), s.storeAuth...)
}

// IsLFS tells whether the server stores a file with LFS.
func IsLFS(name string) bool {
	for _, ext := range []string{".gguf", ".safetensors", ".bin"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// SHA256 is the hex SHA-256 of b (an LFS file's hash).
func SHA256(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// GitSHA1 is the Git blob hash of b (a small file's ETag).
func GitSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func hubErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	w.WriteHeader(status)
}

func (s *Server) file(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[name]
	return b, ok
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fail := s.failAll
	s.mu.Unlock()
	if fail != 0 {
		w.WriteHeader(fail)
		return
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		hubErr(w, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
		return
	}
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/api/models/"+s.Repo+"/revision/"); ok {
		s.serveListing(w, rest)
		return
	}
	org, _, _ := strings.Cut(s.Repo, "/")
	if rest, ok := strings.CutPrefix(p, "/"+org+"/renamed/"); ok { // a renamed repository
		http.Redirect(w, r, "/"+s.Repo+"/"+rest, http.StatusMovedPermanently)
		return
	}
	rest, ok := strings.CutPrefix(p, "/"+s.Repo+"/resolve/")
	if !ok {
		hubErr(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	rev, name, _ := strings.Cut(rest, "/")
	if rev != "main" && rev != s.Commit {
		hubErr(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	b, ok := s.file(name)
	if !ok {
		hubErr(w, http.StatusNotFound, "EntryNotFound", name+" does not exist on \"main\"")
		return
	}
	w.Header().Set("X-Repo-Commit", s.Commit)
	if IsLFS(name) {
		w.Header().Set("X-Linked-Etag", `"`+SHA256(b)+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(b)))
		w.Header().Set("ETag", `"`+GitSHA1([]byte("pointer"))+`"`)
		http.Redirect(w, r, s.storage.URL+"/blob/"+SHA256(b), http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+GitSHA1(b)+`"`)
	if r.Method == http.MethodGet {
		s.mu.Lock()
		s.gets++
		s.mu.Unlock()
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

func (s *Server) serveListing(w http.ResponseWriter, rev string) {
	if rev != "main" && rev != s.Commit {
		hubErr(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	type lfs struct {
		SHA256 string `json:"sha256"`
		Size   int    `json:"size"`
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
		Size      int    `json:"size"`
		BlobID    string `json:"blobId"`
		LFS       *lfs   `json:"lfs,omitempty"`
	}
	var sibs []sibling
	s.mu.Lock()
	for name, b := range s.files {
		sib := sibling{RFilename: name, Size: len(b), BlobID: GitSHA1(b)}
		if IsLFS(name) {
			sib.LFS = &lfs{SHA256(b), len(b)}
			sib.Size = 134 // the pointer file's size
			sib.BlobID = GitSHA1([]byte("pointer"))
		}
		sibs = append(sibs, sib)
	}
	s.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"id": s.Repo, "sha": s.Commit, "siblings": sibs})
}

// cutWriter aborts the connection after n body bytes.
type cutWriter struct {
	http.ResponseWriter
	n int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) > c.n {
		c.ResponseWriter.Write(p[:c.n])
		c.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	c.n -= len(p)
	return c.ResponseWriter.Write(p)
}

func (s *Server) serveStorage(w http.ResponseWriter, r *http.Request) {
	sum := strings.TrimPrefix(r.URL.Path, "/blob/")
	var content []byte
	s.mu.Lock()
	for _, b := range s.files {
		if SHA256(b) == sum {
			content = b
		}
	}
	if content == nil {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	s.gets++
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	s.storeAuth = append(s.storeAuth, r.Header.Get("Authorization"))
	cut, corrupt := s.cutAfter, s.corrupt
	s.cutAfter, s.corrupt = 0, false
	s.mu.Unlock()
	if corrupt {
		content = bytes.Clone(content)
		content[len(content)/2] ^= 1
	}
	if cut > 0 {
		w = &cutWriter{ResponseWriter: w, n: cut}
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
}
