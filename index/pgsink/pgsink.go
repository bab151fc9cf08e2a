// Package pgsink writes indexed items to PostgreSQL with pgvector: one row
// per item in a table (vector(N) or halfvec(N) column for the single
// vector), multi-vector rows in a child table, upserted by ID so that a
// run sending rows again after a crash leaves each item once.
//
// The tables, as Open creates them when absent:
//
//	create table vembed_items (
//	    id text primary key, path text not null, page integer not null,
//	    sha256 text not null, model text not null,
//	    width integer not null, height integer not null, text text not null,
//	    embedding vector(N)              -- only when Dimensions > 0
//	);
//	create table vembed_items_vectors (  -- only when MultiDimensions > 0
//	    id text not null references vembed_items (id) on delete cascade,
//	    row_index integer not null,      -- 0-based, the model's token order
//	    embedding vector(M) not null,
//	    primary key (id, row_index)
//	);
//
// queries.sql holds the SQL that searches them (cosine over the table,
// MaxSim over the child table).
//
// The sink names no prepared statement in the server's session (pgx's
// cache_describe mode, or describe_exec, exec or simple_protocol when the
// URL asks), so runs one after another work behind transaction-mode
// poolers and PGlite, whose sessions outlive a client's connections.
package pgsink

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/internal/clip"
)

// DefaultTable is the table Open uses when Options.Table is empty.
const DefaultTable = "vembed_items"

// VectorsSuffix names the child table of multi-vector rows: Table+VectorsSuffix.
const VectorsSuffix = "_vectors"

// hnswSuffix names the HNSW index on the table's embedding column.
const hnswSuffix = "_embedding_hnsw"

// Limits of pgvector's HNSW index on the column types (its documented
// maxima), checked up front for a clear message.
const (
	hnswMaxVector  = 2000
	hnswMaxHalfvec = 4000
)

// Statement bounds: an Upsert of any size is sent as statements of at most
// maxStatementRows items (or child vectors) and about maxStatementBytes of
// parameters, so memory on both ends stays bounded whatever the caller
// passes; a single larger item goes alone. Variables so that tests can
// cross the bounds with little data.
var (
	maxStatementRows  = 1000
	maxStatementBytes = 8 << 20
	maxDeleteIDs      = 10000
)

// halfMax is where float32 values stop fitting float16: from 65520 up they
// round to infinity, which halfvec rejects.
const halfMax = 65520

// Options configure Open.
type Options struct {
	// Table is the items' table, optionally schema-qualified
	// ("schema.table", split at the first dot); default DefaultTable.
	// Multi-vector rows go to Table+VectorsSuffix.
	Table string
	// Dimensions is the single vector's width (0 when the run writes
	// multi-vectors only).
	Dimensions int
	// MultiDimensions is the width of a multi-vector row (0 when the run
	// writes single vectors only).
	MultiDimensions int
	// HalfVec stores halfvec(N) (IEEE half precision, half the space, HNSW
	// up to 4000 dimensions) instead of vector(N) (float32, exact).
	HalfVec bool
	// HNSW creates an HNSW index for cosine distance on the single-vector
	// column if absent (the MaxSim query scans the child table exactly).
	HNSW bool
	// MaxConns sizes the connection pool (0: pgx's default, the greater of
	// 4 and the CPU count; pool_max_conns in the URL also works).
	MaxConns int32
}

// Sink upserts index rows into PostgreSQL. It implements index.Sink and is
// safe for concurrent use.
type Sink struct {
	pool   *pgxpool.Pool
	opts   Options
	table  pgx.Identifier // the items' table
	child  pgx.Identifier // the multi-vector rows' table
	vecTyp string         // "vector" or "halfvec"
	upsert string         // the items' upsert statement
}

var _ index.Sink = (*Sink)(nil)

