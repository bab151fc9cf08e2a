package index

import "context"

// Row is one indexed item (a PDF page, an image, a text chunk or a
// record) as the sinks store it.
type Row struct {
	// ID is stable: derived from the item's content hash and its page or
	// chunk, the same in every run and every shard.
	ID string
	// Path is the file the item came from (or the record's source).
	Path string
	// Page is 1-based: the PDF page, or the chunk number for text.
	Page int
	// SHA256 is the hex SHA-256 of the source file's bytes.
	SHA256 string
	// Model names the model that embedded the item.
	Model string
	// Width and Height are the image's size as rendered (0 for text).
	Width, Height int
	// Text is the page's text layer, the chunk's text, or the record's.
	Text string
	// Embedding is the single vector (nil in multi-vector runs).
	Embedding []float32
	// Vectors are the multi-vector rows (nil in single-vector runs).
	Vectors [][]float32
}

// A Sink receives finished rows and removals. Upsert replaces rows by ID,
// so a sink sent the same rows twice (after a crash) holds them once.
type Sink interface {
	Upsert(ctx context.Context, rows []Row) error
	Delete(ctx context.Context, ids []string) error
	Close() error
}
