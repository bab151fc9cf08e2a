// Package redistest runs a throwaway Valkey or Redis server for tests.
package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"
)

// Start runs valkey-server or redis-server on a free loopback port, without
// persistence, until the test ends, and returns its URL and a function
// that kills it. The test is skipped when neither binary is on PATH.
func Start(t testing.TB) (url string, kill func()) {
	t.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Skip("no valkey-server or redis-server on PATH (Debian: apt-get install redis-server)")
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	kill = func() {
		cmd.Process.Kill()
		<-done
	}
	t.Cleanup(kill)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start: %v", bin, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), kill
}