// Open connects to the database at url (a PostgreSQL URL or key=value
// string, as pgx parses it), creates the vector extension, the tables and
// the HNSW index when absent, and checks that existing tables hold vectors
// of the run's type and width. Setup takes a transaction-scoped advisory
// lock, so workers of a sharded run may open the same tables at once.
func Open(ctx context.Context, url string, opts Options) (*Sink, error) {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	table, child, err := tableNames(opts.Table)
	if err != nil {
		return nil, err
	}
	if opts.Dimensions < 0 || opts.MultiDimensions < 0 {
		return nil, fmt.Errorf("pgsink: negative dimensions (%d, %d)", opts.Dimensions, opts.MultiDimensions)
	}
	if opts.Dimensions == 0 && opts.MultiDimensions == 0 {
		return nil, errors.New("pgsink: neither single-vector nor multi-vector dimensions given")
	}
	vecTyp := "vector"
	if opts.HalfVec {
		vecTyp = "halfvec"
	}
	if opts.HNSW {
		if opts.Dimensions == 0 {
			return nil, errors.New("pgsink: an HNSW index is built on the single-vector column, and this run writes multi-vectors only (the MaxSim query scans the child table)")
		}
		if !opts.HalfVec && opts.Dimensions > hnswMaxVector {
			return nil, fmt.Errorf("pgsink: pgvector's HNSW index takes vector columns of at most %d dimensions, not %d: store halfvec (up to %d) or fewer dimensions", hnswMaxVector, opts.Dimensions, hnswMaxHalfvec)
		}
		if opts.HalfVec && opts.Dimensions > hnswMaxHalfvec {
			return nil, fmt.Errorf("pgsink: pgvector's HNSW index takes halfvec columns of at most %d dimensions, not %d", hnswMaxHalfvec, opts.Dimensions)
		}
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("pgsink: negative pool size %d", opts.MaxConns)
	}
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, err
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}

	s := &Sink{opts: opts, table: table, child: child, vecTyp: vecTyp}
	// The tables and the extension first, on a connection of their own: the
	// pool's connections register pgvector's types, which must exist.
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("pgsink: connect: %w", err)
	}
	err = s.setup(ctx, conn)
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	cfg.AfterConnect = registerVectors
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgsink: %w", err)
	}
	// A first pooled connection now, so that a failure to register the
	// types shows at Open rather than at the first Upsert.
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("pgsink: connect: %w", err)
	}
	s.upsert = s.upsertSQL()
	return s, nil
}

// execModes are the values of default_query_exec_mode the sink runs
// with, for the message refusing another.
const execModes = "cache_describe (the sink's default), describe_exec, exec and simple_protocol"

// poolConfig parses url and sets the statement mode. pgx's default,
// cache_statement, gives every statement a name in the server's session;
// behind a transaction-mode pooler (PgBouncer, Supavisor, RDS Proxy) or
// PGlite the session outlives the connection, so the next connection's
// statements of the same text collide with those names ("prepared
// statement ... already exists") and the next run fails. The sink runs with
// cache_describe instead, which prepares only the unnamed statement: the
// same single round trip once a statement is described, and nothing left
// in the session. A URL asking for cache_statement by name is refused
// rather than silently changed; the other modes are taken as asked.
func poolConfig(url string) (*pgxpool.Config, error) {
	// pgx drops default_query_exec_mode from the settings it keeps, so
	// whether the URL names it is read from pgconn's parse.
	raw, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgsink: %w", err)
	}
	asked, named := raw.RuntimeParams["default_query_exec_mode"]
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgsink: %w", err)
	}
	switch {
	case !named:
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	case asked == "cache_statement":
		return nil, fmt.Errorf("pgsink: default_query_exec_mode=cache_statement names prepared statements that outlive the connection behind transaction poolers and in PGlite, failing the next run: use %s", execModes)
	}
	return cfg, nil
}

// registerVectors teaches a connection pgvector's types: their OIDs for
// the modes that describe statements, and which column type each Go type
// is for exec and simple_protocol, which send parameters as text without
// asking the server their types.
func registerVectors(ctx context.Context, c *pgx.Conn) error {
	if err := pgxvec.RegisterTypes(ctx, c); err != nil {
		return err
	}
	m := c.TypeMap()
	m.RegisterDefaultPgType(pgvector.Vector{}, "vector")
	m.RegisterDefaultPgType([]pgvector.Vector{}, "_vector")
	if _, ok := m.TypeForName("halfvec"); ok {
		m.RegisterDefaultPgType(pgvector.HalfVector{}, "halfvec")
		m.RegisterDefaultPgType([]pgvector.HalfVector{}, "_halfvec")
	}
	return nil
}

