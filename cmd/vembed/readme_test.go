//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// readmeBlocks returns the ```sh blocks of a README section, each as its
// lines.
func readmeBlocks(t *testing.T, readme, section string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n"+section+"\n")
	if !ok {
		t.Fatalf("README has no section %q", section)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	var blocks [][]string
	for {
		_, after, ok := strings.Cut(rest, "```sh\n")
		if !ok {
			return blocks
		}
		body, tail, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatalf("README %s: unclosed code block", section)
		}
		blocks = append(blocks, strings.Split(strings.TrimRight(body, "\n"), "\n"))
		rest = tail
	}
}

// readmeSection returns the checkout's top folder and the ```sh blocks
// of a section of its README.
func readmeSection(t *testing.T, section string) (string, [][]string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, readmeBlocks(t, string(raw), section)
}

// stripComment removes a trailing shell comment (outside quotes, which
// the set-up lines do not have).
func stripComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// TestReadmeQuickStart runs the README's quick start as a newcomer would,
// from the README itself: its test command is .ci/run's, its serve
// command serves the demo model (started here on a free port instead of
// 8080), and every curl line gets a JSON answer that is not an error.
func TestReadmeQuickStart(t *testing.T) {
	root, blocks := readmeSection(t, "## Quick start")
	if len(blocks) < 2 {
		t.Fatalf("the quick start has %d sh blocks, want the set-up block and the curl block", len(blocks))
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci/run"))
	if err != nil {
		t.Fatal(err)
	}
	var serveArgs []string
	sawTest := false
	for _, line := range blocks[0] {
		cmd := stripComment(line)
		switch {
		case cmd == "":
		case strings.HasPrefix(cmd, "go run ./cmd/vembed serve"):
			serveArgs = strings.Fields(strings.TrimPrefix(cmd, "go run ./cmd/vembed serve"))
			if serveArgs == nil {
				serveArgs = []string{}
			}
		case strings.HasPrefix(cmd, "go test "):
			sawTest = true
			if !strings.Contains("\n"+string(ci)+"\n", "\n"+cmd+"\n") {
				t.Errorf("the README's test command %q is not a line of .ci/run", cmd)
			}
		default:
			t.Errorf("the quick start's set-up line %q is neither the serve nor the test command this test checks", cmd)
		}
	}
	if serveArgs == nil || !sawTest {
		t.Fatalf("the set-up block lacks the serve command (%v) or the test command (%v)", serveArgs != nil, sawTest)
	}
	for _, a := range serveArgs {
		if strings.HasPrefix(a, "--addr") || strings.HasPrefix(a, "-addr") {
			t.Fatalf("the quick start's serve command sets %s; the test replaces the address", a)
		}
	}

	script := strings.Join(blocks[1], "\n")
	if !strings.Contains(script, "localhost:8080") {
		t.Fatal("the curl block does not talk to localhost:8080, the address the serve command listens on")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found: the README's curl lines are not run")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found: the README's curl lines are not run")
	}
	p := startServeProcess(t, serveArgs...)
	addr := strings.TrimPrefix(strings.TrimPrefix(p.url, "http://"), "https://")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-c", strings.ReplaceAll(script, "localhost:8080", addr))
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's curl block: %v\n%s\nserver log:\n%s", err, stderr.String(), p.log)
	}
	curls := strings.Count(script, "curl -s ")
	dec := json.NewDecoder(&stdout)
	n := 0
	for {
		var answer map[string]any
		if err := dec.Decode(&answer); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("answer %d is not a JSON object: %v", n+1, err)
		}
		n++
		if e, ok := answer["error"]; ok {
			t.Errorf("answer %d is an error: %v", n, e)
		}
	}
	if n != curls {
		t.Errorf("%d answers to %d curl commands", n, curls)
	}
}

// fencedBlock matches a fenced code block, whose lines are neither headings
// nor links.
var fencedBlock = regexp.MustCompile("(?ms)^```.*?^```")

// mdLink matches an inline Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, punctuation other than '-' and '_' dropped, spaces
// as '-', a repeated anchor suffixed -1, -2...
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(fencedBlock.ReplaceAllString(md, ""), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// TestDocsLinks checks that every relative link in README.md and docs/*.md
// names a file of the repository and, with a #fragment, a heading of it,
// so that the front door's pointers and the documents' cross-references
// stay correct as sections move.
func TestDocsLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join(root, "README.md")}, docs...)
	anchors := map[string]map[string]bool{}
	read := func(path string) (string, error) {
		raw, err := os.ReadFile(path)
		if err == nil && anchors[path] == nil && strings.HasSuffix(path, ".md") {
			anchors[path] = headingAnchors(string(raw))
		}
		return string(raw), err
	}
	links := 0
	for _, file := range files {
		md, err := read(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, m := range mdLink.FindAllStringSubmatch(fencedBlock.ReplaceAllString(md, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: no such file", rel, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if _, err := read(dest); err != nil {
				t.Errorf("%s: link %q: %v", rel, target, err)
				continue
			}
			if !anchors[dest][frag] {
				t.Errorf("%s: link %q: no heading with that anchor", rel, target)
			}
		}
	}
	if links == 0 {
		t.Fatal("README.md and docs/*.md hold no relative link: the front door points nowhere")
	}
}

// TestReadmeSearch runs the README's search section as written: the index
// command into idx, then serve --index idx (on a free port), and its curl
// lines get JSON answers with hits.
func TestReadmeSearch(t *testing.T) {
	root, blocks := readmeSection(t, "### Search what you indexed")
	if len(blocks) < 2 || len(blocks[0]) != 2 { // the next subsections follow
		t.Fatalf("the README's search section: %q", blocks)
	}
	idx := stripComment(blocks[0][0])
	serveLine := stripComment(blocks[0][1])
	const indexCmd, serveCmd = "./vembed index ", "./vembed serve "
	if !strings.HasPrefix(idx, indexCmd) || !strings.HasPrefix(serveLine, serveCmd) {
		t.Fatalf("the README's search lines %q and %q", idx, serveLine)
	}
	args := strings.Fields(strings.TrimPrefix(idx, indexCmd))
	serveArgs := strings.Fields(strings.TrimPrefix(serveLine, serveCmd))
	if len(serveArgs) != 2 || serveArgs[0] != "--index" || serveArgs[1] != "idx" || !slices.Contains(args, "idx") {
		t.Fatalf("the README's search lines do not index into and serve idx: %q %q", idx, serveLine)
	}
	// idx is made in a temporary folder, as the README's relative paths
	// are read from the checkout's top folder.
	out := filepath.Join(t.TempDir(), "idx")
	for i, a := range args {
		if a == "idx" {
			args[i] = out
		}
	}
	t.Chdir(root)
	runIndexCmd(t, args...)
	script := strings.Join(blocks[1], "\n")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found: the README's curl lines are not run")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found: the README's curl lines are not run")
	}
	p := startServeProcess(t, "--index", out)
	addr := strings.TrimPrefix(p.url, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-c", strings.ReplaceAll(script, "localhost:8080", addr))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's search block: %v\n%s\nserver log:\n%s", err, stderr.String(), p.log)
	}
	dec := json.NewDecoder(&stdout)
	var search, info map[string]any
	if err := dec.Decode(&search); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&info); err != nil {
		t.Fatal(err)
	}
	if hits, _ := search["hits"].([]any); len(hits) != 3 {
		t.Fatalf("the README's search: %v", search)
	}
	if n, _ := info["items"].(float64); n < 3 {
		t.Fatalf("the README's /v1/index: %v", info)
	}
}
