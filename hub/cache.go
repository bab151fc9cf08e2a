package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RepoDir is the cache folder of a model repository:
// {cache}/models--{org}--{name}.
func (c *Client) RepoDir(repo string) string {
	return filepath.Join(c.CacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

func (c *Client) lockPath(repo, etag string) string {
	return filepath.Join(c.CacheDir, ".locks", filepath.Base(c.RepoDir(repo)), etag+".lock")
}

// snapshotPath is where file appears for a commit.
func (c *Client) snapshotPath(repo, commit, file string) string {
	return filepath.Join(c.RepoDir(repo), "snapshots", commit, filepath.FromSlash(file))
}

// cachedCommit returns the commit a revision resolves to in the cache: the
// revision itself when it is a commit hash, else the content of its ref.
func (c *Client) cachedCommit(repo, revision string) (string, error) {
	if commitRe.MatchString(revision) {
		return revision, nil
	}
	b, err := os.ReadFile(filepath.Join(c.RepoDir(repo), "refs", filepath.FromSlash(revision)))
	if err != nil {
		return "", errNoCache
	}
	commit := strings.TrimSpace(string(b))
	if !commitRe.MatchString(commit) {
		return "", fmt.Errorf("hub: cache: ref %s of %s holds %q, not a commit hash", revision, repo, commit)
	}
	return commit, nil
}

// cachedFile returns file at revision from the cache alone.
func (c *Client) cachedFile(repo, revision, file string) (string, error) {
	commit, err := c.cachedCommit(repo, revision)
	if err == nil {
		p := c.snapshotPath(repo, commit, file)
		if _, err = os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("hub: %s/%s@%s is not in the cache %s (offline)", repo, file, revision, c.CacheDir)
}

// cachedInfo lists a cached snapshot (offline): names only.
func (c *Client) cachedInfo(repo, revision string) (*RepoInfo, error) {
	commit, err := c.cachedCommit(repo, revision)
	if err != nil {
		return nil, fmt.Errorf("hub: %s@%s is not in the cache %s (offline)", repo, revision, c.CacheDir)
	}
	root := filepath.Join(c.RepoDir(repo), "snapshots", commit)
	info := &RepoInfo{Repo: repo, Commit: commit}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil // a dangling link: not usable
		}
		info.Files = append(info.Files, RepoFile{Name: filepath.ToSlash(rel), Size: st.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hub: %s@%s is not in the cache %s (offline): %w", repo, revision, c.CacheDir, err)
	}
	return info, nil
}

// writeRef records the commit a branch or tag points to, as
// huggingface_hub does (refs/{revision}, no trailing newline).
func (c *Client) writeRef(repo, revision, commit string) error {
	if revision == commit {
		return nil
	}
	p := filepath.Join(c.RepoDir(repo), "refs", filepath.FromSlash(revision))
	if b, err := os.ReadFile(p); err == nil && string(b) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: cache: %w", err)
	}
	return nil
}

// link makes pointer a relative symlink to blob (huggingface_hub's
// layout), replacing whatever was there. Where symlinks are refused the
// blob is copied instead, as huggingface_hub does on such systems.
func link(blob, pointer string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	if err := os.Remove(pointer); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hub: cache: %w", err)
	}
	if err := os.Symlink(rel, pointer); err == nil {
		return nil
	}
	return copyFile(blob, pointer)
}

func copyFile(src, dst string) error {
	b, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	defer b.Close()
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("hub: cache: %w", err)
	}
	_, err = out.ReadFrom(b)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: cache: %w", err)
	}
	return nil
}

// CachedSnapshot returns the cache's snapshot directory of repo at
// revision (a branch, tag or commit), without asking the hub; an error
// when the cache does not hold it.
func (c *Client) CachedSnapshot(repo, revision string) (string, error) {
	commit, err := c.cachedCommit(repo, revision)
	if err != nil {
		return "", fmt.Errorf("hub: %s@%s is not in the cache %s", repo, revision, c.CacheDir)
	}
	dir := filepath.Join(c.RepoDir(repo), "snapshots", commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("hub: %s@%s is not in the cache %s", repo, revision, c.CacheDir)
	}
	return dir, nil
}
