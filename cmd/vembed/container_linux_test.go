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
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainerImage checks what the Dockerfile promises without a
// container engine: its build stage cross-compiles for the platform
// buildx names (TARGETOS, TARGETARCH) and nothing in it names an
// architecture; its build command sets GOOS and GOARCH from them and,
// run as written for this machine, makes a static binary (no
// interpreter, no shared libraries); its final stage runs no
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

	// The build stage runs on the builder's platform and cross-compiles
	// for the target buildx gives it, so that one multi-platform build
	// serves x86 and Arm nodes: nothing may name an architecture.
	buildStage := strings.Join(stages[1:len(stages)-1], "\n")
	if !strings.HasPrefix(stages[1], "--platform=$BUILDPLATFORM ") {
		t.Error("Dockerfile's build stage does not run on $BUILDPLATFORM")
	}
	for _, arg := range []string{"TARGETOS", "TARGETARCH"} {
		if !regexp.MustCompile(`(?m)^ARG ` + arg + `$`).MatchString(buildStage) {
			t.Errorf("Dockerfile's build stage does not take ARG %s", arg)
		}
	}
	if m := regexp.MustCompile(`(?i)amd64|x86_64|aarch64|arm64`).FindString(stripComments(string(raw))); m != "" {
		t.Errorf("Dockerfile names an architecture (%s) outside its comments", m)
	}

	// The build stage's go build line, with the output redirected, run
	// as buildx runs it for each platform of the image.
	m := regexp.MustCompile(`(?m)^RUN ((?:[A-Z0-9_]+=\S*\s+)+)go build (.*)$`).FindStringSubmatch(buildStage)
	if m == nil {
		t.Fatal("Dockerfile: no RUN CGO_ENABLED=0 ... go build line in the build stage")
	}
	env := strings.Fields(m[1])
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("Dockerfile's go build line does not set CGO_ENABLED=0: %v", env)
	}
	// The line as buildx expands it for each platform of the image must
	// build for that platform: cross-compiling, which .ci/arm64 checks
	// for linux/arm64 (here only this machine's build runs: a second
	// whole build of the binary would double the test's time).
	expand := func(goos, goarch string) []string {
		targets := map[string]string{"TARGETOS": goos, "TARGETARCH": goarch}
		var out []string
		for _, kv := range env {
			out = append(out, os.Expand(kv, func(k string) string { return targets[k] }))
		}
		return out
	}
	for _, arch := range []string{"amd64", "arm64"} {
		e := expand("linux", arch)
		if !slices.Contains(e, "GOOS=linux") || !slices.Contains(e, "GOARCH="+arch) {
			t.Errorf("Dockerfile's go build line for linux/%s sets %v", arch, e)
		}
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
	build.Env = append(os.Environ(), expand(runtime.GOOS, runtime.GOARCH)...)
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

// stripComments drops a Dockerfile's comment lines.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}
