//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childArgsEnv carries the serve arguments to the test binary started as
// a server process.
const childArgsEnv = "VEMBED_SERVE_CHILD_ARGS"

// TestServeChild is the server process the tests below start, signal and
// measure: "vembed serve" with the arguments in VEMBED_SERVE_CHILD_ARGS,
// exiting with the command's exit code. It is skipped otherwise.
func TestServeChild(t *testing.T) {
	raw := os.Getenv(childArgsEnv)
	if raw == "" {
		t.Skip("the server process of the tests that signal one")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(append([]string{"serve"}, args...), os.Stdout, os.Stderr))
}

// serveProcess is "vembed serve" running in a process of its own, so that
// its exit code and its memory are its own.
type serveProcess struct {
	cmd  *exec.Cmd
	url  string
	log  *lockedBuffer
	done chan error // the process's exit
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServeProcess starts serve with args on a free loopback port and
// waits until it listens. The process is killed if the test ends first.
func startServeProcess(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	raw, _ := json.Marshal(append([]string{"--addr", "127.0.0.1:0"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	// The child is killed, so its deferred clean-up (the demo model's
	// temporary folder) never runs: its temporary files go where the test's
	// own clean-up removes them.
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(raw), "TMPDIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, log: &lockedBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.log.add(line)
			if strings.Contains(line, "msg=listening") {
				if _, a, ok := strings.Cut(line, "addr="); ok {
					addr <- strings.Fields(a)[0]
				}
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case p.url = <-addr:
	case err := <-p.done:
		t.Fatalf("server exited before listening: %v\n%s", err, p.log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("server did not start:\n%s", p.log)
	}
	return p
}

// stop sends SIGTERM and returns the process's exit code.
func (p *serveProcess) stop(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("server still running a minute after SIGTERM:\n%s", p.log)
		return -1
	}
}

// metric reads one unlabelled value from the process's /metrics.
func (p *serveProcess) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// TestServeSignalAnswersEveryClient: SIGTERM to a server with requests
// running and queued, and a grace period too short for the running ones:
// every client gets an answer (its embedding or a 503 with Retry-After
// saying the server is shutting down) and the process exits 0.
func TestServeSignalAnswersEveryClient(t *testing.T) {
	// Small steps and no cache, so that the requests are still running
	// and queued when the signal comes.
	p := startServeProcess(t, "--max-batch-tokens", "32", "--embedding-cache", "-1", "--shutdown-grace", "200ms")
	const clients = 24
	type answer struct {
		status     int
		retryAfter string
		body       map[string]any
		err        error
	}
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			body := fmt.Sprintf(`{"input": %q}`, strings.Repeat(fmt.Sprintf("word%d ", i), 1500))
			resp, err := http.Post(p.url+"/v1/embeddings", "application/json", strings.NewReader(body))
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			answers[i].status, answers[i].retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			if err := json.NewDecoder(resp.Body).Decode(&answers[i].body); err != nil {
				answers[i].err = fmt.Errorf("status %d: body is not JSON: %w", resp.StatusCode, err)
			}
		})
	}
	// Signal once every request is in the engine, some running: a
	// connection still waiting in the listener's backlog when the
	// listener closes is reset by the kernel, as with any server.
	deadline := time.Now().Add(time.Minute)
	for {
		running := p.metric(t, "vembed_engine_running_requests")
		if running > 0 && running+p.metric(t, "vembed_engine_queued_requests") == clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the requests were not all admitted with some running:\n%s", p.log)
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	code := p.stop(t)
	wg.Wait()
	took := time.Since(start)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0\n%s", code, p.log)
	}
	var ok, refused int
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("client %d got no answer: %v", i, a.err)
		case a.status == 200:
			ok++
		case a.status == 503 && a.retryAfter != "" && strings.Contains(fmt.Sprint(a.body["error"]), "shutting down"):
			refused++
		default:
			t.Errorf("client %d: status %d, Retry-After %q, %v", i, a.status, a.retryAfter, a.body)
		}
	}
	if refused == 0 {
		t.Errorf("no queued request was refused: the test did not shut down with work queued")
	}
	t.Logf("%d answered, %d refused as shutting down, exit code %d, %v after SIGTERM", ok, refused, code, took.Round(time.Millisecond))
}
