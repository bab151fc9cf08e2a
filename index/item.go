package index

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/vembed/vembed/engine"
)

// MarshalText writes the key in hex (the store's JSON).
func (k Key) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(k[:])), nil }

// UnmarshalText reads a hex key.
func (k *Key) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("index: key of %d hex digits", len(b))
	}
	_, err := hex.Decode(k[:], b)
	return err
}

// String is the key in hex.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// shard returns the shard (of n) the item with this key belongs to: the
// key's first eight bytes modulo n, so the pages of one document spread
// over the shards.
func (k Key) shard(n int) int {
	return int(binary.BigEndian.Uint64(k[:8]) % uint64(n))
}

// item is one thing to embed: a PDF page, an image, a text chunk, a record.
type item struct {
	key    Key
	row    Row // without the embedding
	input  engine.Input
	pixels bool // has an image
	// doc, for a PDF page, is its open document: the worker renders the
	// page (filling input, the size and the text) just before embedding
	// it, so pages wait as page numbers, not as bitmaps.
	doc *pdfDoc
}

// ItemID is the id of a file's item: the file's SHA-256 and the page (or
// chunk), the same in every run and shard, whatever the file's path.
func ItemID(sha256Hex string, page int) string {
	return fmt.Sprintf("%s-%d", sha256Hex, page)
}

// itemKey binds an item's id and content to the model and the options:
// the same item embedded by another model, arithmetic or set of options
// is another key.
func itemKey(id, contentSHA, modelID, optionsHash string) Key {
	h := sha256.New()
	for _, s := range []string{"vembed-index/1", id, contentSHA, modelID, optionsHash} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// ModelIdentity is the identity of the model files and of the kernels'
// arithmetic, as the engine's caches identify them: the SHA-256 of each
// file's bytes (absent files as empty) and the arithmetic's name. Two runs
// agree on it exactly when they would compute the same bits.
func ModelIdentity(arithmetic string, files ...string) (string, error) {
	h := sha256.New()
	io.WriteString(h, "vembed-index-model/1\x00"+arithmetic+"\x00")
	for _, p := range files {
		if p == "" {
			io.WriteString(h, "-\x00")
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("index: hashing the model: %w", err)
		}
		fh := sha256.New()
		_, err = io.Copy(fh, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("index: hashing %s: %w", p, err)
		}
		h.Write(fh.Sum(nil))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashOptions is the hash of the options that change an item's vector or
// its row, in a fixed order.
func hashOptions(parts ...any) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q", slices.Clone(parts))
	return hex.EncodeToString(h.Sum(nil))[:16]
}
