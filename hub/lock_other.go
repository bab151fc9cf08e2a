//go:build !unix

package hub

import "context"

// lockFile is a no-op where flock is not available: concurrent downloads
// of one file by two processes are then not serialized.
func lockFile(ctx context.Context, path string, waiting func()) (func(), error) {
	return func() {}, nil
}
