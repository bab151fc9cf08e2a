package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/imageproc"
)

// kind is what a file is indexed as, from its extension.
type kind int

const (
	kindNone kind = iota
	kindImage
	kindText
	kindPDF
)

// fileKind classifies a file by its extension (case-insensitive). Other
// files are not part of the corpus and are passed over silently.
func fileKind(name string) kind {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff":
		return kindImage
	case ".txt", ".md", ".markdown":
		return kindText
	case ".pdf":
		return kindPDF
	}
	return kindNone
}

// errLinkOutside is a symbolic link inside a folder to a file outside it.
var errLinkOutside = errors.New("a symbolic link to a file outside the folder indexed: not followed (--follow-symlinks follows it)")

// walkFiles calls fn for every file under the roots that fileKind takes, in
// a deterministic order: the roots as given, each directory's entries in
// byte order of their names, depth first. Symbolic links to files are
// followed when they resolve inside the root folder walked (anywhere with
// followOutside; those outside call bad), to directories not (no
// cycles). A root may itself be a link. A directory that cannot be read
// calls bad and makes the walk incomplete.
func walkFiles(roots []string, followOutside bool, fn func(path string, k kind) error, bad func(path string, err error)) (complete bool, err error) {
	complete = true
	for _, root := range roots {
		st, err := os.Stat(root)
		if err != nil {
			return false, fmt.Errorf("index: %w", err)
		}
		if !st.IsDir() {
			k := fileKind(root)
			if k == kindNone {
				bad(root, errors.New("not a PDF, image or text file (by its extension)"))
				continue
			}
			if err := fn(root, k); err != nil {
				return false, err
			}
			continue
		}
		// A root given as a symbolic link to a folder is walked (WalkDir
		// follows a root with a trailing separator), its paths kept as given.
		walkRoot := root
		if lst, err := os.Lstat(root); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
			walkRoot = root + string(filepath.Separator)
		}
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil {
			return false, fmt.Errorf("index: %w", err)
		}
		err = filepath.WalkDir(walkRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				bad(p, err)
				complete = false
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if p != walkRoot && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir // .git and the like
				}
				return nil
			}
			k := fileKind(p)
			if k == kindNone {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
					return nil
				}
				if !followOutside {
					// The page route serves the files an index names: a
					// link must not bring in a file from elsewhere.
					target, err := filepath.EvalSymlinks(p)
					if err != nil {
						return nil
					}
					if !within(realRoot, target) {
						bad(p, errLinkOutside)
						return nil
					}
				}
			} else if !d.Type().IsRegular() {
				return nil
			}
			return fn(p, k)
		})
		if err != nil {
			return false, err
		}
	}
	return complete, nil
}

// within reports a path inside the folder dir (both resolved).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readLimited reads a whole file of at most max bytes.
func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%d bytes, over the limit of %d (--max-file-bytes)", st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("over the limit of %d bytes (--max-file-bytes)", max)
	}
	return b, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// decodeText returns a text file's content as UTF-8: UTF-16 with a byte
// order mark decoded, a UTF-8 byte order mark dropped, anything else
// checked by checkText.
func decodeText(b []byte) (string, error) {
	switch {
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}), bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		if len(b)%2 != 0 {
			return "", errors.New("UTF-16 text of an odd number of bytes")
		}
		u := make([]uint16, 0, len(b)/2-1)
		for i := 2; i+1 < len(b); i += 2 {
			if b[0] == 0xFF {
				u = append(u, uint16(b[i])|uint16(b[i+1])<<8)
			} else {
				u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
			}
		}
		s := string(utf16.Decode(u))
		if strings.ContainsRune(s, 0) {
			return "", errors.New("binary content (NUL characters) in a UTF-16 text file")
		}
		return s, nil
	}
	b = bytes.TrimPrefix(b, []byte{0xEF, 0xBB, 0xBF})
	if err := checkText(b); err != nil {
		return "", err
	}
	return string(b), nil
}

// checkText refuses bytes that are not text: a NUL byte, or invalid UTF-8
// beyond a few stray bytes (a binary file named .txt).
func checkText(b []byte) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return errors.New("binary content (NUL bytes) in a text file")
	}
	if !utf8.Valid(b) {
		bad := 0
		for i := 0; i < len(b); {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				bad++
			}
			i += n
		}
		if bad*100 > len(b) {
			return fmt.Errorf("not UTF-8 text (%d invalid bytes of %d)", bad, len(b))
		}
	}
	return nil
}

// imageItem is the item of an image file: its bytes as the engine
// decodes them, its size from the header (the engine checks the rest).
func imageItem(path string, data []byte) (item, error) {
	_, w, h, err := imageproc.DecodeConfig(data)
	if err != nil {
		return item{}, fmt.Errorf("unreadable image: %w", err)
	}
	sha := sha256Hex(data)
	return item{
		row:    Row{ID: ItemID(sha, 1), Path: path, Page: 1, SHA256: sha, Width: w, Height: h},
		input:  engine.ImageInput(data),
		pixels: true,
	}, nil
}

// sortedStrings returns a sorted copy.
func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