// tableNames parses and checks the user's table name, returning the items'
// and the child table's identifiers.
func tableNames(name string) (table, child pgx.Identifier, err error) {
	parts := strings.SplitN(name, ".", 2)
	for _, p := range parts {
		if p == "" || !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
			return nil, nil, fmt.Errorf("pgsink: table name %q: want a non-empty UTF-8 name, or schema.table", name)
		}
	}
	base := parts[len(parts)-1]
	// PostgreSQL cuts names at 63 bytes: a longer one would silently name
	// the child table or the index like the table.
	if n := 63 - max(len(VectorsSuffix), len(hnswSuffix)); len(base) > n {
		return nil, nil, fmt.Errorf("pgsink: table name %q is longer than %d bytes (PostgreSQL cuts the names derived from it)", base, n)
	}
	if len(parts) == 2 && len(parts[0]) > 63 {
		return nil, nil, fmt.Errorf("pgsink: schema name %q is longer than 63 bytes", parts[0])
	}
	table = pgx.Identifier(parts)
	child = append(pgx.Identifier{}, parts...)
	child[len(child)-1] = base + VectorsSuffix
	return table, child, nil
}

// setup creates what is absent and checks what exists, in one transaction
// under an advisory lock.
func (s *Sink) setup(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsink: %w", err)
	}
	defer tx.Rollback(ctx)
	// One key for every table: creating the extension races too.
	h := fnv.New64a()
	h.Write([]byte("vembed index/pgsink setup"))
	if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return fmt.Errorf("pgsink: lock for setup: %w", err)
	}
	if _, err := tx.Exec(ctx, "create extension if not exists vector"); err != nil {
		return fmt.Errorf("pgsink: create extension vector (pgvector must be installed on the server, and the user allowed to create it or it created once by an administrator): %w", err)
	}
	t := s.table.Sanitize()
	cols := `id text primary key,
	path text not null,
	page integer not null,
	sha256 text not null,
	model text not null,
	width integer not null,
	height integer not null,
	text text not null`
	if s.opts.Dimensions > 0 {
		cols += fmt.Sprintf(",\n\tembedding %s(%d)", s.vecTyp, s.opts.Dimensions)
	}
	if _, err := tx.Exec(ctx, "create table if not exists "+t+" (\n\t"+cols+"\n)"); err != nil {
		return s.typeHint(fmt.Errorf("pgsink: create table %s: %w", t, err))
	}
	if err := s.checkColumn(ctx, tx, s.table, s.opts.Dimensions); err != nil {
		return err
	}
	if s.opts.MultiDimensions > 0 {
		c := s.child.Sanitize()
		ddl := fmt.Sprintf(`create table if not exists %s (
	id text not null references %s (id) on delete cascade,
	row_index integer not null,
	embedding %s(%d) not null,
	primary key (id, row_index)
)`, c, t, s.vecTyp, s.opts.MultiDimensions)
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return s.typeHint(fmt.Errorf("pgsink: create table %s: %w", c, err))
		}
		if err := s.checkColumn(ctx, tx, s.child, s.opts.MultiDimensions); err != nil {
			return err
		}
	}
	if s.opts.HNSW {
		name := pgx.Identifier{s.table[len(s.table)-1] + hnswSuffix}.Sanitize()
		ddl := fmt.Sprintf("create index if not exists %s on %s using hnsw (embedding %s_cosine_ops)", name, t, s.vecTyp)
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("pgsink: create HNSW index %s: %w", name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgsink: setup: %w", err)
	}
	return nil
}

// typeHint adds the likely cause to an undefined-type error (halfvec
// arrived in pgvector 0.7.0).
func (s *Sink) typeHint(err error) error {
	var pe *pgconn.PgError
	if s.opts.HalfVec && errors.As(err, &pe) && pe.Code == "42704" {
		return fmt.Errorf("%w (halfvec needs pgvector 0.7.0 or later)", err)
	}
	return err
}

