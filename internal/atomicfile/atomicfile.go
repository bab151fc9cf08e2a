// Package atomicfile writes files through a temporary file in the same
// directory, renamed over the destination only once complete: an
// interrupted write leaves either the old file or none, never a partial
// one.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes path with write's output.
func Write(path string, write func(w io.Writer) error) error {
	return writeFile(path, write, false)
}

// WriteDurable is Write that also survives a power cut: the temporary
// file is fsynced before the rename and the directory after it, so path
// is absent, old or whole whenever the machine stops.
func WriteDurable(path string, write func(w io.Writer) error) error {
	return writeFile(path, write, true)
}

func writeFile(path string, write func(w io.Writer) error, durable bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err = write(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	// CreateTemp makes the file private; these are ordinary files.
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if durable {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if durable {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// SyncDir fsyncs a directory, so the renames and removals in it survive a
// power cut (a no-op where the system cannot sync directories).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// WriteFile is os.WriteFile through Write.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
