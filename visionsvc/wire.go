// Package visionsvc is the protocol between a language-model replica and a
// vision encoder replica (vembed serve --role encoder): images go in as
// content keys, or as preprocessed patches when the encoder does not know
// the key, and come back as merger rows (plus DeepStack rows for models
// that have them). It holds the wire format, the client that spreads
// calls over encoder replicas with health and backoff, and the codec of
// an encoded image that the shared cache uses too.
//
// # Wire format, version 1
//
// One route, POST /v1/vision/encode. The request body has the media type
// application/x-vembed-vision and may be sent with "Content-Encoding:
// zstd" (the client compresses frames that carry patches). All integers
// are little-endian.
//
//	request  = version:u8 (1) kind:u8 vision:[32]byte count:u32 item*count
//	kind     = 'K' (keys only: answer what you already hold)
//	         | 'P' (patches: encode what you do not hold)
//	item     = key:[32]byte gridT:u32 gridH:u32 gridW:u32 n:u32 patch:f32*n
//
// vision is the identity of the caller's vision tower (a digest of its
// file); an encoder serving another one answers 409. key is the image's
// content key (SHA-256 over the vision identity, the grid and the patch
// values), which the encoder checks against the patches before it
// encodes them, so a caller cannot plant rows under another image's key.
// In a 'K' frame every n is 0; in a 'P' frame n is gridT·gridH·gridW times
// the model's values per patch.
//
//	response = version:u8 (1) count:u32 result*count   (one per item, in order)
//	result   = 0:u8                      (not held; only in answers to 'K')
//	         | 1:u8 encoded
//	encoded  = deep:u32 rows:list list*deep
//	list     = n:u32 value:f32*n
//
// Errors are JSON bodies of the server's usual error shape with a non-200
// status: 400 for a malformed frame or patches that do not match their
// key, 409 for another vision tower, 413 for an oversized body, 429 and
// 503 when the encoder is overloaded or shutting down. Every length is
// checked against the bytes that remain before anything is allocated.
package visionsvc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vembed/vembed/model"
)

// Version is the wire format's version byte.
const Version = 1

// Frame kinds.
const (
	KindKeys    = 'K' // content keys only
	KindPatches = 'P' // content keys with their patches
)

// MediaType is the Content-Type of request frames.
const MediaType = "application/x-vembed-vision"

// Path is the encoder's route.
const Path = "/v1/vision/encode"

// Limits a decoder enforces whatever the frame claims.
const (
	MaxItems = 1024    // items in one frame
	MaxGrid  = 1 << 12 // patches along one side of an image's grid
	MaxDeep  = 64      // DeepStack row sets of one image
)

// Key is an image's content key.
type Key = [32]byte

// Item is one image of a request.
type Item struct {
	Key                 Key
	GridT, GridH, GridW int
	Patches             []float32 // nil in a keys-only frame
}

// Request is a decoded request frame.
type Request struct {
	Kind   byte
	Vision Key
	Items  []Item
}

// Result is the answer for one item: its encoder output, or Found false
// when a keys-only request named an image the encoder does not hold.
type Result struct {
	Found bool
	Image model.EncodedImage
}

// ErrFormat is wrapped by every decoding error.
var ErrFormat = errors.New("visionsvc: malformed frame")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// AppendRequest appends the frame of req to b.
func AppendRequest(b []byte, req Request) []byte {
	b = append(b, Version, req.Kind)
	b = append(b, req.Vision[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(req.Items)))
	for _, it := range req.Items {
		b = append(b, it.Key[:]...)
		for _, v := range []int{it.GridT, it.GridH, it.GridW} {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		b = appendList(b, it.Patches)
	}
	return b
}

// reader takes fields off a frame, checking each length against what
// remains.
type reader struct {
	b   []byte
	err error
}

func (r *reader) u32(what string) uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.err = formatErr("%s: %d bytes left, need 4", what, len(r.b))
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) bytes(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = formatErr("%s: %d bytes left, need %d", what, len(r.b), n)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// list reads a count and that many float32 values.
func (r *reader) list(what string) []float32 {
	n := r.u32(what)
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)/4) {
		r.err = formatErr("%s: %d values claimed, %d bytes left", what, n, len(r.b))
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.b[4*i:]))
	}
	r.b = r.b[4*n:]
	return v
}