// checkColumn checks that an existing table's embedding column holds the
// vectors this run writes (dims 0: the run writes none into it).
func (s *Sink) checkColumn(ctx context.Context, tx pgx.Tx, table pgx.Identifier, dims int) error {
	var typ string
	err := tx.QueryRow(ctx, `select format_type(atttypid, atttypmod) from pg_attribute
		where attrelid = $1::regclass and attname = 'embedding' and attnum > 0 and not attisdropped`,
		table.Sanitize()).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		if dims == 0 {
			return nil
		}
		return fmt.Errorf("pgsink: table %s exists without an embedding column (made by a multi-vector run?): use another table for a run of %d-dimensional vectors", table.Sanitize(), dims)
	}
	if err != nil {
		return fmt.Errorf("pgsink: read the columns of %s: %w", table.Sanitize(), err)
	}
	if dims == 0 {
		return nil
	}
	// format_type qualifies the type when its schema is not on the path.
	got := typ[strings.LastIndexByte(typ, '.')+1:]
	if want := fmt.Sprintf("%s(%d)", s.vecTyp, dims); got != want {
		return fmt.Errorf("pgsink: table %s holds %s embeddings and this run writes %s: use another table or drop this one", table.Sanitize(), typ, want)
	}
	return nil
}

// upsertSQL is the items' upsert: arrays of each column unnested into rows,
// so that one statement of fixed text carries a batch.
func (s *Sink) upsertSQL() string {
	cols := []string{"id", "path", "page", "sha256", "model", "width", "height", "text"}
	types := []string{"text", "text", "integer", "text", "text", "integer", "integer", "text"}
	if s.opts.Dimensions > 0 {
		cols = append(cols, "embedding")
		types = append(types, s.vecTyp)
	}
	params := make([]string, len(cols))
	sets := make([]string, 0, len(cols)-1)
	for i := range cols {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, types[i])
		if i > 0 {
			sets = append(sets, cols[i]+" = excluded."+cols[i])
		}
	}
	return fmt.Sprintf("insert into %s (%s)\nselect * from unnest(%s)\non conflict (id) do update set %s",
		s.table.Sanitize(), strings.Join(cols, ", "), strings.Join(params, ", "), strings.Join(sets, ", "))
}

// Upsert inserts rows or replaces those with the same ID (their
// multi-vector rows replaced too), all in one transaction: after an error
// none of them is written. Rows must carry vectors of the widths Open was
// given, finite (and within float16's range for halfvec). Text is stored
// with NUL bytes removed and invalid UTF-8 replaced by U+FFFD, which
// PostgreSQL text cannot hold; a row listed twice is written as its last
// occurrence.
func (s *Sink) Upsert(ctx context.Context, rows []index.Row) error {
	rows, err := s.check(rows)
	if err != nil || len(rows) == 0 {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return batchError(err, "pgsink: upsert %d rows into %s (first id %s): begin", len(rows), s.table.Sanitize(), shortID(rows[0].ID))
	}
	defer tx.Rollback(ctx)
	for start := 0; start < len(rows); {
		end, size := start, 0
		for end < len(rows) && end-start < maxStatementRows && (end == start || size+s.rowBytes(&rows[end]) <= maxStatementBytes) {
			size += s.rowBytes(&rows[end])
			end++
		}
		if err := s.upsertBatch(ctx, tx, rows[start:end]); err != nil {
			return err
		}
		start = end
	}
	if err := tx.Commit(ctx); err != nil {
		return batchError(err, "pgsink: upsert %d rows into %s (first id %s): commit", len(rows), s.table.Sanitize(), shortID(rows[0].ID))
	}
	return nil
}

