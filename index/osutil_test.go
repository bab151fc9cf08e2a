package index

import (
	"os"
	"testing"
)

var sharedTestDirs []string

// osMkdirTemp makes a directory for files shared by a test process's
// tests; TestMain removes it.
func osMkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "vembed-index-test-")
	if err == nil {
		sharedTestDirs = append(sharedTestDirs, d)
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range sharedTestDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
