package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vembed/vembed/hub"
)

// checkpointFiles are the GGUFs converted from a Hugging Face checkpoint.
type checkpointFiles struct{ model, mmproj, mvproj string }

// convertCheckpoint converts the checkpoint in dir into GGUFs written to
// outDir. The converter's command file sets it; while it is nil, --model
// references to checkpoint repositories are refused.
var convertCheckpoint func(ctx context.Context, dir, outDir string, log *slog.Logger) (checkpointFiles, error)

// errNoConverter is returned for a checkpoint reference without a converter.
var errNoConverter = errors.New("checkpoint conversion not available in this build: name a GGUF file instead (hf://org/repo/file.gguf)")

// resolveRefs replaces hf:// references among the model flags by local
// paths, pulling what the cache lacks. For a GGUF LM without --mmproj, the
// repository's mmproj*.gguf (and mvproj*.gguf) are pulled beside it; a
// checkpoint repository is converted once, into the user cache directory.
// A nil log logs to stderr.
func (m *modelFlags) resolveRefs(ctx context.Context, stderr io.Writer, log *slog.Logger) error {
	if !hub.IsRef(m.model) && !hub.IsRef(m.mmproj) && !hub.IsRef(m.mvproj) {
		return nil
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	c, err := newHubClient(stderr, log)
	if err != nil {
		return err
	}
	if hub.IsRef(m.model) {
		ref, err := hub.ParseRef(m.model)
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		res, err := c.Resolve(ctx, ref)
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		if res.Checkpoint {
			files, err := convertedCheckpoint(ctx, ref, res, log)
			if err != nil {
				return fmt.Errorf("--model %s: %w", ref, err)
			}
			m.model = files.model
			m.mmproj = cmpOr(m.mmproj, files.mmproj)
			m.mvproj = cmpOr(m.mvproj, files.mvproj)
		} else {
			m.model = res.Path
			if m.mmproj == "" {
				if m.mmproj, err = companion(ctx, c, ref, "mmproj", log); err != nil {
					return err
				}
			}
			if m.mvproj == "" {
				if m.mvproj, err = companion(ctx, c, ref, "mvproj", log); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range []struct {
		flag string
		val  *string
	}{{"--mmproj", &m.mmproj}, {"--mvproj", &m.mvproj}} {
		if !hub.IsRef(*f.val) {
			continue
		}
		ref, err := hub.ParseRef(*f.val)
		if err == nil && ref.File == "" {
			err = errors.New("name a GGUF file: hf://org/repo/file.gguf")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
		if *f.val, err = c.Download(ctx, ref.Repo, ref.Revision, ref.File); err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// companion pulls the repository's <kind>*.gguf beside an LM reference:
// "" when there is none; among several, one in F16, else the first by name.
func companion(ctx context.Context, c *hub.Client, lm hub.Ref, kind string, log *slog.Logger) (string, error) {
	info, err := c.Info(ctx, lm.Repo, cmpOr(lm.Revision, "main"))
	if err != nil {
		return "", fmt.Errorf("--model: looking for an %s file: %w", kind, err)
	}
	var names []string
	for _, f := range info.Files {
		base := strings.ToLower(path.Base(f.Name))
		if strings.HasPrefix(base, kind) && strings.HasSuffix(base, ".gguf") {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	if own := companionsOf(names, kind, lm.File); len(own) > 0 {
		names = own
	}
	slices.Sort(names)
	pick := names[0]
	for _, n := range names {
		if strings.Contains(strings.ToUpper(path.Base(n)), "F16") {
			pick = n
			break
		}
	}
	if len(names) > 1 {
		log.Info("several "+kind+" files in the repository: using one (choose with --"+kind+")", "file", pick, "choices", names)
	}
	p, err := c.Download(ctx, lm.Repo, info.Commit, pick)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", kind, err)
	}
	return p, nil
}

// companionsOf keeps the <kind> files named for the LM file as vembed
// convert and llama.cpp name them: <kind>-<name>-<TYPE>.gguf beside
// <name>-<TYPE>.gguf, so that a task's LM (<base>-<task>-F16.gguf) gets
// its task's mvproj and mmproj rather than another task's or the base
// tower's.
func companionsOf(names []string, kind, lmFile string) []string {
	stem := strings.ToLower(strings.TrimSuffix(path.Base(lmFile), ".gguf"))
	i := strings.LastIndex(stem, "-")
	if i <= 0 {
		return nil
	}
	prefix := kind + "-" + stem[:i] + "-"
	var own []string
	for _, n := range names {
		base := strings.ToLower(path.Base(n))
		if rest, ok := strings.CutPrefix(base, prefix); ok && !strings.Contains(rest, "-") {
			own = append(own, n)
		}
	}
	return own
}

// convertedCheckpoint converts a pulled checkpoint once per commit into
// $XDG_CACHE_HOME/vembed/converted/models--org--name/<commit>, reusing an
// earlier conversion.
func convertedCheckpoint(ctx context.Context, ref hub.Ref, res *hub.Resolved, log *slog.Logger) (checkpointFiles, error) {
	if convertCheckpoint == nil {
		return checkpointFiles{}, errNoConverter
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return checkpointFiles{}, err
	}
	out := filepath.Join(base, "vembed", "converted", "models--"+strings.ReplaceAll(ref.Repo, "/", "--"), res.Commit)
	done := filepath.Join(out, "files.txt")
	if b, err := os.ReadFile(done); err == nil {
		if f, ok := parseConverted(out, string(b)); ok {
			return f, nil
		}
	}
	log.Info("converting the checkpoint (once per commit)", "repo", ref.Repo, "commit", res.Commit, "out", out)
	tmp := out + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return checkpointFiles{}, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return checkpointFiles{}, err
	}
	files, err := convertCheckpoint(ctx, res.Path, tmp, log)
	if err != nil {
		os.RemoveAll(tmp)
		return checkpointFiles{}, err
	}
	rel := func(p string) string {
		if p == "" {
			return "-"
		}
		return filepath.Base(p)
	}
	list := rel(files.model) + "\n" + rel(files.mmproj) + "\n" + rel(files.mvproj) + "\n"
	if err := os.WriteFile(filepath.Join(tmp, "files.txt"), []byte(list), 0o644); err != nil {
		return checkpointFiles{}, err
	}
	os.RemoveAll(out)
	if err := os.Rename(tmp, out); err != nil {
		return checkpointFiles{}, err
	}
	f, _ := parseConverted(out, list)
	return f, nil
}

// parseConverted reads files.txt: the LM, mmproj and mvproj file names
// ("-" for none), one a line; ok is false unless the LM exists.
func parseConverted(dir, list string) (checkpointFiles, bool) {
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 3 {
		return checkpointFiles{}, false
	}
	abs := func(s string) string {
		if s == "-" || s == "" {
			return ""
		}
		return filepath.Join(dir, filepath.Base(s))
	}
	f := checkpointFiles{abs(lines[0]), abs(lines[1]), abs(lines[2])}
	if f.model == "" {
		return f, false
	}
	for _, p := range []string{f.model, f.mmproj, f.mvproj} {
		if _, err := os.Stat(p); p != "" && err != nil {
			return f, false
		}
	}
	return f, true
}
