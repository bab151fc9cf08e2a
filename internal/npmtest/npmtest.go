// Package npmtest runs, for Go tests, outside components that come from npm
// pinned by this directory's package-lock.json: PGlite (PostgreSQL with
// pgvector compiled to WebAssembly, served over the wire protocol), DuckDB
// and LanceDB (which read the Parquet datasets vembed writes, LanceDB
// through arrow-rs's Parquet reader).
//
// The packages are installed by `npm ci` in this directory (.ci/run does
// it). A test that needs them is skipped, with the reason, when node or the
// installed packages are absent, so `go test ./...` passes with Go alone.
package npmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MinNodeMajor is the oldest Node.js release the pinned packages run on.
const MinNodeMajor = 18

// Packages needed by each helper, as named in package.json.
var (
	pglitePackages = []string{"@electric-sql/pglite", "@electric-sql/pglite-pgvector", "@electric-sql/pglite-socket"}
	duckdbPackages = []string{"@duckdb/node-api"}
	lancePackages  = []string{"@lancedb/lancedb", "apache-arrow", "parquet-wasm"}
)

// startTimeout bounds PGlite's start (WebAssembly compilation and initdb
// take a few seconds; a loaded CI machine gets a wide margin).
const startTimeout = 2 * time.Minute

// queryTimeout bounds one run of a script (a DuckDB query, a LanceDB
// search).
const queryTimeout = 2 * time.Minute

// Dir is the directory holding package.json, the lockfile, the scripts and
// node_modules.
func Dir() (string, error) {
	// The source file's directory, when the test binary was built from this
	// checkout (every `go test` is, unless built with -trimpath).
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
			return dir, nil
		}
	}
	// Otherwise the module root above the working directory (a test runs in
	// its package's directory).
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, "internal", "npmtest")
			if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
				return "", fmt.Errorf("npmtest: no package.json in %s: %w", dir, err)
			}
			return dir, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("npmtest: no go.mod above the working directory")
		}
	}
}

// requireNode returns the node binary and the package directory, or skips
// the test when node is missing, too old, or pkgs are not installed.
func requireNode(t testing.TB, pkgs []string) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: this test needs Node.js %d or later and `npm ci` in internal/npmtest (.ci/run does both)", MinNodeMajor)
	}
	out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
	if err != nil {
		t.Skipf("node does not run: %v", err)
	}
	if major, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || major < MinNodeMajor {
		t.Skipf("node %s is older than %d, which the pinned packages need", strings.TrimSpace(string(out)), MinNodeMajor)
	}
	dir, err = Dir()
	if err != nil {
		t.Skipf("npm packages not found: %v", err)
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			t.Skipf("%s is not installed: run `npm ci` in internal/npmtest (.ci/run does)", pkg)
		}
	}
	return node, dir
}

// StartPGlite serves an empty in-memory PostgreSQL database with the
// pgvector extension available (PGlite through @electric-sql/pglite-socket)
// on a free loopback port until the test ends, and returns its URL for
// pgx. PGlite is one backend: its connections share one session (prepared
// statements, settings) and it runs one statement at a time, an open
// transaction blocking the others, so clients keep to one connection
// (pools of one). The test is skipped when node or the packages are
// absent.
func StartPGlite(t testing.TB) (url string) {
	t.Helper()
	node, dir := requireNode(t, pglitePackages)
	cmd := exec.Command(node, "pglite.mjs")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The server runs until its stdin closes: at cleanup, or when the test
	// process dies without cleaning up, so no server outlives its test.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("npmtest: start node pglite.mjs: %v", err)
	}
	// done closes when the process has exited and stderr is complete.
	done := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(done)
	}()
	stop := func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	fail := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		<-done
		t.Fatalf(format+"\n%s", append(args, stderr.String())...)
	}

	var line string
	select {
	case line = <-lines:
	case <-time.After(startTimeout):
		fail("npmtest: PGlite did not start in %v", startTimeout)
	}
	// The script writes its address once the socket listens, so the server
	// accepts from here on.
	var ready struct{ Address string }
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.Address == "" {
		fail("npmtest: PGlite did not start (first line %q)", line)
	}
	// Its connections share PGlite's one session, so a prepared statement
	// outlives the connection that made it and the next connection's pgx
	// statement cache would collide with it ("already exists"): the URL
	// asks pgx for unnamed statements, as behind a transaction pooler.
	return "postgres://postgres@" + ready.Address + "/postgres?sslmode=disable&default_query_exec_mode=cache_describe"
}

// DuckDB runs sql (one or more statements; paths in it absolute) in a fresh
// in-memory DuckDB and returns the last statement's rows, each a column
// name -> value map as encoding/json decodes DuckDB's JSON form: numbers
// as float64 (exact for FLOAT, DOUBLE and INTEGER), BIGINT and DECIMAL as
// strings, lists as []any. A failing query fails the test. The test is
// skipped when node or @duckdb/node-api are absent.
func DuckDB(t testing.TB, sql string) []map[string]any {
	t.Helper()
	rows, err := QueryDuckDB(t, sql)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// QueryDuckDB is DuckDB returning the query's error instead of failing the
// test (for tests that expect DuckDB to reject a file). It still skips the
// test when node or @duckdb/node-api are absent.
func QueryDuckDB(t testing.TB, sql string) ([]map[string]any, error) {
	t.Helper()
	node, dir := requireNode(t, duckdbPackages)
	out, err := runScript(node, dir, "duckdb.mjs", strings.NewReader(sql))
	if err != nil {
		return nil, fmt.Errorf("npmtest: DuckDB: %w", err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("npmtest: DuckDB's output: %w", err)
	}
	return rows, nil
}

// runScript runs one of the package's scripts with stdin, within
// queryTimeout, and returns what it wrote to stdout, or an error with the
// message of what it wrote to stderr.
func runScript(node, dir, script string, stdin io.Reader) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, nodeError(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// nodeError keeps the message of node's report of an uncaught error (of
// DuckDB, LanceDB), dropping the stack trace of the script's frames.
func nodeError(stderr string) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "at ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// LanceResult is what Lance found: each column's Arrow type as arrow-rs's
// Parquet reader gives it (apache-arrow's names, such as
// "FixedSizeList[8]<Float32>"), the number of rows LanceDB loaded and the
// nearest rows, nearest first.
type LanceResult struct {
	Schema map[string]string `json:"schema"`
	Rows   int               `json:"rows"`
	Hits   []LanceHit        `json:"hits"`
}

// LanceHit is one row LanceDB's search returned: its id column and its
// cosine distance (for a multi-vector column, LanceDB's MaxSim distance).
type LanceHit struct {
	ID       string  `json:"id"`
	Distance float64 `json:"distance"`
}

// Lance reads the Parquet files of dir with arrow-rs (parquet-wasm), loads
// them into a LanceDB table and returns the k rows nearest to query in
// column by cosine distance; query is a vector, or a list of vectors for a
// multi-vector column. A failure fails the test; the test is skipped when
// node or the packages are absent.
func Lance(t testing.TB, dir, column string, query any, k int) LanceResult {
	t.Helper()
	node, pkgDir := requireNode(t, lancePackages)
	req, err := json.Marshal(map[string]any{"dir": dir, "column": column, "query": query, "k": k})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runScript(node, pkgDir, "lance.mjs", bytes.NewReader(req))
	if err != nil {
		t.Fatalf("npmtest: LanceDB: %v", err)
	}
	var res LanceResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("npmtest: LanceDB's output: %v", err)
	}
	return res
}