func appendList(b []byte, v []float32) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// DecodeRequest parses a request frame.
func DecodeRequest(b []byte) (Request, error) {
	var req Request
	r := &reader{b: b}
	head := r.bytes("header", 2)
	if r.err != nil {
		return req, r.err
	}
	if head[0] != Version {
		return req, formatErr("version %d, this server speaks %d", head[0], Version)
	}
	req.Kind = head[1]
	if req.Kind != KindKeys && req.Kind != KindPatches {
		return req, formatErr("unknown frame kind %q", req.Kind)
	}
	copy(req.Vision[:], r.bytes("vision identity", 32))
	n := r.u32("item count")
	if r.err != nil {
		return req, r.err
	}
	// An item takes at least 48 bytes, so a count the body cannot hold
	// is refused before anything is allocated for it.
	if n == 0 || n > MaxItems || uint64(n) > uint64(len(r.b)/48) {
		return req, formatErr("item count %d (1..%d, and the body holds at most %d)", n, MaxItems, len(r.b)/48)
	}
	req.Items = make([]Item, n)
	for i := range req.Items {
		it := &req.Items[i]
		copy(it.Key[:], r.bytes("key", 32))
		it.GridT, it.GridH, it.GridW = int(r.u32("grid")), int(r.u32("grid")), int(r.u32("grid"))
		it.Patches = r.list("patches")
		if r.err != nil {
			return req, fmt.Errorf("item %d: %w", i, r.err)
		}
		for _, g := range []int{it.GridT, it.GridH, it.GridW} {
			if g < 1 || g > MaxGrid {
				return req, formatErr("item %d: grid %dx%dx%d out of range 1..%d", i, it.GridT, it.GridH, it.GridW, MaxGrid)
			}
		}
		switch {
		case req.Kind == KindKeys && len(it.Patches) > 0:
			return req, formatErr("item %d: %d patch values in a keys-only frame", i, len(it.Patches))
		case req.Kind == KindKeys:
			it.Patches = nil
		case len(it.Patches) == 0:
			return req, formatErr("item %d: no patches in a patches frame", i)
		}
	}
	if len(r.b) != 0 {
		return req, formatErr("%d bytes after the last item", len(r.b))
	}
	return req, nil
}

// AppendResponse appends the response frame of results to b.
func AppendResponse(b []byte, results []Result) []byte {
	b = append(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(results)))
	for _, res := range results {
		if !res.Found {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = AppendEncoded(b, res.Image)
	}
	return b
}

// DecodeResponse parses a response frame that must hold want results.
func DecodeResponse(b []byte, want int) ([]Result, error) {
	r := &reader{b: b}
	head := r.bytes("header", 1)
	if r.err != nil {
		return nil, r.err
	}
	if head[0] != Version {
		return nil, formatErr("version %d, this client speaks %d", head[0], Version)
	}
	if n := r.u32("result count"); r.err != nil || int64(n) != int64(want) {
		if r.err != nil {
			return nil, r.err
		}
		return nil, formatErr("%d results for %d items", n, want)
	}
	out := make([]Result, want)
	for i := range out {
		tag := r.bytes("result tag", 1)
		if r.err != nil {
			return nil, r.err
		}
		switch tag[0] {
		case 0:
		case 1:
			out[i].Found = true
			out[i].Image = r.encoded()
		default:
			return nil, formatErr("result %d: tag %d", i, tag[0])
		}
		if r.err != nil {
			return nil, fmt.Errorf("result %d: %w", i, r.err)
		}
	}
	if len(r.b) != 0 {
		return nil, formatErr("%d bytes after the last result", len(r.b))
	}
	return out, nil
}

// AppendEncoded appends an image's encoder output: the number of DeepStack
// row sets, the rows, then each set, every list as a count and its
// values.
func AppendEncoded(b []byte, e model.EncodedImage) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(e.Deep)))
	b = appendList(b, e.Rows)
	for _, d := range e.Deep {
		b = appendList(b, d)
	}
	return b
}

func (r *reader) encoded() model.EncodedImage {
	var e model.EncodedImage
	deep := r.u32("deepstack count")
	if r.err == nil && deep > MaxDeep {
		r.err = formatErr("%d deepstack row sets, at most %d", deep, MaxDeep)
	}
	e.Rows = r.list("rows")
	for i := uint32(0); i < deep && r.err == nil; i++ {
		e.Deep = append(e.Deep, r.list("deepstack rows"))
	}
	return e
}

// DecodeEncoded parses what AppendEncoded wrote, and nothing after it.
func DecodeEncoded(b []byte) (model.EncodedImage, error) {
	r := &reader{b: b}
	e := r.encoded()
	if r.err == nil && len(r.b) != 0 {
		r.err = formatErr("%d bytes after the encoded image", len(r.b))
	}
	return e, r.err
}