// check validates rows against the sink's widths before anything is sent,
// and keeps the last occurrence of each ID (one statement may not update a
// row twice).
func (s *Sink) check(rows []index.Row) ([]index.Row, error) {
	last := make(map[string]int, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.ID == "" || !utf8.ValidString(r.ID) || strings.ContainsRune(r.ID, 0) {
			return nil, fmt.Errorf("pgsink: row %d: ID %s is not a non-empty UTF-8 string without NUL", i, shortID(r.ID))
		}
		for _, v := range []int{r.Page, r.Width, r.Height} {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return nil, fmt.Errorf("pgsink: row %s: page, width or height %d out of range", shortID(r.ID), v)
			}
		}
		switch {
		case s.opts.Dimensions > 0 && len(r.Embedding) != s.opts.Dimensions:
			return nil, fmt.Errorf("pgsink: row %s: a vector of %d values, the table's are %d", shortID(r.ID), len(r.Embedding), s.opts.Dimensions)
		case s.opts.Dimensions == 0 && len(r.Embedding) > 0:
			return nil, fmt.Errorf("pgsink: row %s has a single vector, and the sink was opened for multi-vectors only", shortID(r.ID))
		case s.opts.MultiDimensions == 0 && len(r.Vectors) > 0:
			return nil, fmt.Errorf("pgsink: row %s has multi-vectors, and the sink was opened for single vectors only", shortID(r.ID))
		case s.opts.MultiDimensions > 0 && len(r.Vectors) == 0:
			return nil, fmt.Errorf("pgsink: row %s has no multi-vector rows", shortID(r.ID))
		}
		if err := s.checkValues(r.ID, -1, r.Embedding); err != nil {
			return nil, err
		}
		for k, v := range r.Vectors {
			if len(v) != s.opts.MultiDimensions {
				return nil, fmt.Errorf("pgsink: row %s: multi-vector row %d has %d values, the table's %d", shortID(r.ID), k, len(v), s.opts.MultiDimensions)
			}
			if err := s.checkValues(r.ID, k, v); err != nil {
				return nil, err
			}
		}
		last[r.ID] = i
	}
	if len(last) == len(rows) {
		return rows, nil
	}
	kept := make([]index.Row, 0, len(last))
	for i := range rows {
		if last[rows[i].ID] == i {
			kept = append(kept, rows[i])
		}
	}
	return kept, nil
}

// checkValues rejects what pgvector would (NaN, infinities, and for
// halfvec values that round to infinity) with the row named.
func (s *Sink) checkValues(id string, row int, v []float32) error {
	for i, x := range v {
		bad := math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || (s.opts.HalfVec && math.Abs(float64(x)) >= halfMax)
		if !bad {
			continue
		}
		where := fmt.Sprintf("value %d", i)
		if row >= 0 {
			where = fmt.Sprintf("multi-vector row %d value %d", row, i)
		}
		if s.opts.HalfVec {
			return fmt.Errorf("pgsink: row %s: %s is %v, which halfvec cannot hold", shortID(id), where, x)
		}
		return fmt.Errorf("pgsink: row %s: %s is %v, which vector cannot hold", shortID(id), where, x)
	}
	return nil
}

// rowBytes estimates a row's share of a statement's parameters.
func (s *Sink) rowBytes(r *index.Row) int {
	return 64 + len(r.ID) + len(r.Path) + len(r.SHA256) + len(r.Model) + len(r.Text) + s.vectorBytes(len(r.Embedding))
}

// vectorBytes is a vector's size on the wire.
func (s *Sink) vectorBytes(n int) int {
	if s.opts.HalfVec {
		return 8 + 2*n
	}
	return 8 + 4*n
}

// upsertBatch writes one statement's worth of items, then replaces their
// multi-vector rows.
func (s *Sink) upsertBatch(ctx context.Context, tx pgx.Tx, rows []index.Row) error {
	n := len(rows)
	ids, paths, shas, models, texts := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	pages, widths, heights := make([]int32, n), make([]int32, n), make([]int32, n)
	for i, r := range rows {
		ids[i], paths[i], shas[i], models[i], texts[i] = r.ID, cleanText(r.Path), cleanText(r.SHA256), cleanText(r.Model), cleanText(r.Text)
		pages[i], widths[i], heights[i] = int32(r.Page), int32(r.Width), int32(r.Height)
	}
	args := []any{ids, paths, pages, shas, models, widths, heights, texts}
	if s.opts.Dimensions > 0 {
		args = append(args, s.vectors(len(rows), func(i int) []float32 { return rows[i].Embedding }))
	}
	if _, err := tx.Exec(ctx, s.upsert, args...); err != nil {
		return batchError(err, "pgsink: upsert %d rows into %s (first id %s)", n, s.table.Sanitize(), shortID(ids[0]))
	}
	if s.opts.MultiDimensions == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, "delete from "+s.child.Sanitize()+" where id = any($1::text[])", ids); err != nil {
		return batchError(err, "pgsink: replace the multi-vector rows of %d items in %s (first id %s)", n, s.child.Sanitize(), shortID(ids[0]))
	}
	insert := fmt.Sprintf("insert into %s (id, row_index, embedding)\nselect * from unnest($1::text[], $2::integer[], $3::%s[])", s.child.Sanitize(), s.vecTyp)
	// The child rows of the batch, flattened, in statements bounded like
	// the items' (one item's rows may span several).
	var cids []string
	var crows []int32
	var cvecs [][]float32
	flush := func() error {
		if len(cids) == 0 {
			return nil
		}
		vecs := s.vectors(len(cvecs), func(i int) []float32 { return cvecs[i] })
		if _, err := tx.Exec(ctx, insert, cids, crows, vecs); err != nil {
			return batchError(err, "pgsink: insert %d multi-vector rows into %s (first id %s)", len(cids), s.child.Sanitize(), shortID(cids[0]))
		}
		cids, crows, cvecs = cids[:0], crows[:0], cvecs[:0]
		return nil
	}
	per := 80 + s.vectorBytes(s.opts.MultiDimensions)
	limit := max(1, min(maxStatementRows*16, maxStatementBytes/per))
	for _, r := range rows {
		for k, v := range r.Vectors {
			if len(cids) == limit {
				if err := flush(); err != nil {
					return err
				}
			}
			cids, crows, cvecs = append(cids, r.ID), append(crows, int32(k)), append(cvecs, v)
		}
	}
	return flush()
}

