// Package search answers queries over an index directory written by
// package index (vembed index): it reads the manifests and part files of
// every shard, follows the folder while a run writes into it, and ranks
// its rows against a query's vectors.
//
// Single vectors rank by cosine in two stages: a Q8_0 copy of the rows is
// scanned, then the best candidates are scored in float32 through the
// kernels, as eval.Score scores. Multi-vectors rank by MaxSim in two
// stages: every page is scored by a MaxSim over sign-quantized token
// vectors (one bit a dimension, Hamming similarity), then the best
// candidates by exact float32 MaxSim over their vectors, read from the
// part's memory-mapped sidecar (index.Sidecar). Options.Exact scores
// every row exactly (one stage).
package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vembed/vembed/index"
)

// Index is a searchable view of an index directory. Refresh (or Follow)
// brings it in line with the folder; a search runs on the snapshot taken
// when it starts, so it never sees a part half loaded or an id twice.
type Index struct {
	dir string
	log *slog.Logger

	snap atomic.Pointer[snapshot]

	mu       sync.Mutex // serializes Refresh
	loaded   map[string]*part
	failed   map[string]failure
	manifest []index.Manifest
}

// failure is a part file that did not load, kept so that it is not read
// again until it changes.
type failure struct {
	stamp fileStamp
	err   error
}

// fileStamp identifies a part file's version, and its sidecar's: a
// sidecar rewritten in another element type (vembed index --sidecar)
// loads the part again.
type fileStamp struct {
	size  int64
	mtime time.Time
	car   struct {
		size  int64
		mtime time.Time
	}
}

// snapshot is the index's state between two refreshes.
type snapshot struct {
	parts   []*part
	hidden  map[*part][]bool // rows whose id an earlier part holds
	byID    map[string]rowRef
	rows    int
	multi   bool
	dims    int
	updated time.Time
	model   string
	modelID string
	arith   string
	dpi     float64
	root    string
	// problems are the parts that failed to load, and why.
	problems []Problem
}

// rowRef locates a row.
type rowRef struct {
	p *part
	i int
}

// Problem is a part file the index could not read.
type Problem struct {
	Part   string `json:"part"`
	Reason string `json:"reason"`
}

// ErrNotIndex is returned by Open for a folder that holds no index.
var ErrNotIndex = errors.New("not an index folder (no manifest-*.json, state-*.db or parts/)")

// Open reads the index in dir. An index that is still being written by
// its first run (parts but no manifest yet) opens; a folder with neither
// a manifest, a state store nor a parts folder is ErrNotIndex.
func Open(dir string, log *slog.Logger) (*Index, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("search: %s: %w", dir, ErrNotIndex)
	}
	mans, _ := filepath.Glob(filepath.Join(dir, "manifest-*of*.json"))
	states, _ := filepath.Glob(filepath.Join(dir, "state-*of*.db"))
	if _, err := os.Stat(filepath.Join(dir, index.PartsDir)); err != nil && len(mans) == 0 && len(states) == 0 {
		return nil, fmt.Errorf("search: %s: %w", dir, ErrNotIndex)
	}
	x := &Index{dir: dir, log: log, loaded: map[string]*part{}, failed: map[string]failure{}}
	if err := x.Refresh(); err != nil {
		return nil, err
	}
	return x, nil
}

// Dir is the index folder.
func (x *Index) Dir() string { return x.dir }

// maxManifestBytes bounds a manifest read (one names its parts and model
// files: kilobytes).
const maxManifestBytes = 16 << 20

