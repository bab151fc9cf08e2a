package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/internal/pngbomb"
)

// hostileClient bounds every call: a hang is a failure, not a stuck test.
var hostileClient = &http.Client{Timeout: 30 * time.Second}

// sendHostile posts body and fails unless the answer is a 200 or a 4xx
// whose JSON error says what is wrong; it returns the status and body.
func sendHostile(t *testing.T, url, name string, body []byte) (int, string) {
	t.Helper()
	start := time.Now()
	resp, err := hostileClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 && resp.StatusCode/100 != 4 {
		t.Errorf("%s: status %d %.300s", name, resp.StatusCode, b)
	}
	if resp.StatusCode/100 == 4 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
			t.Errorf("%s: %d without a JSON error message: %.300s", name, resp.StatusCode, b)
		}
	}
	t.Logf("%s: %d in %v: %.160s", name, resp.StatusCode, time.Since(start).Round(time.Millisecond), b)
	return resp.StatusCode, string(b)
}

func heapMB() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc >> 20
}

// TestHostileCohere sends /v2/embed and /v2/rerank what a hostile or
// broken client would, over real HTTP on the demo model: every answer is
// a 200 or a 4xx with a JSON error, within the client's timeout, and the
// heap returns near where it was. It found duplicate keys taken silently
// (the last one won) and lists of a million inputs parsed item by item
// before the count was refused (3 M texts: 6.7 s).
func TestHostileCohere(t *testing.T) {
	url := tinyServer(t)
	embed, rerank := url+"/v2/embed", url+"/v2/rerank"
	big := func(prefix, item, suffix string, n int) []byte {
		var b bytes.Buffer
		b.WriteString(prefix)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(item)
		}
		b.WriteString(suffix)
		return b.Bytes()
	}
	// A 2048x2048 16-bit bomb (32 MiB decoded) twice, in different bytes:
	// the image budget bounds what is decoded at once (the 512 MiB ones
	// are cmd/vembed's serve bomb test).
	bombPNG := pngbomb.Make(2048, 2048)
	var bombs []string
	for i := range 2 {
		bombs = append(bombs, `"data:image/png;base64,`+base64.StdEncoding.EncodeToString(pngbomb.Tag(bombPNG, fmt.Sprint(i)))+`"`)
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	before := heapMB()
	cases := []struct {
		name, url string
		body      []byte
	}{
		{"texts 1M", embed, big(`{"texts":[`, `"a"`, `]}`, 1_000_000)},
		{"inputs 1M", embed, big(`{"inputs":[`, `"a"`, `]}`, 1_000_000)},
		{"texts 3000", embed, big(`{"texts":[`, `"a"`, `]}`, 3000)},
		{"output_dimension huge", embed, []byte(`{"texts":["a"],"output_dimension":9223372036854775807}`)},
		{"output_dimension overflow", embed, []byte(`{"texts":["a"],"output_dimension":99999999999999999999}`)},
		{"output_dimension 1e308", embed, []byte(`{"texts":["a"],"output_dimension":1e308}`)},
		{"output_dimension -1", embed, []byte(`{"texts":["a"],"output_dimension":-1}`)},
		{"output_dimension 1.5", embed, []byte(`{"texts":["a"],"output_dimension":1.5}`)},
		{"output_dimension string", embed, []byte(`{"texts":["a"],"output_dimension":"8"}`)},
		{"max_tokens -1", embed, []byte(`{"texts":["a"],"max_tokens":-1}`)},
		{"max_tokens float", embed, []byte(`{"texts":["a"],"max_tokens":2.5}`)},
		{"max_tokens string", embed, []byte(`{"texts":["a"],"max_tokens":"3"}`)},
		{"max_tokens huge", embed, []byte(`{"texts":["a"],"max_tokens":9223372036854775807}`)},
		{"max_tokens 1", embed, []byte(`{"texts":["a b c d"],"max_tokens":1}`)},
		{"max_tokens 1 START", embed, []byte(`{"texts":["a b c d"],"max_tokens":1,"truncate":"START"}`)},
		{"priority string", embed, []byte(`{"texts":["a"],"priority":"high"}`)},
		{"types dup", embed, []byte(`{"texts":["a"],"embedding_types":["int8","int8","float","int8"]}`)},
		{"types unknown", embed, []byte(`{"texts":["a"],"embedding_types":["int8","x"]}`)},
		{"types empty", embed, []byte(`{"texts":["a"],"embedding_types":[]}`)},
		{"types null item", embed, []byte(`{"texts":["a"],"embedding_types":[null]}`)},
		{"types string", embed, []byte(`{"texts":["a"],"embedding_types":"int8"}`)},
		{"types 1M", embed, big(`{"texts":["a"],"embedding_types":[`, `"int8"`, `]}`, 1_000_000)},
		{"image not uri", embed, []byte(`{"images":["hello"]}`)},
		{"image http", embed, []byte(`{"images":["http://127.0.0.1:1/x.png"]}`)},
		{"image text data", embed, []byte(`{"images":["data:text/plain;base64,aGk="]}`)},
		{"image bad base64", embed, []byte(`{"images":["data:image/png;base64,!!!!"]}`)},
		{"image bombs", embed, []byte(`{"images":[` + strings.Join(bombs, ",") + `]}`)},
		{"deep texts", embed, []byte(`{"texts":` + deep + `}`)},
		{"deep inputs", embed, []byte(`{"inputs":` + deep + `}`)},
		{"deep content", embed, []byte(`{"inputs":[{"content":` + deep + `}]}`)},
		{"invalid utf8", embed, []byte("{\"texts\":[\"a\xff\"]}")},
		{"invalid utf8 key", embed, []byte("{\"te\xffxts\":[\"a\"]}")},
		{"dup texts", embed, []byte(`{"texts":["a"],"texts":["b"]}`)},
		{"dup case", embed, []byte(`{"texts":["a"],"Texts":["b"]}`)},
		{"dup escaped", embed, []byte(`{"texts":["a"],"\u0074exts":["b"]}`)},
		{"docs 100k", rerank, big(`{"query":"q","documents":[`, `"d"`, `]}`, 100_000)},
		{"top_n beyond", rerank, []byte(`{"query":"q","documents":["a","b"],"top_n":100}`)},
		{"top_n huge", rerank, []byte(`{"query":"q","documents":["a","b"],"top_n":9223372036854775807}`)},
		{"top_n -1", rerank, []byte(`{"query":"q","documents":["a","b"],"top_n":-1}`)},
		{"top_n float", rerank, []byte(`{"query":"q","documents":["a","b"],"top_n":1.5}`)},
		{"max_tokens_per_doc 0", rerank, []byte(`{"query":"q","documents":["a","b"],"max_tokens_per_doc":0}`)},
		{"max_tokens_per_doc -5", rerank, []byte(`{"query":"q","documents":["a","b"],"max_tokens_per_doc":-5}`)},
		{"max_tokens_per_doc 1", rerank, []byte(`{"query":"q","documents":["a b c","b"],"max_tokens_per_doc":1}`)},
		{"max_tokens_per_doc huge", rerank, []byte(`{"query":"q","documents":["a b c","b"],"max_tokens_per_doc":9223372036854775807}`)},
		{"rerank deep", rerank, []byte(`{"query":"q","documents":` + deep + `}`)},
		{"rerank dup", rerank, []byte(`{"query":"q","query":"r","documents":["a"]}`)},
		{"rerank query empty", rerank, []byte(`{"query":"","documents":["a"]}`)},
		{"rerank doc empty", rerank, []byte(`{"query":"q","documents":["a",""]}`)},
	}
	// What must be refused (the rest may also be answered).
	refused := map[string]bool{"texts 1M": true, "inputs 1M": true, "texts 3000": true, "dup texts": true, "dup case": true,
		"dup escaped": true, "rerank dup": true, "docs 100k": true, "types unknown": true, "types empty": true,
		"output_dimension huge": true, "output_dimension -1": true, "output_dimension 1.5": true, "max_tokens -1": true,
		"top_n -1": true, "max_tokens_per_doc 0": true, "max_tokens_per_doc -5": true, "deep texts": true, "invalid utf8": true}
	for _, c := range cases {
		if status, _ := sendHostile(t, c.url, c.name, c.body); refused[c.name] && status/100 != 4 {
			t.Errorf("%s: answered %d, want a refusal", c.name, status)
		}
	}
	t.Logf("heap %d MB before, %d MB after", before, heapMB())
}

// TestSlowClients: a hundred clients that declare large bodies and send
// them a byte at a time hold a connection each and little memory, and the
// server answers other requests meanwhile.
func TestSlowClients(t *testing.T) {
	url := tinyServer(t)
	host := strings.TrimPrefix(url, "http://")
	before := heapMB()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 100 {
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /v2/embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000000\r\n\r\n{\"texts\":[\"")
	}
	for round := range 3 {
		for _, c := range conns {
			c.Write([]byte("a"))
		}
		status, body := sendHostile(t, url+"/v2/embed", fmt.Sprintf("normal request %d", round), []byte(`{"texts":["alpha"]}`))
		if status != 200 {
			t.Fatalf("with 100 slow clients: %d %s", status, body)
		}
	}
	// Each holds its first 16 KiB buffer, not its declared 60 MB.
	if after := heapMB(); after > before+64 {
		t.Errorf("heap grew from %d to %d MB with 100 slow clients", before, after)
	}
}