// vectors wraps n float32 slices in pgvector-go's type for the column.
func (s *Sink) vectors(n int, at func(i int) []float32) any {
	if s.opts.HalfVec {
		out := make([]pgvector.HalfVector, n)
		for i := range out {
			out[i] = pgvector.NewHalfVector(at(i))
		}
		return out
	}
	out := make([]pgvector.Vector, n)
	for i := range out {
		out[i] = pgvector.NewVector(at(i))
	}
	return out
}

// maxCauseBytes bounds the driver's or the server's words kept in a batch
// error: pgx's encoding errors print every parameter (a batch's vectors,
// hundreds of kilobytes), and a server message may quote a value.
const maxCauseBytes = 160

// causeError is a statement's error: the sink's own words (operation,
// table, row count, first id) and the cause cut to maxCauseBytes, the
// cause kept whole for errors.Is and errors.As.
type causeError struct {
	msg   string
	cause error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.cause }

// batchError words a failed statement over a batch: format and args name
// it, and of the cause a server error gives its code and message (never
// its detail, which quotes rows), anything else its first words.
func batchError(cause error, format string, args ...any) error {
	why := cause.Error()
	var pe *pgconn.PgError
	if errors.As(cause, &pe) {
		why = pe.Severity + " " + pe.Code + ": " + pe.Message
	}
	return &causeError{msg: fmt.Sprintf(format, args...) + ": " + clip.String(why, maxCauseBytes), cause: cause}
}

// shortID quotes an item's ID for a message, cut to a hash's length:
// record IDs come from the input and may be long.
func shortID(id string) string { return clip.Quote(id, 80) }

// cleanText makes s storable as PostgreSQL text.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// Delete removes the items with these IDs (and their multi-vector rows),
// in one transaction; IDs not present are ignored.
func (s *Sink) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return batchError(err, "pgsink: delete %d rows from %s: begin", len(ids), s.table.Sanitize())
	}
	defer tx.Rollback(ctx)
	stmt := "delete from " + s.table.Sanitize() + " where id = any($1::text[])"
	for start := 0; start < len(ids); start += maxDeleteIDs {
		batch := make([]string, 0, min(maxDeleteIDs, len(ids)-start))
		for _, id := range ids[start:min(start+maxDeleteIDs, len(ids))] {
			// An ID PostgreSQL cannot hold cannot be in the table.
			if utf8.ValidString(id) && !strings.ContainsRune(id, 0) {
				batch = append(batch, id)
			}
		}
		if _, err := tx.Exec(ctx, stmt, batch); err != nil {
			return batchError(err, "pgsink: delete %d rows from %s", len(batch), s.table.Sanitize())
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return batchError(err, "pgsink: delete %d rows from %s: commit", len(ids), s.table.Sanitize())
	}
	return nil
}

// Close closes the connection pool, waiting for connections in use.
func (s *Sink) Close() error {
	s.pool.Close()
	return nil
}
