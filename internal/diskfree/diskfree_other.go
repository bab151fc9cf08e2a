//go:build !(linux || darwin || freebsd)

package diskfree

func bytes(string) (int64, error) { return 0, ErrUnsupported }