// readManifests reads every shard's manifest. Shards of different models,
// options or arithmetic are an error naming both.
func readManifests(dir string) ([]index.Manifest, error) {
	names, err := filepath.Glob(filepath.Join(dir, "manifest-*of*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []index.Manifest
	for _, n := range names {
		b, _, err := readBounded(n, maxManifestBytes)
		if err != nil {
			return nil, fmt.Errorf("search: %s: %w", filepath.Base(n), err)
		}
		var m index.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("search: %s: %w", filepath.Base(n), err)
		}
		if len(out) > 0 {
			a := out[0]
			if a.ModelID != m.ModelID || a.Vectors != m.Vectors || a.Dimensions != m.Dimensions {
				return nil, fmt.Errorf("search: shards of different models or options: %s has %s (%s, %d dims, identity %.12s), %s has %s (%s, %d dims, identity %.12s)",
					filepath.Base(names[0]), a.Model, a.Vectors, a.Dimensions, a.ModelID, filepath.Base(n), m.Model, m.Vectors, m.Dimensions, m.ModelID)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// Refresh brings the index in line with its folder: parts committed since
// are loaded, parts removed (replaced by a compaction or a merge) leave.
// A part that fails to load is reported (Info().Problems) and the rest is
// served.
func (x *Index) Refresh() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	mans, err := readManifests(x.dir)
	if err != nil {
		if old := x.snap.Load(); old != nil {
			// Keep serving what was read: a manifest being replaced is
			// renamed in whole, so this is a real disagreement, logged.
			x.log.Warn("search: manifests", "err", err)
			return err
		}
		return err
	}
	partsDir := filepath.Join(x.dir, index.PartsDir)
	ents, err := os.ReadDir(partsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("search: %w", err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		// Temporary files of a write in progress start with a dot; only
		// whole parts, renamed in, are read.
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".parquet") || !e.Type().IsRegular() {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	keep := make(map[string]bool, len(names))
	var parts []*part
	var problems []Problem
	for _, n := range names {
		keep[n] = true
		path := filepath.Join(partsDir, n)
		fi, err := os.Stat(path)
		if err != nil {
			continue // removed since the listing
		}
		stamp := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
		if ci, err := os.Stat(filepath.Join(x.dir, index.SidecarDir, index.SidecarName(n))); err == nil {
			stamp.car.size, stamp.car.mtime = ci.Size(), ci.ModTime()
		}
		if p, ok := x.loaded[n]; ok && p.stamp == stamp && !p.broken.Load() {
			parts = append(parts, p)
			continue
		}
		if f, ok := x.failed[n]; ok && f.stamp == stamp {
			problems = append(problems, Problem{Part: n, Reason: f.err.Error()})
			continue
		}
		p, err := loadPart(x.dir, n, stamp)
		if err != nil {
			if _, gone := os.Stat(path); gone != nil {
				continue // replaced while being read
			}
			x.log.Warn("search: a part file could not be read; the rest is served", "part", n, "err", err)
			x.failed[n] = failure{stamp, err}
			delete(x.loaded, n) // a broken part's mapping goes once no search holds it
			problems = append(problems, Problem{Part: n, Reason: err.Error()})
			continue
		}
		delete(x.failed, n)
		x.loaded[n] = p
		parts = append(parts, p)
	}
	for n := range x.loaded {
		if !keep[n] {
			delete(x.loaded, n)
		}
	}
	for n := range x.failed {
		if !keep[n] {
			delete(x.failed, n)
		}
	}
	s, err := x.build(mans, parts, problems)
	if err != nil {
		return err
	}
	x.manifest = mans
	x.snap.Store(s)
	return nil
}

// build makes a snapshot of the loaded parts: the rows of an id already
// held by an earlier part are hidden, so no search sees an id twice.
func (x *Index) build(mans []index.Manifest, parts []*part, problems []Problem) (*snapshot, error) {
	s := &snapshot{parts: parts, byID: map[string]rowRef{}, problems: problems}
	if len(mans) > 0 {
		m := mans[0]
		s.model, s.modelID, s.arith = m.Model, m.ModelID, m.Arithmetic
		s.multi, s.dims = m.Vectors == "multivector", m.Dimensions
		s.dpi, s.root = m.DPI, m.Root
		for _, m := range mans {
			s.updated = later(s.updated, m.Written)
		}
	}
	first := true
	for _, p := range parts {
		if len(p.meta) == 0 {
			continue
		}
		if first && len(mans) == 0 {
			s.multi, s.dims, s.model = p.multi, p.dims, p.meta[0].Model
		}
		first = false
		if p.multi != s.multi || p.dims != s.dims {
			s.problems = append(s.problems, Problem{Part: p.name, Reason: fmt.Sprintf("holds %s of %d dimensions, the index %s of %d", kindName(p.multi), p.dims, kindName(s.multi), s.dims)})
			continue
		}
		s.updated = later(s.updated, p.stamp.mtime.UTC())
		for i := range p.meta {
			id := p.meta[i].ID
			if _, dup := s.byID[id]; dup {
				if s.hidden == nil {
					s.hidden = map[*part][]bool{}
				}
				if s.hidden[p] == nil {
					s.hidden[p] = make([]bool, len(p.meta))
				}
				s.hidden[p][i] = true
				continue
			}
			s.byID[id] = rowRef{p, i}
			s.rows++
		}
	}
	// Parts of another kind or width were reported above and are left
	// out of the search.
	kept := s.parts[:0:0]
	for _, p := range s.parts {
		if len(p.meta) == 0 || (p.multi == s.multi && p.dims == s.dims) {
			kept = append(kept, p)
		}
	}
	s.parts = kept
	return s, nil
}

func kindName(multi bool) string {
	if multi {
		return "multi-vectors"
	}
	return "single vectors"
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Follow refreshes the index every interval until stop is closed, so that
// the parts a running `vembed index` commits are searched within about an
// interval and the items it removes leave.
func (x *Index) Follow(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := x.Refresh(); err != nil {
				x.log.Warn("search: refreshing the index", "err", err)
			}
		}
	}
}

// Close unmaps the parts' sidecars; no search may run during or after
// it.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for n, p := range x.loaded {
		p.close()
		delete(x.loaded, n)
	}
	x.snap.Store(&snapshot{byID: map[string]rowRef{}})
	return nil
}

// Info describes the index for GET /v1/index.
type Info struct {
	Model       string    `json:"model"`
	ModelID     string    `json:"model_identity,omitempty"`
	Arithmetic  string    `json:"arithmetic,omitempty"`
	Multivector bool      `json:"multivector"`
	Dims        int       `json:"dims"`
	Items       int       `json:"items"`
	Shards      []Shard   `json:"shards"`
	Parts       int       `json:"parts"`
	Updated     time.Time `json:"updated"`
	Problems    []Problem `json:"problems,omitempty"`
}

// Shard is one shard's manifest, as GET /v1/index reports it.
type Shard struct {
	Shard   int       `json:"shard"`
	Shards  int       `json:"shards"`
	Items   int       `json:"items"`
	Written time.Time `json:"written"`
}

// Info describes the current snapshot.
func (x *Index) Info() Info {
	s := x.snap.Load()
	x.mu.Lock()
	mans := x.manifest
	x.mu.Unlock()
	in := Info{Model: s.model, ModelID: s.modelID, Arithmetic: s.arith, Multivector: s.multi, Dims: s.dims, Items: s.rows,
		Parts: len(s.parts), Updated: s.updated.UTC(), Problems: s.problems, Shards: []Shard{}}
	for _, m := range mans {
		in.Shards = append(in.Shards, Shard{Shard: m.Shard, Shards: m.Shards, Items: m.Items, Written: m.Written.UTC()})
	}
	return in
}

// Manifests returns the shards' manifests as last read.
func (x *Index) Manifests() []index.Manifest {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]index.Manifest(nil), x.manifest...)
}
