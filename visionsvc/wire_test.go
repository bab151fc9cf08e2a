package visionsvc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/vembed/vembed/model"
)

func testRequest() Request {
	return Request{Kind: KindPatches, Vision: Key{1, 2, 3}, Items: []Item{
		{Key: Key{9}, GridT: 1, GridH: 2, GridW: 2, Patches: []float32{1, -2, float32(math.Inf(1)), 0.5}},
		{Key: Key{8}, GridT: 1, GridH: 4, GridW: 2, Patches: []float32{3}},
	}}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, req := range []Request{testRequest(), {Kind: KindKeys, Items: []Item{{Key: Key{7}, GridT: 1, GridH: 2, GridW: 2}}}} {
		got, err := DecodeRequest(AppendRequest(nil, req))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("got %+v, want %+v", got, req)
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	res := []Result{{}, {Found: true, Image: model.EncodedImage{Rows: []float32{1, 2}, Deep: [][]float32{{3}, {4, 5}}}}, {Found: true, Image: model.EncodedImage{Rows: []float32{6}}}}
	got, err := DecodeResponse(AppendResponse(nil, res), len(res))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(res) {
		t.Errorf("got %v, want %v", got, res)
	}
	if _, err := DecodeResponse(AppendResponse(nil, res), 2); !errors.Is(err, ErrFormat) {
		t.Errorf("a count mismatch decoded: %v", err)
	}
}

// TestDecodeRefuses: every malformed frame is an error naming what is
// wrong, and none makes the decoder allocate what the frame claims.
func TestDecodeRefuses(t *testing.T) {
	good := AppendRequest(nil, testRequest())
	huge := AppendRequest(nil, Request{Kind: KindKeys, Items: []Item{{GridT: 1, GridH: 1, GridW: 1}}})
	huge[34] = 0xff // item count 255 with one item's bytes
	claim := bytes.Clone(good)
	claim[34+4+32+12+3] = 0x7f // patch count 2^31-ish
	keysWithPatches := bytes.Clone(good)
	keysWithPatches[1] = KindKeys
	cases := map[string][]byte{
		"empty":               nil,
		"version":             append([]byte{2}, good[1:]...),
		"kind":                append([]byte{1, 'X'}, good[2:]...),
		"truncated":           good[:len(good)-1],
		"trailing":            append(bytes.Clone(good), 0),
		"count over body":     huge,
		"patch count claim":   claim,
		"keys with patches":   keysWithPatches,
		"zero grid":           AppendRequest(nil, Request{Kind: KindKeys, Items: []Item{{GridT: 0, GridH: 1, GridW: 1}}}),
		"grid over max":       AppendRequest(nil, Request{Kind: KindKeys, Items: []Item{{GridT: 1, GridH: MaxGrid + 1, GridW: 1}}}),
		"patches frame, none": AppendRequest(nil, Request{Kind: KindPatches, Items: []Item{{GridT: 1, GridH: 1, GridW: 1}}}),
		"no items":            AppendRequest(nil, Request{Kind: KindKeys}),
	}
	for name, b := range cases {
		if _, err := DecodeRequest(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeEncoded([]byte{200, 0, 0, 0, 0, 0, 0, 0}); !errors.Is(err, ErrFormat) {
		t.Errorf("200 deepstack sets decoded: %v", err)
	}
}

func TestReadRequest(t *testing.T) {
	frame := AppendRequest(nil, testRequest())
	enc, _ := zstd.NewWriter(nil)
	z := enc.EncodeAll(frame, nil)
	if _, err := ReadRequest(bytes.NewReader(z), "zstd", 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRequest(bytes.NewReader(frame), "", 1<<20); err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if _, err := ReadRequest(bytes.NewReader(z), "zstd", int64(len(frame)-1)); !errors.As(err, &tl) {
		t.Errorf("a frame decompressing past the limit: %v", err)
	}
	if _, err := ReadRequest(bytes.NewReader(frame), "", int64(len(frame)-1)); !errors.As(err, &tl) {
		t.Errorf("a body past the limit: %v", err)
	}
	// A small body that decompresses to far more than the limit.
	bomb := enc.EncodeAll(make([]byte, 64<<20), nil)
	if _, err := ReadRequest(bytes.NewReader(bomb), "zstd", 1<<20); !errors.As(err, &tl) {
		t.Errorf("a zstd bomb: %v", err)
	}
	if _, err := ReadRequest(bytes.NewReader(frame), "gzip", 1<<20); !errors.Is(err, ErrFormat) {
		t.Errorf("gzip accepted: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add(AppendRequest(nil, testRequest()))
	f.Add(AppendRequest(nil, Request{Kind: KindKeys, Items: []Item{{GridT: 1, GridH: 2, GridW: 2}}}))
	f.Add(AppendResponse(nil, []Result{{}, {Found: true, Image: model.EncodedImage{Rows: []float32{1}, Deep: [][]float32{{2}}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := DecodeRequest(b); err == nil {
			// What decodes encodes back to the same bytes.
			if again := AppendRequest(nil, req); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs")
			}
		}
		for n := range 3 {
			if res, err := DecodeResponse(b, n); err == nil && len(res) != n {
				t.Fatalf("%d results for %d", len(res), n)
			}
		}
		DecodeEncoded(b)
	})
}
