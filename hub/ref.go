package hub

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// Scheme prefixes a model reference on the hub.
const Scheme = "hf://"

// Ref names a repository, a revision and optionally one file in it.
type Ref struct {
	Repo     string // org/name
	Revision string // "" for the default branch
	File     string // "" for the whole repository
}

func (r Ref) String() string {
	s := Scheme + r.Repo
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	if r.File != "" {
		s += "/" + r.File
	}
	return s
}

// IsRef reports whether s is a hub reference (hf://...).
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// ParseRef parses "org/name[@revision][/path/to/file]", with or without the
// hf:// prefix. A revision containing "/" (refs/pr/1) is written URL-escaped
// (refs%2Fpr%2F1) or given separately.
func ParseRef(s string) (Ref, error) {
	rest := strings.TrimPrefix(s, Scheme)
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return Ref{}, fmt.Errorf("hub: %q: want org/name[@revision][/file]", s)
	}
	r := Ref{Repo: parts[0] + "/" + parts[1]}
	if name, rev, ok := strings.Cut(parts[1], "@"); ok {
		r.Repo = parts[0] + "/" + name
		r.Revision = strings.ReplaceAll(rev, "%2F", "/")
		if err := checkRevision(r.Revision); err != nil {
			return Ref{}, err
		}
	}
	if len(parts) == 3 {
		r.File = strings.TrimSuffix(parts[2], "/")
		if r.File != "" {
			if err := checkFile(r.File); err != nil {
				return Ref{}, err
			}
		}
	}
	if err := checkRepo(r.Repo); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// Resolved is a hub reference made local.
type Resolved struct {
	Path string // the file, or the snapshot directory of a checkpoint
	// Checkpoint is true when Path is the directory of a Hugging Face
	// checkpoint (config.json and safetensors) rather than a file.
	Checkpoint bool
	Commit     string
}

// CheckpointFile reports whether a file belongs to what a checkpoint
// conversion reads: configuration, tokenizer, safetensors weights and
// adapter files; other formats (PyTorch pickles, ONNX, GGUF) are skipped.
func CheckpointFile(f RepoFile) bool {
	switch path.Ext(f.Name) {
	case ".json", ".safetensors", ".txt", ".model", ".jinja":
		return !strings.HasPrefix(f.Name, "onnx/")
	}
	return false
}

// Resolve makes a reference local. A reference to a file downloads that
// file. A reference to a repository downloads it when it holds a
// checkpoint (config.json and *.safetensors); a repository of GGUF files
// needs one named, and the error lists them.
func (c *Client) Resolve(ctx context.Context, r Ref) (*Resolved, error) {
	if r.File != "" {
		p, err := c.Download(ctx, r.Repo, r.Revision, r.File)
		if err != nil {
			return nil, err
		}
		return &Resolved{Path: p}, nil
	}
	rev := r.Revision
	if rev == "" {
		rev = "main"
	}
	info, err := c.Info(ctx, r.Repo, rev)
	if err != nil {
		return nil, err
	}
	var ggufs []string
	config, weights := false, false
	for _, f := range info.Files {
		switch {
		case f.Name == "config.json":
			config = true
		case strings.HasSuffix(f.Name, ".safetensors"):
			weights = true
		case strings.HasSuffix(f.Name, ".gguf"):
			ggufs = append(ggufs, f.Name)
		}
	}
	if config && weights {
		dir, info, err := c.Snapshot(ctx, r.Repo, info.Commit, CheckpointFile)
		if err != nil {
			return nil, err
		}
		if rev != info.Commit && !c.Offline {
			if err := c.writeRef(r.Repo, rev, info.Commit); err != nil {
				return nil, err
			}
		}
		return &Resolved{Path: dir, Checkpoint: true, Commit: info.Commit}, nil
	}
	if len(ggufs) > 0 {
		return nil, fmt.Errorf("hub: %s holds several GGUF files; name one, e.g. %s: %s", r, Ref{Repo: r.Repo, Revision: r.Revision, File: ggufs[0]}, strings.Join(ggufs, ", "))
	}
	return nil, fmt.Errorf("hub: %s holds neither GGUF files nor a checkpoint (config.json and safetensors)", r)
}
