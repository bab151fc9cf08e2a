package hub

import (
	"context"
	"fmt"
	"path/filepath"
)

// Snapshot downloads the files of repo at revision (default "main") for
// which keep returns true (nil keeps all) and returns the snapshot
// directory and the listing. Each file is fetched at the listing's commit
// and checked against the listing's hash as well as its own answer's.
func (c *Client) Snapshot(ctx context.Context, repo, revision string, keep func(RepoFile) bool) (string, *RepoInfo, error) {
	if revision == "" {
		revision = "main"
	}
	info, err := c.Info(ctx, repo, revision)
	if err != nil {
		return "", nil, err
	}
	var files []RepoFile
	for _, f := range info.Files {
		if keep == nil || keep(f) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("hub: %s@%s: no file to download (the repository has %d)", repo, revision, len(info.Files))
	}
	for _, f := range files {
		expect := f.SHA256
		if expect == "" {
			expect = f.BlobID
		}
		if c.Offline {
			if _, err := c.cachedFile(repo, info.Commit, f.Name); err != nil {
				return "", nil, err
			}
			continue
		}
		if _, err := c.download(ctx, repo, info.Commit, f.Name, expect); err != nil {
			return "", nil, err
		}
	}
	if !c.Offline {
		if err := c.writeRef(repo, revision, info.Commit); err != nil {
			return "", nil, err
		}
	}
	info.Files = files
	return filepath.Join(c.RepoDir(repo), "snapshots", info.Commit), info, nil
}
