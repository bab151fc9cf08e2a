// Package diskfree tells how many bytes a folder's filesystem has free,
// so that a command about to write tens of gigabytes can refuse early
// instead of filling the disk.
package diskfree

import "errors"

// ErrUnsupported is returned where the platform offers no statfs.
var ErrUnsupported = errors.New("free disk space is not known on this platform")

// Bytes is the space an unprivileged process may still write to the
// filesystem holding path (statfs's available blocks times their size).
func Bytes(path string) (int64, error) { return bytes(path) }
