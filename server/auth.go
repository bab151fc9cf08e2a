package server

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// keyring holds the accepted API keys as SHA-256 digests: comparing
// fixed-size digests in constant time leaks neither a key's bytes nor its
// length through timing.
type keyring struct {
	digests [][sha256.Size]byte
}

// newKeyring keeps the non-blank keys (callers refuse blank ones with a
// message naming where they came from).
func newKeyring(keys []string) *keyring {
	k := &keyring{}
	for _, key := range keys {
		if key = strings.TrimSpace(key); key != "" {
			k.digests = append(k.digests, sha256.Sum256([]byte(key)))
		}
	}
	return k
}

// allows reports whether the request carries an accepted key as
// "Authorization: Bearer KEY". Every stored key is compared, so the time
// taken does not depend on which one matched.
func (k *keyring) allows(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(auth[len(prefix):])))
	ok := 0
	for _, d := range k.digests {
		ok |= subtle.ConstantTimeCompare(got[:], d[:])
	}
	return ok == 1
}

// ReadKeyFile reads API keys from a file, one per line; blank lines and
// lines starting with # are skipped.
func ReadKeyFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading API keys: %w", err)
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keys = append(keys, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading API keys from %s: %w", path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("reading API keys: %s holds no key", path)
	}
	return keys, nil
}

// requestID returns the client's X-Request-ID when it is a sane token
// (printable ASCII without spaces, at most 128 bytes, so it cannot forge
// log lines), else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-ID"); id != "" && len(id) <= 128 {
		ok := true
		for i := 0; i < len(id); i++ {
			if id[i] <= ' ' || id[i] > '~' {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
