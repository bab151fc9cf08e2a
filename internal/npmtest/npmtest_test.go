package npmtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"
)

// TestPGlite checks that the served database answers pgx with pgvector:
// the extension installs and cosine distance orders vectors.
func TestPGlite(t *testing.T) {
	url := StartPGlite(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		"create extension if not exists vector",
		"create table t (id int primary key, v vector(3))",
		"insert into t values (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[1,1,0]')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.Query(ctx, "select id from t order by v <=> '[1,0.1,0]' limit 3")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 3 || ids[2] != 2 {
		t.Fatalf("cosine order %v, want [1 3 2]", ids)
	}
}

// TestPGliteReconnect checks that a client may close its connection and
// open the next at once (pools replace connections so).
func TestPGliteReconnect(t *testing.T) {
	url := StartPGlite(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 5 {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		var n int
		if err := conn.QueryRow(ctx, "select $1::int + 1", i).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("connection %d: %d, %v", i, n, err)
		}
		conn.Close(ctx)
	}
}

type parquetRow struct {
	ID        string    `parquet:"id"`
	Page      int32     `parquet:"page"`
	Embedding []float32 `parquet:"embedding,list"`
}

// TestDuckDB checks that DuckDB reads a Parquet file written by
// parquet-go, float32 lists exactly, and that a bad query is an error.
func TestDuckDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.parquet")
	want := []parquetRow{
		{ID: "a", Page: 1, Embedding: []float32{0.1, -2.5e-8, 3}},
		{ID: "b", Page: 2, Embedding: []float32{1e30, 0, -0.333333}},
	}
	if err := parquet.WriteFile(path, want); err != nil {
		t.Fatal(err)
	}
	rows := DuckDB(t, "select id, page, embedding from read_parquet('"+path+"') order by id")
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %v", len(rows), len(want), rows)
	}
	for i, r := range rows {
		if r["id"] != want[i].ID || r["page"] != float64(want[i].Page) {
			t.Errorf("row %d: %v, want %+v", i, r, want[i])
		}
		emb, _ := r["embedding"].([]any)
		if len(emb) != len(want[i].Embedding) {
			t.Fatalf("row %d: embedding %v, want %v", i, r["embedding"], want[i].Embedding)
		}
		for k, v := range emb {
			if f, ok := v.(float64); !ok || float32(f) != want[i].Embedding[k] {
				t.Errorf("row %d value %d: %v, want %v", i, k, v, want[i].Embedding[k])
			}
		}
	}
	if _, err := QueryDuckDB(t, "select * from read_parquet('"+filepath.Join(t.TempDir(), "absent.parquet")+"')"); err == nil || !strings.Contains(err.Error(), "absent.parquet") {
		t.Fatalf("a missing file: %v, want an error naming it", err)
	}
}
