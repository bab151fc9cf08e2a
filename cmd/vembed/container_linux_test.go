package main

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainerImage checks what the Dockerfile promises without a
// container engine: its build command, run as written, makes a static
// binary (no interpreter, no shared libraries); its final stage runs no
// command and starts that binary as a non-root user; and, when the test
// runs as root, the binary serves from an empty root directory holding
// only itself and /tmp, as user 65532 (distroless's nonroot), the way the
// image runs it: no shell, no libc, no files of the build machine.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	src := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(src, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := strings.Split(string(raw), "\nFROM ")
	if len(stages) < 3 {
		t.Fatal("Dockerfile: want a build stage and a run stage")
	}
	final := stages[len(stages)-1]
	for _, want := range []string{"distroless/static", "\nUSER nonroot", `ENTRYPOINT ["/vembed"]`} {
		if !strings.Contains(final, want) {
			t.Errorf("Dockerfile's final stage lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^RUN `).MatchString(final) {
		t.Error("Dockerfile's final stage runs a command: the image has no shell")
	}

	// The build stage's go build line, with the output redirected.
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0) go build (.*)$`).FindStringSubmatch(strings.Join(stages[1:len(stages)-1], "\n"))
	if m == nil {
		t.Fatal("Dockerfile: no RUN CGO_ENABLED=0 go build line in the build stage")
	}
	args := shellWords(m[2])
	out := filepath.Join(t.TempDir(), "vembed")
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	build := exec.Command(goBin, append([]string{"build"}, args...)...)
	build.Dir = src
	build.Env = append(os.Environ(), m[1])
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, msg)
	}

	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader: not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	f.Close()

	if os.Geteuid() != 0 {
		t.Skip("running the binary in an empty root directory needs root (chroot)")
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "vembed"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	jailed := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "/vembed", args...)
		cmd.Path = "/vembed" // resolved inside the new root
		cmd.Env = []string{"HOME=/tmp"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
		cmd.Dir = "/"
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if msg, err := jailed(ctx, "version").CombinedOutput(); err != nil {
		t.Fatalf("vembed version in an empty root: %v\n%s", err, msg)
	}

	srv := jailed(ctx, "serve", "--addr", "127.0.0.1:0")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`addr=(http://127\.0\.0\.1:\d+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && strings.Contains(sc.Text(), "listening") {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	var url string
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatal("the server in an empty root exited before listening")
		}
		url = u
	case <-ctx.Done():
		t.Fatal("the server in an empty root did not listen")
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health: %s", resp.Status)
	}
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 0 {
			t.Errorf("serve in an empty root after SIGTERM: %v", err)
		}
	}
}

// shellWords splits a Dockerfile RUN line's arguments as the shell does
// for the forms it uses: words, and double quotes inside a word.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
