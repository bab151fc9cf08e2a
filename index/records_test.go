package index

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func TestReadJSONL(t *testing.T) {
	in := `{"id": "a", "text": "hello"}

{"_id": 7, "image": "pics/x.png", "text": "both"}
{"id": "b", "image": "data:image/png;base64,iVBORw0KGgo="}
{"id": "c"}
[1, 2]
{"id": {"x": 1}, "text": "t"}
{"id": "d", "text": 5}
` + `{"id": "e", "text": "` + strings.Repeat("x", 100) + `"}`
	var recs []Record
	var bad []int
	err := ReadJSONL(strings.NewReader(in), func(r Record) error { recs = append(recs, r); return nil }, func(n int, err error) { bad = append(bad, n) })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].ID != "a" || recs[1].ID != "7" || recs[1].ImagePath != "pics/x.png" || recs[1].N != 3 ||
		string(recs[2].Image[:4]) != "\x89PNG" || recs[3].ID != "e" || recs[3].N != 9 {
		t.Fatalf("records %+v", recs)
	}
	if len(bad) != 4 || bad[0] != 5 || bad[3] != 8 {
		t.Fatalf("bad lines %v", bad)
	}
	stop := errors.New("stop")
	if err := ReadJSONL(strings.NewReader(in), func(Record) error { return stop }, func(int, error) {}); !errors.Is(err, stop) {
		t.Fatalf("fn's error: %v", err)
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"id": "a", "text": "hello"}` + "\n" + `{"id": 1, "image": "x.png"}`))
	f.Add([]byte("{\"id\":\"x\",\"image\":\"data:image/png;base64,AAAA\"}\r\n\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ReadJSONL(bytes.NewReader(data), func(r Record) error {
			if checkRecord(r) != nil {
				t.Fatalf("a bad record passed: %+v", r)
			}
			return nil
		}, func(int, error) {})
	})
}

type tableRec struct {
	ID    string `parquet:"id"`
	Text  string `parquet:"text,optional"`
	Image []byte `parquet:"image,optional"`
}

func parquetBytes(t testing.TB, rows []tableRec) []byte {
	var b bytes.Buffer
	w := parquet.NewGenericWriter[tableRec](&b)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadParquetRecords(t *testing.T) {
	data := parquetBytes(t, []tableRec{{ID: "a", Text: "one"}, {ID: "b", Image: []byte("img")}, {ID: "", Text: "no id"}, {ID: "c"}})
	var recs []Record
	var bad []int
	err := readParquetFrom(bytes.NewReader(data), int64(len(data)), func(r Record) error { recs = append(recs, r); return nil }, func(n int, err error) { bad = append(bad, n) })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Text != "one" || string(recs[1].Image) != "img" || recs[1].N != 2 || len(bad) != 2 || bad[0] != 3 {
		t.Fatalf("records %+v bad %v", recs, bad)
	}
	for _, cut := range []int{0, 4, 11, len(data) / 2, len(data) - 1} {
		if err := readParquetFrom(bytes.NewReader(data[:cut]), int64(cut), func(Record) error { return nil }, func(int, error) {}); err == nil {
			t.Errorf("a file cut to %d bytes read without error", cut)
		}
	}
}

func FuzzReadParquet(f *testing.F) {
	f.Add(parquetBytes(f, []tableRec{{ID: "a", Text: "one"}, {ID: "b", Image: []byte("img")}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		readParquetFrom(bytes.NewReader(data), int64(len(data)), func(r Record) error {
			if checkRecord(r) != nil {
				t.Fatalf("a bad record passed: %+v", r)
			}
			return nil
		}, func(int, error) {})
	})
}
