package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path"

	"github.com/schollz/progressbar/v3"
	"github.com/vembed/vembed/hub"
)

func init() {
	register(&command{name: "pull", summary: "downloads a model repository or file from the Hugging Face Hub into its shared cache", run: runPull})
}

const pullUsage = `ORG/NAME[/FILE] [--revision R] [--include GLOB]...

Downloads FILE, or every file of the repository (those matching --include
when given), into the Hugging Face cache ($HF_HUB_CACHE, default
$HF_HOME/hub, default ~/.cache/huggingface/hub) that huggingface_hub shares,
and prints the local path. An interrupted download resumes where it stopped;
each file is checked against the hub's SHA-256 before it is used.
Environment: HF_ENDPOINT (a mirror), HF_TOKEN (private and gated
repositories), HF_HUB_OFFLINE=1 (cache only).`

// globList collects repeated --include patterns.
type globList []string

func (g *globList) String() string { return fmt.Sprint(*g) }

func (g *globList) Set(s string) error {
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Errorf("bad pattern %q: %w", s, err)
	}
	*g = append(*g, s)
	return nil
}

func runPull(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("pull", pullUsage, stderr)
	rev := fs.String("revision", "", "branch, tag or commit (default main)")
	var include globList
	fs.Var(&include, "include", "download only the repository files matching this pattern (path.Match, repeatable; e.g. '*Q4_K_M.gguf')")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "give one ORG/NAME[/FILE] (got %d arguments)", len(pos))
	}
	ref, err := hub.ParseRef(pos[0])
	if err != nil {
		return err
	}
	if *rev != "" {
		ref.Revision = *rev
	}
	if ref.File != "" && len(include) > 0 {
		return fmt.Errorf("--include selects files of a repository; %s already names one", pos[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := newHubClient(stderr, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return err
	}
	if ref.File != "" {
		p, err := c.Download(ctx, ref.Repo, ref.Revision, ref.File)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, p)
		return nil
	}
	var keep func(hub.RepoFile) bool
	if len(include) > 0 {
		keep = func(f hub.RepoFile) bool {
			for _, g := range include {
				if ok, _ := path.Match(g, f.Name); ok {
					return true
				}
				if ok, _ := path.Match(g, path.Base(f.Name)); ok {
					return true
				}
			}
			return false
		}
	}
	dir, info, err := c.Snapshot(ctx, ref.Repo, ref.Revision, keep)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %d files at commit %s\n", ref.Repo, len(info.Files), info.Commit)
	fmt.Fprintln(stdout, dir)
	return nil
}

// newHubClient is a hub client from the environment that draws download
// progress on stderr.
func newHubClient(stderr io.Writer, log *slog.Logger) (*hub.Client, error) {
	c, err := hub.NewClient()
	if err != nil {
		return nil, err
	}
	c.Log = log
	c.Progress = func(file string, size, have int64) io.WriteCloser {
		bar := newByteBar(stderr, size, path.Base(file))
		bar.Set64(have)
		return barCloser{bar}
	}
	return c, nil
}

// barCloser ends a progress bar with the download: a complete one has
// finished by itself, a cut one stops where it is.
type barCloser struct{ bar *progressbar.ProgressBar }

func (b barCloser) Write(p []byte) (int, error) { return b.bar.Write(p) }

func (b barCloser) Close() error {
	if b.bar.IsFinished() {
		return nil
	}
	return b.bar.Exit()
}
